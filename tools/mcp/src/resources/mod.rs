//! Resources and prompts: what a server offers beside its tools.
//!
//! - [`read`]: its resources, listed in the description of the one tool
//!   that reads them (`<server>__read_resource`).
//! - [`prompts`]: its prompts, a front end's commands, listed and got
//!   (`prompts/get`) as the text of a person's turn.

pub(crate) mod prompts;
pub(crate) mod read;
