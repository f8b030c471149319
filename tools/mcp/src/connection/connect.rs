//! A server connected: a stdio server's process started, or an HTTP
//! server's transport set up (its headers, its login), and the
//! connection opened (`server/discover`, else `initialize`).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use rmcp::model::ProtocolVersion;
use rmcp::service::{Peer, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};

use crate::connection::process::ProcessGroup;
use crate::connection::spawn::{Child, spawn};
use crate::connection::watched::Watched;
use crate::questions::client::Handler;
use crate::tasks::TappedHttp;
use crate::tools::keeping::Shared;
use crate::tools::section::{InstructionsSection, instructions_section};
use crate::{McpError, ServerConfig, Transport};

/// Whether the connection speaks MCP 2026-07-28 or later (no
/// `initialize`: version and capabilities in each request's `_meta`).
pub(crate) fn is_modern(peer: &Peer<RoleClient>) -> bool {
    (peer.peer_info()).is_some_and(|info| !info.protocol_version.has_initialize())
}

/// A server connected: its process started (a stdio server's), and the
/// `initialize` handshake done. Unbounded: the caller sets the deadline
/// (dropping the future kills the process).
pub(crate) async fn connect(
    config: &ServerConfig,
    shared: &Shared,
    handler: Handler,
    http: &reqwest::Client,
) -> Result<
    (
        RunningService<RoleClient, Handler>,
        Option<ProcessGroup>,
        Option<u32>,
    ),
    McpError,
> {
    let handshake = |error: String| McpError::Handshake {
        server: config.name.clone(),
        origin: config.origin(),
        message: error,
    };
    match &config.transport {
        Transport::Stdio { .. } => {
            let child = Child::of(&config.transport);
            let (transport, group, pid) = spawn(config, &child, &shared.task_only)?;
            let transport = Watched {
                inner: transport,
                announced: Arc::clone(&shared.announced),
            };
            let service = handler
                .serve_with_lifecycle(transport, lifecycle())
                .await
                .map_err(|error| handshake(error.to_string()))?;
            Ok((service, group, pid))
        }
        Transport::Http {
            url,
            headers,
            bearer_token,
        } => {
            // A login is used only when no token is configured.
            let manager = match &config.logins {
                Some(logins) if bearer_token.is_none() => {
                    (crate::auth::authorized(config, url, logins).await)
                        .map_err(|error| handshake(error.to_string()))?
                }
                _ => None,
            };
            let logged_in = manager.is_some();
            let transport = http_config(config, url, headers, bearer_token)?;
            let served = match manager {
                Some(manager) => {
                    let client = rmcp::transport::AuthClient::new(http.clone(), manager);
                    serve_http(handler, shared, client, transport).await
                }
                None => serve_http(handler, shared, http.clone(), transport).await,
            };
            let service = served.map_err(|error| {
                if shared.refused.load(Ordering::SeqCst) {
                    login_needed(config, logged_in)
                } else {
                    handshake(crate::redirect::described(&error))
                }
            })?;
            Ok((service, None, None))
        }
    }
}

/// How dsh opens a connection: `server/discover` first, and MCP
/// 2026-07-28 with a server that answers it with that version; with a
/// server that answers with an error (the method is not one it has, as
/// a server of 2025-11-25 answers) or not within ten seconds,
/// `initialize` with 2025-11-25 on the same connection. 2025-11-25 is
/// the second version offered: a server that refuses 2026-07-28 naming
/// the versions it has (an rmcp server of 2025-11-25 does) is asked
/// again with it, and then says it has no `server/discover`.
fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28, ProtocolVersion::V_2025_11_25],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    }
}

/// Serves `handler` over streamable HTTP through `client` (dsh's, or
/// rmcp's `AuthClient` over it), tapped for task support and 401s.
async fn serve_http<C>(
    handler: Handler,
    shared: &Shared,
    client: C,
    config: StreamableHttpClientTransportConfig,
) -> Result<RunningService<RoleClient, Handler>, rmcp::service::ClientInitializeError>
where
    C: rmcp::transport::streamable_http_client::StreamableHttpClient<Error = reqwest::Error> + Sync,
{
    let http = TappedHttp {
        client,
        task_only: Arc::clone(&shared.task_only),
        refused: Arc::clone(&shared.refused),
    };
    let transport = Watched {
        inner: StreamableHttpClientTransport::with_client(http, config),
        announced: Arc::clone(&shared.announced),
    };
    handler.serve_with_lifecycle(transport, lifecycle()).await
}

/// The error of a server that answered 401: it needs a login, or (when
/// one was sent) a new one.
pub(crate) fn login_needed(config: &ServerConfig, logged_in: bool) -> McpError {
    McpError::LoginNeeded {
        server: config.name.clone(),
        origin: config.origin(),
        why: if logged_in {
            "; it refused the login kept, which could not be refreshed".to_owned()
        } else {
            String::new()
        },
    }
}

/// What a server's `initialize` answer says of itself: its instructions,
/// as its section (none when blank), and its name and version.
pub(crate) fn introduced(
    config: &ServerConfig,
    info: Option<&rmcp::model::ServerPeerInfo>,
) -> (Option<InstructionsSection>, Option<String>) {
    let instructions = info
        .and_then(|info| info.instructions.as_deref())
        .filter(|text| !text.trim().is_empty())
        .map(|text| instructions_section(config, text));
    let server_info = info
        .and_then(|info| info.server_info.as_ref())
        .map(|implementation| format!("{} {}", implementation.name, implementation.version));
    (instructions, server_info)
}

/// The transport's configuration of an HTTP server: its URL, its headers
/// (each checked) and its bearer token.
fn http_config(
    config: &ServerConfig,
    url: &str,
    headers: &[(String, String)],
    bearer_token: &Option<String>,
) -> Result<StreamableHttpClientTransportConfig, McpError> {
    let mut map = HashMap::new();
    for (name, value) in headers {
        let bad = |message: String| McpError::Config {
            server: config.name.clone(),
            origin: config.origin(),
            message,
        };
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|error| bad(format!("header name `{name}`: {error}")))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|error| bad(format!("the value of header `{name}`: {error}")))?;
        map.insert(name, value);
    }
    let mut transport_config =
        StreamableHttpClientTransportConfig::with_uri(url).custom_headers(map);
    if let Some(token) = bearer_token {
        transport_config = transport_config.auth_header(token.clone());
    }
    Ok(transport_config)
}
