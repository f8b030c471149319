//! What a start over HTTP says of a refused redirect. The policy is
//! `dsh-http`'s ([`dsh_http::same_origin_only`]): a redirect within the
//! origin of the server's `url` is followed, one to another origin fails
//! the request. This says why, for a server: a request carries the
//! server's `headers`, its bearer token and the tool calls.

use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

/// Why a start over HTTP failed: the refused redirect, when that is why
/// (rmcp's message says only "error following redirect"), else rmcp's
/// message.
pub(crate) fn described(error: &ClientInitializeError) -> String {
    match refused(error) {
        Some(refused) => format!(
            "{refused}, is not followed: the requests carry the server's headers, token and \
             tool calls; set the server's `url` to the final URL directly"
        ),
        None => error.to_string(),
    }
}

/// The refused redirect that made a start over HTTP fail, if one did.
/// rmcp's errors do not chain their transport's error as a source, so it
/// is dug out of the transport error by its type.
fn refused(error: &ClientInitializeError) -> Option<&dsh_http::CrossOrigin> {
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
    dsh_http::cross_origin(error)
}
