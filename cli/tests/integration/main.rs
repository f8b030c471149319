//! Integration tests of the `dsh` command.
//!
//! One test binary for the crate's integration tests: each file of
//! `tests/` is a binary of its own that links the crate's whole
//! dependency graph, so the files are modules of this one instead.
//! A file that declares static contributions (`#[prompt_section]`,
//! `#[prompt_variable]`) stays a binary of its own: `SystemPrompt::new`
//! installs every static linked into the process.

#[path = "../common/mod.rs"]
mod common;

mod acp;
mod acp_mcp;
mod acp_questions;
mod anthropic;
mod check;
mod compaction;
mod context;
mod diff;
mod docs;
mod files;
mod harden;
mod instructions;
mod mcp;
mod mcp_2026;
mod mcp_login;
mod prompt;
mod rules;
mod run;
mod schema;
mod sessions;
mod trace;
mod trust;
