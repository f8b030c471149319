//! Which redirects a request to a model server follows: those within the
//! origin of its configured URL, and no other.
//!
//! A request carries the API key and the whole conversation. reqwest
//! follows redirects by default and drops `Authorization` when one leaves
//! the origin, but not `x-api-key` (Anthropic's), and never the body: a
//! `307` from the configured URL would send both to whoever it names. So
//! a redirect to another origin fails the request, naming both origins;
//! a server that moved is configured at its new URL.

use reqwest::Url;
use reqwest::redirect::{Attempt, Policy};

/// The most redirects one request follows within its origin.
pub(crate) const MAX_REDIRECTS: usize = 5;

/// A redirect to another origin, refused.
#[derive(Debug, thiserror::Error)]
#[error("a redirect from {from} to {to}, another origin")]
pub(crate) struct CrossOrigin {
    /// The origin of the URL the request was sent to
    /// (`http://127.0.0.1:8080`).
    pub(crate) from: String,
    /// Where the redirect points: its origin, or the whole URL when it
    /// has none (a `data:` URL).
    pub(crate) to: String,
}

/// More redirects within the origin than [`MAX_REDIRECTS`].
#[derive(Debug, thiserror::Error)]
#[error("more than {MAX_REDIRECTS} redirects")]
pub(crate) struct TooManyRedirects;

/// The redirect policy of the adapters' client: a redirect within the
/// origin of the request's first URL is followed, up to
/// [`MAX_REDIRECTS`]; one to another origin fails with [`CrossOrigin`].
pub(crate) fn same_origin_only() -> Policy {
    Policy::custom(decide)
}

/// The decision on one redirect.
fn decide(attempt: Attempt<'_>) -> reqwest::redirect::Action {
    // reqwest lists the URLs of the chain so far, the request's own
    // first; without it, the redirect is not followed (its status is
    // the answer).
    let Some(first) = attempt.previous().first() else {
        return attempt.stop();
    };
    if first.origin() != attempt.url().origin() {
        let refused = CrossOrigin {
            from: origin(first),
            to: origin(attempt.url()),
        };
        return attempt.error(refused);
    }
    if attempt.previous().len() > MAX_REDIRECTS {
        return attempt.error(TooManyRedirects);
    }
    attempt.follow()
}

/// `url`'s origin as a browser writes it (`https://api.example.com`),
/// or the URL itself when it has none.
fn origin(url: &Url) -> String {
    let origin = url.origin();
    if origin.is_tuple() {
        origin.ascii_serialization()
    } else {
        url.to_string()
    }
}

/// The refused redirect behind `error`, if a redirect to another origin
/// is why it failed.
pub(crate) fn cross_origin(error: &reqwest::Error) -> Option<&CrossOrigin> {
    if !error.is_redirect() {
        return None;
    }
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(refused) = cause.downcast_ref::<CrossOrigin>() {
            return Some(refused);
        }
        source = cause.source();
    }
    None
}
