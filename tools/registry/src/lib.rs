//! The tool registry of dsh agents.
//!
//! A [`Tool`] owns its whole per-call contract: a name, a description, and a
//! JSON schema of its arguments, derived from an argument struct with
//! [`parameters_for`]. A [`ToolRegistry`] holds the tools of a process:
//!
//! - it rejects a second tool of the same name;
//! - [`install`](ToolRegistry::install) makes it a tool provider of a
//!   [`SystemPrompt`](dsh_system_prompt::SystemPrompt), so assemblies carry
//!   the schemas (built once, shared by `Arc`) of the tools the context's
//!   [`ToolSelection`] selects — an agent may see a subset;
//! - [`call`](ToolRegistry::call) validates the model's argument JSON
//!   against the schema before the tool runs, and turns every failure
//!   (unknown tool, bad argument — naming the field —, tool error, panic,
//!   cancellation) into an error [`ToolResult`] for the model.
//!
//! Tools learn the caller's working directory, session and cancellation
//! from the [`ToolCallContext`], never by depending on the agent loop.
//!
//! ```
//! use dsh_system_prompt::{AssembleContext, SystemPrompt};
//! use dsh_tools::{
//!     Tool, ToolCallContext, ToolError, ToolOutput, ToolRegistry, ToolSelection, async_trait,
//!     parameters_for, parse_arguments,
//! };
//! use std::sync::Arc;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct AddArgs {
//!     /// The first term.
//!     a: i64,
//!     /// The second term.
//!     b: i64,
//! }
//!
//! struct Add;
//!
//! #[async_trait]
//! impl Tool for Add {
//!     fn name(&self) -> &str {
//!         "add"
//!     }
//!     fn description(&self) -> String {
//!         "Adds two integers and returns the sum.".to_owned()
//!     }
//!     fn parameters(&self) -> serde_json::Value {
//!         parameters_for::<AddArgs>()
//!     }
//!     async fn execute(
//!         &self,
//!         arguments: serde_json::Value,
//!         _cx: &ToolCallContext,
//!     ) -> Result<ToolOutput, ToolError> {
//!         let args: AddArgs = parse_arguments(self.name(), arguments)?;
//!         Ok(ToolOutput::new((args.a + args.b).to_string()))
//!     }
//! }
//!
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let tools = ToolRegistry::new();
//! tools.register(Arc::new(Add))?;
//! assert!(tools.register(Arc::new(Add)).is_err()); // one tool per name
//!
//! let prompt = SystemPrompt::empty();
//! let _installed = tools.install(&prompt)?;
//! let cx = AssembleContext::new().with(ToolSelection::new(["add"]));
//! assert_eq!(prompt.assemble(&cx).tools[0].name, "add");
//!
//! let cx = ToolCallContext::new("session-1");
//! assert_eq!(tools.call("add", r#"{"a": 2, "b": 3}"#, &cx).await.text, "5");
//! let bad = tools.call("add", r#"{"a": 2}"#, &cx).await;
//! assert!(bad.is_error);
//! assert_eq!(bad.text, "invalid arguments for tool `add`: `b`: required argument is missing");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod arguments;
mod command_output;
mod error;
mod input_file;
mod panic;
mod registry;
mod report;
mod selection;
mod table;
#[cfg(any(test, feature = "testing"))]
pub mod table_testing;
mod tool;
mod truncated;

pub use arguments::{parameters_for, parse_arguments};
pub use async_trait::async_trait;
pub use command_output::{CommandExit, CommandOutput, CommandReport};
pub use error::{ArgumentViolation, ToolError, ToolRegistryError};
pub use input_file::{
    InputFileError, MAX_INPUT_FILE_BYTES, NotRegular, open_regular, read_input_file, special_kind,
};
pub use panic::panic_message;
pub use registry::{ToolRegistry, ToolResolver};
pub use report::{FileChange, FileChanges, ToolLocation};
pub use selection::{ToolSelection, ToolSelectionExt, ToolSession};
pub use table::{Permission, PermissionTable, ProblemPlace, TableProblem};
pub use tool::{Tool, ToolCallContext, ToolKind, ToolOutput, ToolProgress, ToolResult};
pub use truncated::{complete_utf8_len, head_and_tail};
