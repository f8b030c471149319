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
//! and traces requests; [`check`] turns a deployment's findings into data.
//!
//! This crate prints nothing: `dsh` (crate `dsh-cli`) is the front ends —
//! the terminal chat, the ACP server, the renderers, the error reporter.
//!
//! ```
//! use dsh_deployment::{Deployment, Runtime};
//! use dsh_system_prompt::render_prompt;
//!
//! // The built-in coding agent (`dsh prompt` without `--config`).
//! let deployment = dsh_deployment::load(None).expect("the embedded deployment is valid");
//! let agent = deployment.agent(None).expect("it has an agent").into_owned();
//! let runtime = Runtime::new(&deployment).expect("its registries build");
//! let session = Runtime::without_instructions(Some(std::path::Path::new("/work")));
//! let prompt = render_prompt(&runtime.assemble(&agent, &session)).expect("it renders");
//! assert!(prompt.contains("/work"));
//! # let _: &Deployment = &deployment;
//! ```

pub mod adapter;
pub mod check;
pub mod file;
pub mod host;
pub mod measure;
mod outputs;
pub mod problem;
pub mod runtime;

pub use file::{AgentSpec, Deployment};
pub use outputs::check_output;
pub use problem::{Problem, SourceFile};
pub use runtime::{Runtime, load, load_agent};
