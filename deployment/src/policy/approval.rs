//! What needs a person's yes before it runs: one decision for every front
//! end, asked for each call.
//!
//! - A built-in tool or a tool instance asks when its table says
//!   `permission = "ask"`.
//! - An MCP tool asks as its server's `[mcp.<name>]` table says
//!   (`permission`, `ask`, `allow`), and left unset, unless its
//!   annotations say `readOnlyHint: true`: the MCP specification treats an
//!   unannotated tool as possibly destructive. A tool of a server an
//!   editor sent follows the same default.
//!
//! How to ask is the front end's: `dsh acp` asks the editor, `dsh run`
//! the terminal, and where no one can be asked the call is refused with
//! [`ApprovalPolicy::how_to_allow`].

use dsh_tool_mcp::{McpServers, ToolPrint};
use dsh_tools::{ToolKind, ToolRegistry};

use super::modes::Asking;

/// The approval policy of a deployment.
#[derive(Debug, Clone)]
pub struct ApprovalPolicy {
    /// The tools whose tables say `permission = "ask"`.
    ask_first: Vec<String>,
    /// The servers whose tools ask by their own rule.
    mcp: McpServers,
    /// The registered tools, whose kinds say which only read.
    tools: ToolRegistry,
}

impl ApprovalPolicy {
    /// The policy of tables that ask (`ask_first`), of the servers `mcp`
    /// holds, now and later, and of the tools `tools` holds.
    pub fn new(ask_first: Vec<String>, mcp: McpServers, tools: ToolRegistry) -> Self {
        Self {
            ask_first,
            mcp,
            tools,
        }
    }

    /// Whether a call of `tool` in the session `session` (the agent loop's
    /// id) asks a person first, by the deployment's policy.
    pub(crate) fn asks(&self, tool: &str, session: &str) -> bool {
        self.ask_first.iter().any(|name| name == tool)
            || self.mcp.asks_first(Some(session), tool) == Some(true)
    }

    /// Whether a call of `tool` in `session` asks first in a mode that
    /// asks as `asking` says.
    pub fn asks_in(&self, asking: Asking, tool: &str, session: &str) -> bool {
        self.standing(tool, session).asks_in(asking)
    }

    /// What the policy reads of `tool` in `session` now: whether its rule
    /// asks, and whether it only reads.
    pub(crate) fn standing(&self, tool: &str, session: &str) -> Standing {
        Standing {
            asks: self.asks(tool, session),
            only_reads: self.only_reads(tool, session),
        }
    }

    /// What MCP tool `tool` of `session` says it is now; `None` for a
    /// tool of dsh's own.
    pub(crate) fn print(&self, tool: &str, session: &str) -> Option<(String, ToolPrint)> {
        let server = self.mcp.server_of_tool(Some(session), tool)?;
        Some((server.name().to_owned(), server.print(tool)?))
    }

    /// Whether `tool` only reads: a tool of a read-only kind, or an MCP
    /// tool annotated `readOnlyHint: true`.
    fn only_reads(&self, tool: &str, session: &str) -> bool {
        if let Some(read_only) = self.mcp.is_read_only(Some(session), tool) {
            return read_only;
        }
        self.tools.get(tool).is_some_and(|tool| {
            matches!(
                tool.kind(),
                ToolKind::Read | ToolKind::Search | ToolKind::Think | ToolKind::Fetch
            )
        })
    }

    /// Whether `tool` is one of dsh's own tools that change files (a
    /// change, a deletion, a move): what a read-only sandbox refuses
    /// whatever a person answers. An MCP server's tool runs in its
    /// server, not in the session's sandbox, and is never one.
    pub fn changes_files(&self, tool: &str, session: &str) -> bool {
        if self.mcp.server_of_tool(Some(session), tool).is_some() {
            return false;
        }
        self.tools.get(tool).is_some_and(|tool| {
            matches!(
                tool.kind(),
                ToolKind::Edit | ToolKind::Delete | ToolKind::Move
            )
        })
    }

    /// What the deployment would set to let `tool` run without asking: the
    /// key to name where a call cannot be asked about.
    pub fn how_to_allow(&self, tool: &str, session: &str) -> String {
        let Some(server) = self.mcp.server_of_tool(Some(session), tool) else {
            return format!("set `[tools.{tool}] permission = \"allow\"` to run it unasked");
        };
        let name = server.name();
        let raw = (server.exposed_names().into_iter())
            .find(|exposed| exposed.exposed == tool)
            .map_or_else(|| tool.to_owned(), |exposed| exposed.tool);
        if server.config().declared_at.is_none() {
            return format!(
                "`{tool}` is a tool of the MCP server `{name}` the editor sent, which may change \
                 things (its annotations do not say `readOnlyHint: true`)"
            );
        }
        format!(
            "set `[mcp.{name}] allow = [\"{raw}\"]` (or `permission = \"allow\"` for every tool \
             of the server) to run it unasked; a tool that only reads should say \
             `readOnlyHint: true` in its annotations"
        )
    }
}

/// What the policy reads of a tool to decide whether its calls ask: its
/// rule (a table's `permission = "ask"`, a server's rule and
/// annotations), and whether it only reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Standing {
    /// Whether its rule asks, in a mode that follows the policy.
    pub(crate) asks: bool,
    /// Whether it only reads (a mode that asks before side effects lets
    /// it run).
    pub(crate) only_reads: bool,
}

impl Standing {
    /// The standing of a tool that could not be read: it asks, and may
    /// change anything.
    pub(crate) const STRICTEST: Standing = Standing {
        asks: true,
        only_reads: false,
    };

    /// Whether its calls ask first in a mode that asks as `asking` says.
    pub(crate) fn asks_in(self, asking: Asking) -> bool {
        match asking {
            Asking::Never => false,
            Asking::Policy => self.asks,
            Asking::SideEffects => self.asks || !self.only_reads,
        }
    }

    /// The stricter of two: it asks if either does, and only reads if
    /// both do.
    pub(crate) fn stricter(self, other: Standing) -> Standing {
        Standing {
            asks: self.asks || other.asks,
            only_reads: self.only_reads && other.only_reads,
        }
    }

    /// Whether `self` asks less than `before` in some mode.
    pub(crate) fn loosens(self, before: Standing) -> bool {
        self.stricter(before) != self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DESTRUCTIVE: Standing = Standing {
        asks: true,
        only_reads: false,
    };
    const READER: Standing = Standing {
        asks: false,
        only_reads: true,
    };

    #[test]
    fn a_tool_that_says_it_only_reads_now_loosens_and_the_stricter_still_asks() {
        assert!(READER.loosens(DESTRUCTIVE));
        assert!(!DESTRUCTIVE.loosens(READER), "asking more is believed");
        assert!(!READER.loosens(READER));
        let stricter = READER.stricter(DESTRUCTIVE);
        assert_eq!(stricter, DESTRUCTIVE);
        for asking in [Asking::Policy, Asking::SideEffects] {
            assert!(stricter.asks_in(asking), "{asking:?}");
            assert!(!READER.asks_in(Asking::Policy));
        }
        assert!(!stricter.asks_in(Asking::Never), "full access asks nothing");
        assert_eq!(Standing::STRICTEST.stricter(READER), Standing::STRICTEST);
    }
}
