//! Integration tests of `dsh-tool-bash`.
//!
//! One test binary for the crate's integration tests: each file of
//! `tests/` is a binary of its own that links the crate's whole
//! dependency graph, so the files are modules of this one instead.
//! A file that declares static contributions (`#[prompt_section]`,
//! `#[prompt_variable]`) stays a binary of its own: `SystemPrompt::new`
//! installs every static linked into the process.

use std::sync::Arc;

use dsh_tools::{Tool, ToolRegistry};

mod bash;
mod guidance;

/// A tool registry holding `tools`, in that order.
fn registry(tools: &[Arc<dyn Tool>]) -> ToolRegistry {
    let registry = ToolRegistry::new();
    for tool in tools {
        registry.register(Arc::clone(tool)).expect("tool registers");
    }
    registry
}
