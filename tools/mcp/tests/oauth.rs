//! OAuth logins against real parts: an authorization server and an MCP
//! server it protects, on 127.0.0.1, from the official Python SDK
//! (`tests/oauth/server.py`; the SDK is installed once under the target
//! directory). The "browser" is an HTTP client that follows the
//! authorization URL's redirects back to dsh's callback: the test
//! authorization server approves at once.

use std::path::Path;
use std::time::Duration;

use dsh_mcp_test_server::oauth::{OAuthServers, browse};
use dsh_tool_mcp::auth::{AuthStatus, auth_status, login};
use dsh_tool_mcp::{Logins, McpError, McpServer, ServerConfig, http_client};
use tokio_util::sync::CancellationToken;

fn servers(access_seconds: u64) -> OAuthServers {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-mcp");
    OAuthServers::start(&dir, access_seconds).unwrap_or_else(|error| panic!("{error}"))
}

/// The number of the access token the server saw with the call of its
/// tool (the authorization server counts the tokens it issues).
async fn token_number(server: &McpServer) -> u32 {
    let output = server
        .call(
            "protected__whoami",
            serde_json::json!({}),
            &CancellationToken::new(),
        )
        .await
        .expect("the protected tool answers");
    let number = output.text.strip_prefix("demo_user, access token ");
    number
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", output.text))
}

/// Before a login the server does not start, and the error says which
/// command logs in; `dsh mcp login`'s flow then keeps tokens (0600), the
/// server starts with them and its tool answers; a token about to expire
/// is refreshed before the next call; after a logout the server needs a
/// login again.
#[tokio::test(flavor = "multi_thread")]
async fn a_login_lets_a_protected_server_start_and_its_token_is_refreshed() {
    let servers = servers(8);
    let dir = tempfile::tempdir().expect("a directory");
    let logins = Logins::in_dir(dir.path().join("logins"));
    let config = ServerConfig::http("protected", &servers.url).with_logins(logins.clone());
    let http = http_client().expect("a client");

    let status = auth_status(&config, &logins, &http)
        .await
        .expect("a status");
    assert_eq!(status, AuthStatus::LoginNeeded);
    let Err(error) = McpServer::start(config.clone(), &http).await else {
        panic!("a protected server started without a login");
    };
    assert!(matches!(error, McpError::LoginNeeded { .. }), "{error}");
    assert!(
        error
            .to_string()
            .contains("needs a login: run `dsh mcp login protected`"),
        "{error}"
    );

    let browser = std::sync::Mutex::new(None);
    let logged_in = login(&config, &logins, |url| {
        *browser.lock().expect("not poisoned") = Some(tokio::spawn({
            let url = url.to_owned();
            async move { browse(&url).await }
        }));
    })
    .await
    .expect("logged in");
    let page = browser
        .lock()
        .expect("not poisoned")
        .take()
        .expect("a URL was shown");
    let page = page
        .await
        .expect("browsed")
        .expect("the browser got to the callback");
    assert!(page.contains("you may close this page"), "{page}");
    assert!(logged_in.refreshes, "{logged_in:?}");
    let issuer = logged_in.issuer.as_deref().expect("an issuer");
    assert!(
        issuer.starts_with(&servers.issuer),
        "{issuer} vs {}",
        servers.issuer
    );
    let file = logins.path("protected");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&file)
            .expect("the login is kept")
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);

    let server = McpServer::start(config.clone(), &http)
        .await
        .expect("started with the login");
    let first = token_number(&server).await;
    // A token lives 8 s; with under 4 s left, it is refreshed before the
    // request.
    tokio::time::sleep(Duration::from_millis(5000)).await;
    let refreshed = token_number(&server).await;
    assert!(refreshed > first, "{first} then {refreshed}");
    server.shutdown().await;

    // Another start reads the refreshed login from the file (the first
    // refresh token was spent: the server keeps only the new one).
    let server = McpServer::start(config.clone(), &http)
        .await
        .expect("started again");
    assert!(token_number(&server).await >= refreshed);
    // Logged out during the session: the next request goes without a
    // token, the server answers 401, and the call says what to run.
    assert!(logins.forget("protected").expect("logged out"));
    let error = server
        .call(
            "protected__whoami",
            serde_json::json!({}),
            &CancellationToken::new(),
        )
        .await
        .expect_err("refused");
    assert!(
        error
            .to_string()
            .contains("needs a login: run `dsh mcp login protected`"),
        "{error}"
    );
    server.shutdown().await;

    let Err(error) = McpServer::start(config, &http).await else {
        panic!("the server started after the logout");
    };
    assert!(matches!(error, McpError::LoginNeeded { .. }), "{error}");
}

/// A server that publishes no OAuth metadata takes no login, and the
/// error says so; a stdio server needs none.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_without_oauth_metadata_takes_no_login() {
    let app = axum::Router::new().route("/mcp", axum::routing::post(|| async { "{}" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("an address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let dir = tempfile::tempdir().expect("a directory");
    let logins = Logins::in_dir(dir.path());
    let config = ServerConfig::http("plain", &url);
    let error = login(&config, &logins, |_| panic!("no URL to show"))
        .await
        .expect_err("no login");
    assert!(
        error.to_string().contains("publishes no OAuth metadata"),
        "{error}"
    );
    let stdio = ServerConfig::stdio("local", ["true"]);
    let error = login(&stdio, &logins, |_| {}).await.expect_err("no login");
    assert!(error.to_string().contains("needs no login"), "{error}");
}
