//! Which redirects a request follows: those within the origin of its
//! first URL, and no other.
//!
//! A request of dsh's carries a secret (an API key, a server's headers or
//! token) and what the person is doing (the conversation, the tool
//! calls). reqwest follows redirects by default and drops `Authorization`
//! when one leaves the origin, but not the other headers (`x-api-key`, a
//! server's `headers`), and never the body: a `307` from the configured
//! URL would send both to whoever it names. So a redirect to another
//! origin fails the request, naming both origins; a server that moved is
//! configured at its new URL.

use reqwest::Url;
use reqwest::redirect::{Action, Attempt, Policy};

/// The most redirects one request follows within its origin.
pub const MAX_REDIRECTS: usize = 5;

/// A redirect to another origin, refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a redirect from {from} to {to}, another origin")]
pub struct CrossOrigin {
    /// The origin of the URL the request was sent to
    /// (`http://127.0.0.1:8080`).
    pub from: String,
    /// Where the redirect points: its origin, or the whole URL when it
    /// has none (a `data:` URL).
    pub to: String,
}

/// More redirects within the origin than [`MAX_REDIRECTS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("more than {MAX_REDIRECTS} redirects")]
pub struct TooManyRedirects;

/// The redirect policy of [`client`](crate::client): a redirect within
/// the origin of the request's first URL is followed, up to
/// [`MAX_REDIRECTS`]; one to another origin fails with [`CrossOrigin`],
/// one past the bound with [`TooManyRedirects`].
pub fn same_origin_only() -> Policy {
    Policy::custom(decide)
}

/// The decision on one redirect.
fn decide(attempt: Attempt<'_>) -> Action {
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

/// The refused redirect behind `error` (itself, or one of its causes), if
/// a redirect to another origin is why it failed.
pub fn cross_origin<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a CrossOrigin> {
    let mut next = Some(error);
    while let Some(cause) = next {
        if let Some(refused) = cause.downcast_ref::<CrossOrigin>() {
            return Some(refused);
        }
        next = cause.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Serves `/moved` (a `307` to `location`) and `/here` on 127.0.0.1;
    /// its base URL.
    async fn serve(location: String) -> String {
        let app = axum::Router::new()
            .route(
                "/moved",
                axum::routing::get(move || {
                    let location = location.clone();
                    async move {
                        (
                            axum::http::StatusCode::TEMPORARY_REDIRECT,
                            [(axum::http::header::LOCATION, location)],
                        )
                    }
                }),
            )
            .route("/here", axum::routing::get(|| async { "here" }))
            .route(
                "/loop",
                axum::routing::get(|| async {
                    (
                        axum::http::StatusCode::FOUND,
                        [(axum::http::header::LOCATION, "/loop")],
                    )
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{address}")
    }

    #[tokio::test]
    async fn a_redirect_within_the_origin_is_followed() {
        let base = serve("/here".to_owned()).await;
        let client = crate::client(crate::ClientOptions::default()).expect("client");
        let answer = client.get(format!("{base}/moved")).send().await;
        let text = answer.expect("followed").text().await.expect("body");
        assert_eq!(text, "here");
    }

    #[tokio::test]
    async fn a_redirect_to_another_origin_is_refused_naming_both() {
        // Another port of the same host is another origin.
        let other = serve("/here".to_owned()).await;
        let base = serve(format!("{other}/here")).await;
        let client = crate::client(crate::ClientOptions::default()).expect("client");
        let error = client
            .get(format!("{base}/moved"))
            .send()
            .await
            .expect_err("refused");
        let refused = cross_origin(&error).expect("a cross-origin refusal");
        assert_eq!(
            (refused.from.as_str(), refused.to.as_str()),
            (base.as_str(), other.as_str())
        );
        assert!(
            crate::chain(&error).contains("another origin"),
            "{}",
            crate::chain(&error)
        );
    }

    #[tokio::test]
    async fn a_redirect_loop_stops_saying_so() {
        let base = serve(String::new()).await;
        let client = crate::client(crate::ClientOptions::default()).expect("client");
        let error = client
            .get(format!("{base}/loop"))
            .send()
            .await
            .expect_err("stopped");
        assert!(cross_origin(&error).is_none());
        assert!(
            crate::chain(&error).contains("more than 5 redirects"),
            "{}",
            crate::chain(&error)
        );
    }
}
