//! Benchmarks of the dsh workspace. This crate has no code of its own;
//! its benchmarks are under `benches/`, each with the command that runs it
//! in its module documentation:
//!
//! - `assemble`: `SystemPrompt::assemble` + `render_prompt` on the shared
//!   workloads, against minijinja, handlebars and the floor
//!   (`ASSEMBLE_RESULTS.md`);
//! - `parse`: the template grammar, linear in its input
//!   (`PARSE_RESULTS.md`);
//! - `install_static`: `SystemPrompt::new()` installing the 1,000 sections
//!   of `fixtures/thousand-sections`;
//! - `tokens`: counting the tokens of W1's and W2's rendered prompts and
//!   tool schemas, beside assembling them (`BENCHMARKS.md`);
//! - `build-bench/run.sh`: the build time of the macros against plain
//!   items and bare `inventory::submit!` (`BUILD_RESULTS.md`).
//!
//! The crate's library and benchmarks are not tests, so `cargo test
//! --workspace` builds none of them or their dependencies.
