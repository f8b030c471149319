//! Reading a server's tool list, within bounds: at most [`MAX_TOOL_PAGES`]
//! pages and [`MAX_TOOLS`] tools, so a server whose `nextCursor` never
//! ends, or that lists without measure, fails with its name instead of
//! filling dsh's memory until the start-up timeout.

use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{PaginatedRequestParams, Tool};
use rmcp::service::{Peer, ServiceError};

use crate::{McpError, ServerConfig};

/// The most tools dsh reads from one server. Model APIs take far fewer
/// in one request (OpenAI: 128); a list longer than this is a server gone
/// wrong.
pub const MAX_TOOLS: usize = 1000;

/// The most pages (`tools/list` requests, following `nextCursor`) dsh
/// reads of one server's tool list.
pub const MAX_TOOL_PAGES: usize = 100;

/// The least time between two re-lists of one server's tools: however
/// fast a server announces changes (`notifications/tools/list_changed`),
/// dsh lists its tools at most this often, one list at a time.
pub const MIN_RELIST_INTERVAL: Duration = Duration::from_millis(100);

/// Why a server's tool list was not read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ListError {
    /// A request failed (the server answered an error, or went away).
    #[error("`tools/list` failed: {0}")]
    Failed(#[from] ServiceError),
    /// The list is longer than dsh reads.
    #[error(
        "it lists more than {MAX_TOOLS} tools, the most dsh reads from one server; \
         ask its authors for fewer, or use another server"
    )]
    TooManyTools,
    /// The pages do not end.
    #[error(
        "its tool list goes on past {MAX_TOOL_PAGES} pages (`nextCursor`), the most dsh \
         reads; the server's paging never ends"
    )]
    TooManyPages,
}

impl ListError {
    /// The error of a start whose first list failed this way.
    pub(crate) fn at_start(self, config: &ServerConfig) -> McpError {
        let (server, origin) = (config.name.clone(), config.origin());
        match self {
            Self::Failed(_) => McpError::Handshake {
                server,
                origin,
                message: self.to_string(),
            },
            Self::TooManyTools | Self::TooManyPages => McpError::ToolListTooLong {
                server,
                origin,
                message: self.to_string(),
            },
        }
    }
}

/// A server's tool list, read whole.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Listed {
    /// Its tools, in the server's order.
    pub(crate) tools: Vec<Tool>,
    /// How long the list stays fresh (MCP 2026-07-28 `ttlMs`, the least
    /// of its pages'); `None` when a page did not say.
    pub(crate) ttl_ms: Option<u64>,
}

/// Every tool `peer` lists, page after page, within the bounds. Each
/// page goes through rmcp's cache: a page the server gave a `ttlMs` is
/// not asked for again until that time has passed.
pub(crate) async fn list_tools(peer: &Peer<RoleClient>) -> Result<Listed, ListError> {
    let mut tools = Vec::new();
    let mut cursor = None;
    let mut ttl_ms = Some(u64::MAX);
    for _ in 0..MAX_TOOL_PAGES {
        let params =
            cursor.map(|cursor| PaginatedRequestParams::default().with_cursor(Some(cursor)));
        let page = peer.list_tools(params).await?;
        if tools.len() + page.tools.len() > MAX_TOOLS {
            return Err(ListError::TooManyTools);
        }
        tools.extend(page.tools);
        ttl_ms = ttl_ms.zip(page.ttl_ms).map(|(least, page)| least.min(page));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(Listed { tools, ttl_ms }),
        }
    }
    Err(ListError::TooManyPages)
}
