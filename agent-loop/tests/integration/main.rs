//! Integration tests of `dsh-agent-loop`.
//!
//! One test binary for the crate's integration tests: each file of
//! `tests/` is a binary of its own that links the crate's whole
//! dependency graph, so the files are modules of this one instead.
//! A file that declares static contributions (`#[prompt_section]`,
//! `#[prompt_variable]`) stays a binary of its own: `SystemPrompt::new`
//! installs every static linked into the process.

#[path = "../support/mod.rs"]
mod support;

mod anthropic;
mod compaction;
mod context;
mod openai;
mod prompt;
mod tool_guidance;
mod turns;
