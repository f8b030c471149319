//! Cross-crate tests of the dsh workspace. This crate has no code of its
//! own; its tests are the product:
//!
//! - `tests/static_registry.rs` declares sections and variables with the
//!   macros and checks what `SystemPrompt::new()` installs.
//! - `tests/cross_crate_duplicate.rs` links two fixture crates that declare
//!   the same section name, and checks that building the registry fails
//!   naming both.
//! - `tests/workspace_registry.rs` links every library of the workspace
//!   and checks every owner of the registry they build together.
//!
//! The macros' UI tests are in `macros/ui/tests/ui.rs` (crate
//! `dsh-macros-ui-tests`), so that trybuild builds them against the facade
//! alone; the benchmarks are in `benches/`.
