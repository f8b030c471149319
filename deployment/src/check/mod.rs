//! What `dsh check` finds in a deployment, as data: the problems of a
//! prompt that does not render, located in the file; sentences two owners
//! both state; how the instruction files were found and cut; what each
//! MCP server brings.

mod agents;
pub mod duplicate_sentences;
pub mod instruction_report;
pub mod prompt_problems;
pub mod servers;
mod tools;
mod window;

pub use agents::{Findings, WithServers, check_deployment};
pub use prompt_problems::prompt_problems;
pub use servers::{LeftOut, ServerReport};
pub use tools::MAX_TOOLS;
