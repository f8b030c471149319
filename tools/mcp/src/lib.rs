//! Tools from Model Context Protocol servers, each server's guidance owned
//! by that server.
//!
//! A deployment (or an editor's ACP session) names MCP servers; dsh starts
//! them ([`McpServer::start`], all of a session's at once with
//! [`McpServers::start_all`]) on the official Rust SDK, `rmcp`, client
//! side only, in MCP 2026-07-28 with a server that answers
//! `server/discover` with it, else 2025-11-25.
//!
//! - **Tools.** The model sees each tool as `<server>__<tool>`, its
//!   description and schema as the server wrote them. Names are made to
//!   fit what model APIs accept (`^[a-zA-Z0-9_-]{1,64}$`) by a stated,
//!   deterministic rule ([`exposed_names`]): other characters become `_`;
//!   a name too long is cut and given a hash of the tool's own name; a
//!   name equal to an earlier one gets the same hash suffix. No tool is
//!   dropped.
//! - **Guidance.** A server's `initialize` `instructions` become section
//!   `mcp:<server>`, order 150, owned by the server (owner: its name, its
//!   command or URL, and where it is declared), bound to the server's
//!   tools: it renders only while one of them is in the assembly. The text
//!   is verbatim — a `<<` in it is never a reference — and cut at
//!   [`MAX_INSTRUCTIONS`] bytes with a visible marker.
//! - **Changes.** On `notifications/tools/list_changed` the server's list
//!   is read again; the next assembly has the new set. One re-list runs
//!   at a time, at most one every [`MIN_RELIST_INTERVAL`]: notifications
//!   meanwhile make one more, however many they are. A list is read to at
//!   most [`MAX_TOOL_PAGES`] pages and [`MAX_TOOLS`] tools; past either,
//!   the server does not start ([`McpError::ToolListTooLong`]), or keeps
//!   the tools it had.
//! - **Calls.** Results are rendered as the model reads them: text as it
//!   is, embedded text resources with their URI, images the model APIs
//!   take (`dsh_agent_types::Image::check`, within one result's
//!   `dsh_agent_types::ImageBudget`) as the output's images, other
//!   images described with why, audio and binary resources described
//!   (type, size),
//!   `structuredContent` as JSON when there is no text; `isError` makes a
//!   failed tool result. A result
//!   over [`MAX_RESULT_BYTES`] keeps its head and tail, with a line saying
//!   how many bytes were left out (as `bash` cuts its output). Every wait
//!   has a timeout (`startup_timeout`, `call_timeout`); a cancelled call
//!   is abandoned and the server told (`notifications/cancelled`); a call
//!   to a dead server fails at once, naming it. What the server says of a
//!   call's progress goes to the call's `ToolProgress`
//!   ([`McpServer::call_reporting`]).
//! - **Logs.** A server's log messages (`notifications/message`) at its
//!   [`McpLogLevel`] and above are said to the host ([`ServerSaid::Log`]:
//!   `[mcp <name>] <level>: …`); a server with the logging capability is
//!   asked for that level.
//! - **Annotations.** A tool's `title` titles its calls, and its hints
//!   choose their kind (`Tool::kind`: read, edit, fetch or other), for an
//!   editor that shows calls.
//! - **Resources.** A server with resources has one more tool,
//!   `<server>__read_resource` ([`READ_RESOURCE`]), whose description
//!   lists them (at most [`MAX_LISTED_RESOURCES`] in
//!   [`MAX_RESOURCE_LIST_BYTES`]); resource links in results name it.
//! - **Prompts.** A server's prompts ([`McpServer::prompts`]) are a
//!   front end's commands; [`McpServer::get_prompt`] gets one
//!   (`prompts/get`) as the text of a person's turn: text as it is, other
//!   content described, capped as a result is. On
//!   `notifications/prompts/list_changed` the list is read again.
//! - **Questions.** A server's `sampling/createMessage` and
//!   `elicitation/create` go to the [`Asker`] its host gave it
//!   ([`ServerConfig::with_asker`]), which decides who answers (the
//!   person's terminal, an editor); dsh advertises sampling and each kind
//!   of elicitation only where the asker answers them. A request is the
//!   session's whose call the server is serving ([`Origin`]). Without an
//!   asker, sampling is refused and an elicitation declined, its message
//!   said to the host ([`ServerSaid::Declined`]). A 2026-07-28 server's
//!   questions come as rounds of a call, a prompt or a read
//!   (`input_required`): the same asker answers them, and the request is
//!   sent again with the answers. Sampling is bounded in every case
//!   ([`SamplingLimits`]): one request of a server in flight, and per
//!   call and per session a count and a token budget; past them a request
//!   is refused, and the asker told once ([`Asker::refused`]).
//! - **Versions.** Each connection opens with `server/discover`: a server
//!   that answers it with 2026-07-28 is spoken to in that version (no
//!   `initialize`; its list changes on the `subscriptions/listen` dsh
//!   opens where it offers them; lists kept for their `ttlMs`, and read
//!   again past it by [`McpServer::refresh_tools`]); any other, in
//!   2025-11-25 ([`McpServer::protocol_version`]).
//! - **Changes.** What each tool says it is ([`ToolPrint`]) is kept with
//!   the tool list, so a host can tell a tool that changed mid-session
//!   from one it approved.
//! - **Roots.** `roots/list` answers the server's roots
//!   ([`ServerConfig::roots`]: a session's directories, else the server's
//!   working directory); [`McpServer::set_roots`] changes them and tells
//!   the server.
//! - **Processes.** A stdio server runs as the leader of a process group
//!   of its own, its stderr handed to the host a line at a time
//!   ([`ServerSaid::Stderr`]: read as bytes, shown as UTF-8 with `�` for
//!   what is not, each line cut at [`MAX_STDERR_LINE`] bytes with a
//!   marker, read to its end).
//!   [`McpServer::shutdown`] closes its stdin, then sends the group
//!   `SIGTERM`, then `SIGKILL`; dropping a server kills its group; and
//!   [`stop_all_servers`] kills every group, for a process about to exit
//!   on a signal.
//!
//! - **Output.** This crate prints nothing. What a server says for the
//!   person — its stderr, its log messages, a question declined, what
//!   failed with it while it ran — goes, one [`ServerLine`] at a time,
//!   to the [`ServerOutput`] its host gave it
//!   ([`ServerConfig::with_output`]); without one it is discarded. dsh's
//!   front end writes each line on its stderr as the line's `Display`
//!   has it, `[mcp <name>] …`.
//!
//! [`McpServers::install`] wires a set of servers into a
//! [`SystemPrompt`](dsh_system_prompt::SystemPrompt) (their tools and
//! sections, per assembly) and a [`ToolRegistry`](dsh_tools::ToolRegistry)
//! (their calls). The deployment's servers are seen by an agent whose tool
//! list has `mcp:<server>`; a session's servers by that session alone.
#![deny(missing_docs)]

