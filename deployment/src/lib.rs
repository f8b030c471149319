//! The deployment layer of dsh: what every front end of an agent shares,
//! and nothing that talks to a person.
//!
//! A deployment file (`dsh.toml`) becomes a checked [`Deployment`] (every
//! problem located in the file, as a [`Problem`]); a [`Runtime`] builds its
//! registries (the prompt, the tools, the MCP servers); the [`host`] owns
//! the lifecycle the front ends share — sessions started, resumed and
//! recorded, signals that end them, children stopped — and the rules both
//! need (the tokenizer of an agent, the slash commands, a session for a
//! working directory, what a child process may see). [`measure`] counts
//! and traces requests; [`check`] turns a deployment's findings into data;
//! [`diff`] compares two request prefixes of an agent (`dsh diff`);
//! [`always`] decides what a person's "always allow" of a tool call covers.
//!
//! This crate prints nothing: `dsh` (crate `dsh-cli`) is the front ends —
//! the terminal chat, the ACP server, the renderers, the error reporter.
//!
//! ```
//! use dsh_deployment::host::{AgentPrompt, McpServers};
//!
//! // The built-in coding agent (`dsh prompt` without `--config`), as a
//! // session in `/` would get it.
//! let shown = AgentPrompt::load(None, None, Some(std::path::Path::new("/")), McpServers::Leave)
//!     .map_err(|problems| problems[0].message().to_owned())?;
//! let prompt = shown.render().map_err(|problems| problems[0].message().to_owned())?;
//! assert!(prompt.starts_with("You are dsh"));
//! # Ok::<(), String>(())
//! ```

#![deny(missing_docs)]

pub mod adapter;
pub mod always;
pub mod check;
pub mod diff;
pub mod file;
pub mod host;
pub mod measure;
mod outputs;
pub mod problem;
pub mod runtime;
pub mod session;
#[cfg(test)]
mod tests;

pub use file::{AgentSpec, Deployment};
pub use outputs::check_output;
pub use problem::{Problem, SourceFile};
pub use runtime::{Runtime, load, load_agent};
