//! Measurements of what an agent sends: the canonical request, its token
//! counts, and the trace of a session's requests (an observer either front
//! end attaches).

pub mod canonical_request;
pub mod tokens;
pub mod trace;
