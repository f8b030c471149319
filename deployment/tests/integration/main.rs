//! Integration tests of the deployment layer.
//!
//! One test binary for the crate's integration tests: each file of
//! `tests/` would be a binary of its own that links the crate's whole
//! dependency graph, so the files are modules of this one instead.

mod docs;
mod instructions;
mod print_prompt;
mod schema;

use std::path::{Path, PathBuf};

/// The workspace's root, where the examples and the documents are.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate is inside the workspace")
        .to_path_buf()
}
