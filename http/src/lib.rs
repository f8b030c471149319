//! What dsh's HTTP clients share: the model adapters' (`dsh-agent-loop`),
//! the MCP client's and its OAuth login's (`dsh-tool-mcp`).
//!
//! - [`client`]: a `reqwest::Client` with dsh's TLS set-up (rustls with
//!   the `ring` provider, [`install_crypto_provider`]) that follows a
//!   redirect only within the origin of the request's URL
//!   ([`same_origin_only`]).
//! - [`cross_origin`]: the refused redirect behind a failed request, so
//!   each caller can say what the redirect would have carried.
//! - [`chain`]: an error and its causes on one line, the one wording of
//!   a request that could not be sent.
//!
//! ```
//! let client = dsh_http::client(dsh_http::ClientOptions::default()).expect("a client");
//! # drop(client);
//! ```
//!
//! Invariant: the crate knows nothing of models, MCP or OAuth; what a
//! redirect would carry, and so what to do about one, is the caller's to
//! say.
#![deny(missing_docs)]

mod redirect;

use std::time::Duration;

pub use redirect::{CrossOrigin, MAX_REDIRECTS, TooManyRedirects, cross_origin, same_origin_only};

/// How a [`client`] is built.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct ClientOptions {
    /// The most a request may take, its answer read whole; `None`: no
    /// bound but the caller's.
    pub timeout: Option<Duration>,
}

impl ClientOptions {
    /// Options with every request bounded by `timeout`.
    pub fn with_timeout(timeout: Duration) -> Self {
        Self {
            timeout: Some(timeout),
        }
    }
}

/// An HTTP client with dsh's TLS set-up (rustls, `ring`: see
/// [`install_crypto_provider`]) that follows a redirect only within the
/// origin of the request's first URL ([`same_origin_only`]).
pub fn client(options: ClientOptions) -> Result<reqwest::Client, reqwest::Error> {
    install_crypto_provider();
    let mut builder = reqwest::Client::builder().redirect(same_origin_only());
    if let Some(timeout) = options.timeout {
        builder = builder.timeout(timeout);
    }
    builder.build()
}

/// Installs rustls' `ring` provider as the process's default when it has
/// none. reqwest is built without a provider of its own (its default,
/// `aws-lc-rs`, builds a C library at CMake cost on every clean build),
/// and a client built without one panics; so does any client another
/// crate (rmcp's OAuth) builds in the process. Call it before building
/// one.
pub fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Err: another thread installed one in between, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// An error and its causes, on one line: reqwest's own message says only
/// "error sending request", the cause says why.
pub fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
