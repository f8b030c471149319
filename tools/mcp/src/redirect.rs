//! Which redirects a request to an MCP server over HTTP follows: those
//! within the origin of the server's `url`, and no other.
//!
//! A request carries the server's `headers`, its bearer token and the
//! tool calls. reqwest follows redirects by default and drops
//! `Authorization` when one leaves the origin, but not the other headers,
//! and never the body: a `307` from the configured URL would send them to
//! whoever it names. So a redirect to another origin fails the start,
//! naming both origins; a server that moved is configured at its new URL.

use reqwest::redirect::{Action, Attempt, Policy};
use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

/// The most redirects one request follows within its origin.
const MAX_REDIRECTS: usize = 5;

/// A redirect to another origin, refused; its message says what to do.
#[derive(Debug, thiserror::Error)]
#[error(
    "a redirect from {from} to {to}, another origin, is not followed: the requests carry the \
     server's headers, token and tool calls; set the server's `url` to the final URL directly"
)]
pub(crate) struct CrossOrigin {
    from: String,
    to: String,
}

/// The redirect policy of [`http_client`](crate::http_client): a redirect
/// within the origin of the request's first URL is followed, up to
/// [`MAX_REDIRECTS`]; one to another origin fails with [`CrossOrigin`].
pub(crate) fn same_origin_only() -> Policy {
    Policy::custom(decide)
}

/// The decision on one redirect.
fn decide(attempt: Attempt<'_>) -> Action {
    // reqwest lists the URLs of the chain so far, the request's own
    // first; without it, the redirect is not followed.
    let Some(first) = attempt.previous().first() else {
        return attempt.stop();
    };
    let (from, to) = (first.origin(), attempt.url().origin());
    if from != to {
        let refused = CrossOrigin {
            from: from.ascii_serialization(),
            // An origin, or the whole URL when it has none (`data:`).
            to: if to.is_tuple() {
                to.ascii_serialization()
            } else {
                attempt.url().to_string()
            },
        };
        return attempt.error(refused);
    }
    if attempt.previous().len() > MAX_REDIRECTS {
        return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
    }
    attempt.follow()
}

/// Why a start over HTTP failed: the refused redirect, when that is why
/// (rmcp's message says only "error following redirect"), else rmcp's
/// message.
pub(crate) fn described(error: &ClientInitializeError) -> String {
    match refused(error) {
        Some(refused) => refused.to_string(),
        None => error.to_string(),
    }
}

/// The refused redirect that made a start over HTTP fail, if one did.
/// rmcp's errors do not chain their transport's error as a source, so it
/// is dug out of the transport error by its type.
fn refused(error: &ClientInitializeError) -> Option<&CrossOrigin> {
    let error = match error {
        ClientInitializeError::TransportError { error, .. } => error,
        ClientInitializeError::LegacyFallbackFailed { discover, fallback } => {
            return refused(discover).or_else(|| refused(fallback));
        }
        _ => return None,
    };
    let http = error
        .error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>()?;
    let StreamableHttpError::Client(error) = http else {
        return None;
    };
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(refused) = cause.downcast_ref::<CrossOrigin>() {
            return Some(refused);
        }
        source = cause.source();
    }
    None
}
