//! What `dsh check` finds in a deployment, as data: the problems of a
//! prompt that does not render, located in the file
//! ([`prompt_problems`](crate::file::prompt_problems)); sentences two
//! owners both state; how the instruction files were found and cut; what
//! each MCP server brings.

mod agents;
mod duplicate_sentences;
pub mod instruction_report;
mod servers;
mod tools;
mod window;

pub use agents::{Findings, WithServers, check_deployment};
pub use servers::{ServerReport, ToolLeftOut};
pub use tools::MAX_TOOLS;
