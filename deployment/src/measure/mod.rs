//! Measurements of what an agent sends: the canonical request, its token
//! counts, each MCP server's share of its tools, and the trace of a
//! session's requests (an observer either front end attaches).

pub mod canonical_request;
pub mod server_shares;
pub mod tokens;
pub mod trace;
