//! Cross-crate tests of the dsh workspace. This crate has no code of its
//! own; its tests are the product:
//!
//! - `tests/ui.rs` runs the trybuild UI tests under `ui/`: one file per
//!   mistake the macros reject (`ui/<macro>/<mistake>.rs`, with the exact
//!   diagnostic in `<mistake>.stderr`), and pass cases under `ui/pass/`.
//!   Regenerate the snapshots with `TRYBUILD=overwrite cargo test -p
//!   dsh-tests --test ui`, then read every changed `.stderr`.
//! - `tests/static_registry.rs` declares sections and variables with the
//!   macros and checks what `SystemPrompt::new()` installs.
//! - `tests/cross_crate_duplicate.rs` links two fixture crates that declare
//!   the same section name, and checks that building the registry fails
//!   naming both.
//! - `benches/install_static.rs` times `SystemPrompt::new()` installing
//!   1,000 static sections; `build-bench/run.sh` times building them.
