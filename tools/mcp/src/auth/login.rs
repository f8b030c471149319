//! `dsh mcp login`: the authorization code flow with PKCE, as rmcp runs
//! it (metadata discovery, dynamic client registration, the code
//! exchanged for tokens), with the code received on a callback of dsh's
//! own on 127.0.0.1.

use std::net::Ipv4Addr;
use std::time::Duration;

use rmcp::transport::auth::{AuthorizationRequest, AuthorizationSession};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use super::{LoggedIn, LoginError, Logins, manager, server_url};
use crate::ServerConfig;

/// How long a login waits for the browser to come back to its callback.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// The most of a callback request read: its request line and headers.
const MAX_CALLBACK_BYTES: usize = 16 * 1024;

/// The path of the callback, on a port the system picks.
const CALLBACK_PATH: &str = "/callback";

/// Logs dsh in to server `config` (one with a `url`) and keeps the login
/// in `logins`: discovers its authorization server, registers dsh as a
/// client there, hands the authorization URL to `show` (a front end
/// prints it and opens a browser), waits up to [`LOGIN_TIMEOUT`] for the
/// browser to come back to `http://127.0.0.1:<port>/callback`, and
/// exchanges the code for tokens.
pub async fn login(
    config: &ServerConfig,
    logins: &Logins,
    show: impl FnOnce(&str),
) -> Result<LoggedIn, LoginError> {
    let url = server_url(config)?;
    let server = config.name.as_str();
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .map_err(|error| LoginError::callback(server, error))?;
    let port = (listener.local_addr())
        .map_err(|error| LoginError::callback(server, error))?
        .port();
    let redirect_uri = format!("http://127.0.0.1:{port}{CALLBACK_PATH}");
    let manager = manager(config, url, logins).await?;
    let request = AuthorizationRequest::new(&redirect_uri).with_client_name("dsh");
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, error)| LoginError::oauth(server, &error))?;
    show(session.get_authorization_url());
    let callback = tokio::time::timeout(LOGIN_TIMEOUT, callback(&listener, &redirect_uri))
        .await
        .map_err(|_| LoginError::TimedOut {
            server: server.to_owned(),
            seconds: LOGIN_TIMEOUT.as_secs(),
        })?
        .map_err(|error| LoginError::callback(server, error))?;
    if let Some(denied) = denied(&callback) {
        return Err(LoginError::Denied {
            server: server.to_owned(),
            reason: denied,
        });
    }
    session
        .handle_callback_url(&callback)
        .await
        .map_err(|error| LoginError::oauth(server, &error))?;
    super::status::logged_in(config, logins)?.ok_or_else(|| LoginError::NotKept {
        server: server.to_owned(),
    })
}

/// Waits for the browser's request to the callback and answers it; the
/// URL it came to. Other requests (a browser's `/favicon.ico`) are
/// answered 404 and waited past.
async fn callback(listener: &TcpListener, redirect_uri: &str) -> std::io::Result<String> {
    loop {
        let (mut stream, _) = listener.accept().await?;
        let Some(target) = request_target(&mut stream).await? else {
            continue;
        };
        if target.split('?').next() != Some(CALLBACK_PATH) {
            let _ = stream
                .write_all(answer("404 Not Found", "Not found.").as_bytes())
                .await;
            continue;
        }
        let page = "dsh has the answer of the authorization server; you may close this page.";
        let _ = stream.write_all(answer("200 OK", page).as_bytes()).await;
        let _ = stream.shutdown().await;
        let base = redirect_uri.trim_end_matches(CALLBACK_PATH);
        return Ok(format!("{base}{target}"));
    }
}

/// The target of the HTTP request on `stream` (`/callback?code=…`), read
/// from its request line; `None` when the request is not one.
async fn request_target(stream: &mut tokio::net::TcpStream) -> std::io::Result<Option<String>> {
    let mut read = Vec::new();
    let mut buffer = [0u8; 2048];
    while !read.windows(4).any(|window| window == b"\r\n\r\n") && read.len() < MAX_CALLBACK_BYTES {
        let count = stream.read(&mut buffer).await?;
        if count == 0 {
            break;
        }
        read.extend_from_slice(&buffer[..count]);
    }
    let text = String::from_utf8_lossy(&read);
    let mut words = text.lines().next().unwrap_or_default().split(' ');
    Ok(match (words.next(), words.next()) {
        (Some("GET"), Some(target)) if target.starts_with('/') => Some(target.to_owned()),
        _ => None,
    })
}

/// A small HTTP answer that closes the connection.
fn answer(status: &str, text: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{text}",
        text.len()
    )
}

/// The authorization server's refusal in a callback URL (`error`, and
/// its `error_description` when it gave one).
fn denied(callback: &str) -> Option<String> {
    let url = reqwest::Url::parse(callback).ok()?;
    let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    let find = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    let error = find("error")?;
    Some(match find("error_description") {
        Some(description) => format!("{error}: {description}"),
        None => error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_in_the_callback_is_read_with_its_description() {
        let url = "http://127.0.0.1:1/callback?error=access_denied&error_description=no+thanks";
        assert_eq!(denied(url).as_deref(), Some("access_denied: no thanks"));
        assert_eq!(denied("http://127.0.0.1:1/callback?code=c&state=s"), None);
    }

    #[tokio::test]
    async fn the_callback_answers_the_browser_and_returns_the_url_it_came_to() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .expect("bound");
        let port = listener.local_addr().expect("an address").port();
        let redirect = format!("http://127.0.0.1:{port}{CALLBACK_PATH}");
        let browser = tokio::spawn(async move {
            let mut favicon = tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .expect("up");
            favicon
                .write_all(b"GET /favicon.ico HTTP/1.1\r\nhost: x\r\n\r\n")
                .await
                .expect("sent");
            let mut answer = String::new();
            favicon.read_to_string(&mut answer).await.expect("answered");
            assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
            let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .expect("up");
            let request = b"GET /callback?code=c&state=s HTTP/1.1\r\nhost: x\r\n\r\n";
            stream.write_all(request).await.expect("sent");
            let mut answer = String::new();
            stream.read_to_string(&mut answer).await.expect("answered");
            answer
        });
        let url = callback(&listener, &redirect).await.expect("a callback");
        assert_eq!(url, format!("{redirect}?code=c&state=s"));
        assert!(browser.await.expect("ran").starts_with("HTTP/1.1 200 OK"));
    }
}
