//! Benchmarks of the dsh workspace. Its one piece of code is the loader of
//! the shared workloads ([`Workload::load`]); its benchmarks are under
//! `benches/`, each with the command that runs it in its module
//! documentation:
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

use std::collections::BTreeMap;
use std::path::PathBuf;

use dsh_system_prompt::ToolSchema;
use serde::Deserialize;

/// A workload file of `../shared/bench/`: `{ sections, variables, tools }`.
#[derive(Debug, Deserialize)]
pub struct Workload {
    /// The sections, in no particular order.
    pub sections: Vec<Section>,
    /// Each variable's value.
    pub variables: BTreeMap<String, String>,
    /// The tool schemas.
    pub tools: Vec<ToolSchema>,
}

/// A section of a workload.
#[derive(Debug, Deserialize)]
pub struct Section {
    /// Its name.
    pub name: String,
    /// Its order.
    pub order: i32,
    /// As written in the file: references are `{{name}}`.
    pub text: String,
}

impl Workload {
    /// The workload `name` (`W1`, `W2`, `W3`), read from
    /// `$CARGO_MANIFEST_DIR/../../shared/bench`, or from `$DSH_BENCH_DIR`.
    /// Panics when it cannot be read: a benchmark without its input has
    /// nothing to measure.
    pub fn load(name: &str) -> Self {
        let path = bench_dir().join(format!("{name}.json"));
        let json = std::fs::read_to_string(&path)
            .unwrap_or_else(|error| panic!("reading {}: {error}", path.display()));
        serde_json::from_str(&json)
            .unwrap_or_else(|error| panic!("parsing {}: {error}", path.display()))
    }
}

fn bench_dir() -> PathBuf {
    let beside = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/bench"));
    if beside.join("W1.json").is_file() {
        return beside;
    }
    match std::env::var_os("DSH_BENCH_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => panic!(
            "no workloads in {} and DSH_BENCH_DIR is not set",
            beside.display()
        ),
    }
}
