//! Tests of the deployment layer through its public API: the user
//! documentation, the instruction files on a real file system, the
//! `print_prompt` example, the schema, the explanation of a prompt, the
//! comparison of two prompts, and the layering of the crate's rooms.
//!
//! They are modules of the crate's unit-test binary rather than a
//! `tests/` binary of their own: each test binary links the crate's whole
//! dependency graph, and a fresh `cargo test` (the README's command) pays
//! for every one.

mod check;
mod diff;
mod docs;
mod explain;
mod headless;
mod instructions;
mod layers;
mod print_prompt;
mod schema;
mod session;

use std::path::{Path, PathBuf};

/// The binary of this package's example `name`: `cargo test` builds a
/// package's examples beside its test binaries
/// (`target/<profile>/examples`).
pub(super) fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary is in target/<profile>/deps");
    let example = profile.join("examples").join(name);
    assert!(
        example.is_file(),
        "{} is not built: `cargo test -p dsh-deployment` builds it (`--lib` alone does not)",
        example.display()
    );
    example
}

/// The workspace's root, where the examples and the documents are.
pub(super) fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate is inside the workspace")
        .to_path_buf()
}
