//! Integration tests of `dsh-prompt-template`.
//!
//! One test binary for the crate's integration tests: each file of
//! `tests/` is a binary of its own that links the crate's whole
//! dependency graph, so the files are modules of this one instead.
//! A file that declares static contributions (`#[prompt_section]`,
//! `#[prompt_variable]`) stays a binary of its own: `SystemPrompt::new`
//! installs every static linked into the process.

mod errors;
mod escape_literal;
mod grammar;
mod names;
mod properties;
mod render;
