//! What a child process may see or do, and what needs a person's yes: one
//! decision each, asked wherever a child starts or a call runs. What a
//! child may see ([`environment`]), what needs a yes ([`approval`]), how
//! much a session's mode allows ([`modes`]), and what an MCP server may
//! ask of the person ([`sampling`]).

pub mod always;
pub mod approval;
pub mod environment;
pub mod modes;
pub mod sampling;
