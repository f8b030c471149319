//! The deployment layer of dsh: what every front end of an agent shares,
//! and nothing that talks to a person.
//!
//! A deployment file (`dsh.toml`) becomes a checked
//! [`Deployment`](file::Deployment) (every problem located in the file, as
//! a [`Problem`]); a [`Runtime`](runtime::Runtime) builds its registries
//! (the prompt, the tools, the MCP servers); the [`host`] owns the
//! lifecycle the front ends share — sessions started, resumed and
//! recorded, signals that end them, children stopped — and [`session`]
//! what happens in a session (what a person types, a session opened). The
//! rules both need have one owner each: [`policy`] (what a child may see
//! or do and what needs a yes) and [`facts`] (what a session brings from
//! outside the binary: instruction files, a client's prompt, attachments,
//! its working directory). [`measure`] counts and traces requests;
//! [`reports`] turns a deployment's findings into data (`dsh check`) and
//! compares two request prefixes of an agent (`dsh diff`).
//!
//! The rooms are layers, each importing only its own layer or lower ones
//! (a test keeps it so): the foundation (`Problem`, [`measure`]), then
//! [`policy`], [`facts`], [`file`](mod@file), `adapter` and [`runtime`], [`host`],
//! [`session`], and [`reports`] on top.
//!
//! This crate prints nothing: `dsh` (crate `dsh-cli`) is the front ends —
//! the terminal chat, the ACP server, the renderers, the error reporter.
//!
//! ```
//! use dsh_deployment::reports::agent_prompt::{AgentPrompt, ServerStart};
//!
//! // The built-in coding agent (`dsh prompt` without `--config`), as a
//! // session in `/` would get it.
//! let shown = AgentPrompt::load(None, None, Some(std::path::Path::new("/")), ServerStart::Leave)
//!     .map_err(|problems| problems[0].message().to_owned())?;
//! let prompt = shown.render().map_err(|problems| problems[0].message().to_owned())?;
//! assert!(prompt.starts_with("You are dsh"));
//! # Ok::<(), String>(())
//! ```

#![deny(missing_docs)]

// The rooms, bottom layer first: a room imports only its own layer or
// lower ones (`tests/layers.rs` keeps it so).

// 1. The foundation: problems, and measurements of requests.
pub mod measure;
mod problem;

// 2. What a child may see or do, and what needs a yes.
pub mod policy;

// 3. What a session brings from outside the binary.
pub mod facts;

// 4. The deployment file.
pub mod file;

// 5. The deployment brought to life: its adapter, its registries.
mod adapter;
pub mod runtime;

// 6. One agent hosted for a front end, and its lifecycle.
pub mod host;

// 7. What happens between opening a session and closing it.
pub mod session;

// 8. Findings and comparisons.
pub mod reports;

#[cfg(test)]
mod tests;

pub use problem::{Problem, SourceFile};