pub mod auth;
mod config;
mod connection;
mod error;
mod questions;
mod redirect;
mod resources;
mod server;
mod servers;
mod table;
mod tasks;
mod tools;

pub use auth::{AuthStatus, LoginError, Logins};
pub use config::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, McpApproval, ServerConfig, Transport,
};
pub use connection::logging::McpLogLevel;
pub use connection::output::{ServerLine, ServerOutput, ServerSaid};
pub use connection::process::stop_all_servers;
pub use connection::stderr::MAX_STDERR_LINE;
pub use error::McpError;
pub use questions::asker::{
    AskError, Asker, ElicitAnswer, ElicitKind, Elicitation, Elicits, Origin, Sampled,
    SampledContent, SampledMessage, SampledRole, SampledStop, SamplingRequest, SharedAsker,
};
pub use questions::sampling::{MAX_SAMPLED_TOKENS, SamplingLimits, sampled_tokens};
pub use resources::prompts::{PromptArgument, PromptError, ServerPrompt};
pub use resources::read::{MAX_LISTED_RESOURCES, MAX_RESOURCE_LIST_BYTES, READ_RESOURCE};
pub use server::McpServer;
pub use servers::{McpServers, selection_entry};
pub use table::{MAX_TIMEOUT_SECS, McpServerTable, McpTableError};
pub use tasks::LeftOut;
pub use tools::naming::{
    ExposedName, MAX_SERVER_NAME, MAX_TOOL_NAME, NameFix, SEPARATOR, SERVER_NAME_PATTERN,
    exposed_names, is_server_name, sanitize_server_name,
};
pub use tools::print::ToolPrint;
pub use tools::render::MAX_RESULT_BYTES;
pub use tools::section::{MAX_INSTRUCTIONS, MCP_SECTION_ORDER, section_name, server_owner};
pub use tools::shown::shown;
pub use tools::tool_list::{MAX_TOOL_PAGES, MAX_TOOLS, MIN_RELIST_INTERVAL};

/// An HTTP client for MCP servers, with dsh's TLS set-up (rustls with the
/// `ring` provider, installed as the process's default when it has none),
/// that follows a redirect only within the origin of the server's `url`.
/// Front ends that already have dsh's client pass that instead.
pub fn http_client() -> Result<reqwest::Client, reqwest::Error> {
    dsh_http::client(dsh_http::ClientOptions::default())
}
