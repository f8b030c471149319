//! Benchmarks of the dsh workspace. Its code is what the benchmarks share:
//! the loader of the shared workloads ([`Workload::load`]), the registry
//! holding one ([`WorkloadPrompt`]) and the criterion settings
//! ([`criterion()`]); its benchmarks are under `benches/`, each with the
//! command that runs it in its module documentation:
//!
//! - `assemble`: `SystemPrompt::assemble` + `render_prompt` on the shared
//!   workloads, against minijinja, handlebars and the floor
//!   (`BENCHMARKS.md`);
//! - `parse`: the template grammar, linear in its input
//!   (`BENCHMARKS.md`; the full table of 2026-12-02 in `PARSE_RESULTS.md`);
//! - `install_static`: `SystemPrompt::new()` installing the 1,000 sections
//!   of `fixtures/thousand-sections`;
//! - `tokens`: counting the tokens of W1's and W2's rendered prompts and
//!   tool schemas, beside assembling them (`BENCHMARKS.md`);
//! - `session_store`: recording one event, loading a session of 1,000
//!   events, opening the store (`BENCHMARKS.md`, issue 38);
//! - `file_tools`: a call of `read` and of `edit` on a real file, through
//!   the tool registry (`BENCHMARKS.md`);
//! - `build-bench/run.sh`: the build time of the macros against plain
//!   items and bare `inventory::submit!` (`BUILD_RESULTS.md`).
//!
//! The crate's library and benchmarks are not tests, so `cargo test
//! --workspace` builds none of them or their dependencies.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use criterion::Criterion;
use dsh_system_prompt::{
    AssembleContext, PromptSection, Registration, Scope, ScopeId, SystemPrompt, Text, ToolSchema,
};
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

/// A registry holding a workload: its sections (`{{name}}` written as
/// `<<name>>`, see [`to_dsh`]), one provider per variable, and one tool
/// provider returning a clone of a prebuilt `Vec<Arc<ToolSchema>>`.
#[derive(Debug)]
pub struct WorkloadPrompt {
    /// The registry.
    pub prompt: SystemPrompt,
    _registrations: Vec<Registration>,
}

impl WorkloadPrompt {
    /// Registers `workload`'s sections and variables, and `tools`, in an
    /// empty registry. Panics when one does not register: a benchmark of
    /// another prompt measures nothing.
    pub fn new(workload: &Workload, tools: &[Arc<ToolSchema>]) -> Self {
        Self::with_values(workload, tools, false)
    }

    /// Like [`new`](Self::new), but the value of the first variable a
    /// section references changes at every assembly: it alternates between its value and that value
    /// reversed (the same length, so the prompt's length stays the same).
    /// No two assemblies in a row have the same inputs, so a render never
    /// recalls the previous one.
    pub fn changing(workload: &Workload, tools: &[Arc<ToolSchema>]) -> Self {
        Self::with_values(workload, tools, true)
    }

    fn with_values(workload: &Workload, tools: &[Arc<ToolSchema>], changing: bool) -> Self {
        let prompt = SystemPrompt::empty();
        let mut registrations = Vec::new();
        for section in &workload.sections {
            let text = to_dsh(&section.text);
            let section = PromptSection::new(section.name.clone(), section.order, text);
            registrations.push(prompt.section(section).expect("register section"));
        }
        let referenced = |name: &str| {
            let reference = format!("<<{name}>>");
            workload
                .sections
                .iter()
                .any(|section| to_dsh(&section.text).contains(&reference))
        };
        let changing = changing
            .then(|| workload.variables.keys().find(|name| referenced(name)))
            .flatten();
        for (name, value) in &workload.variables {
            // A known value, kept as `Text`: shared at every assembly.
            let value = Text::from(value.clone());
            let registration = if changing == Some(name) {
                let reversed = Text::from(value.chars().rev().collect::<String>());
                let flip = AtomicBool::new(false);
                prompt.variable(name.clone(), move |_| {
                    let flipped = flip.fetch_xor(true, Ordering::Relaxed);
                    Some(if flipped {
                        reversed.clone()
                    } else {
                        value.clone()
                    })
                })
            } else {
                prompt.variable(name.clone(), move |_| Some(value.clone()))
            };
            registrations.push(registration.expect("register variable"));
        }
        let tools = tools.to_vec();
        registrations.push(
            prompt
                .tools("workload", move |_| tools.clone())
                .expect("register tools"),
        );
        Self {
            prompt,
            _registrations: registrations,
        }
    }

    /// Makes the registry a three-layer one, global → preset → agent: the
    /// preset shadows the workload's first section, the agent its second
    /// section and first variable, each with the same text, so the output
    /// stays byte-identical. Returns the context of an assembly through
    /// all three layers.
    pub fn with_layers(&mut self, workload: &Workload) -> AssembleContext {
        let (preset, agent) = (ScopeId::preset("bench"), ScopeId::agent("bench"));
        let shadows = [
            (&preset, &workload.sections[0]),
            (&agent, &workload.sections[1]),
        ];
        for (scope, section) in shadows {
            let section =
                PromptSection::new(section.name.clone(), section.order, to_dsh(&section.text));
            let registration = self.prompt.in_scope(scope.clone()).section(section);
            self._registrations
                .push(registration.expect("register a shadow"));
        }
        if let Some((name, value)) = workload.variables.iter().next() {
            let value = Text::from(value.clone());
            let registration = self
                .prompt
                .in_scope(agent.clone())
                .variable(name.clone(), move |_| Some(value.clone()));
            self._registrations
                .push(registration.expect("register a shadow"));
        }
        AssembleContext::new().with_scope(Scope::new([preset, agent]))
    }
}

/// `{{name}}` (optionally with spaces inside) becomes `<<name>>`. Panics on
/// anything the conversion could get wrong: other `{`/`}` pairs, or text
/// that already contains `<<`.
pub fn to_dsh(text: &str) -> String {
    assert!(!text.contains("<<"), "section text already contains `<<`");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after.find("}}").expect("`{{` without `}}`");
        let name = after[..close].trim();
        assert!(
            dsh_system_prompt::template::is_variable_name(name),
            "not a reference: {{{{{name}}}}}"
        );
        out.push_str("<<");
        out.push_str(name);
        out.push_str(">>");
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    out
}

/// Modest criterion settings: `samples` samples, each measured for
/// `measurement` after a second of warm-up. The benchmark machine has two
/// cores, and the point is the shape across cases, not the last percent.
pub fn criterion(samples: usize, measurement: Duration) -> Criterion {
    Criterion::default()
        .sample_size(samples)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(measurement)
}

/// A bench binary's `main`: runs `targets` with [`criterion()`]'s settings
/// (`samples`, `measurement`), as criterion's `criterion_group!` and
/// `criterion_main!` would, the command line's options applied.
pub fn main(samples: usize, measurement: Duration, targets: &[fn(&mut Criterion)]) {
    let mut criterion = criterion(samples, measurement).configure_from_args();
    for target in targets {
        target(&mut criterion);
    }
    criterion.final_summary();
}
