//! Counting the tokens of the W1 and W2 workloads' rendered prompts and
//! tool schemas, as `dsh prompt --format explain` and `dsh check` do,
//! beside assembling and rendering the same prompt.
//!
//! ```text
//! cargo bench -p dsh-benches --bench tokens
//! cargo bench -p dsh-benches --bench tokens --features bpe-openai   # with issue 33's candidate
//! ```
//!
//! Group `tokens`, ids `<what>/<workload>`:
//!
//! - `assemble_render`: `assemble` + `render_prompt`, what every step
//!   pays (the `dsh` figure of the `assemble` bench), for the ratio;
//! - `system_prompt`: `Tokenizer::count_sections` (`count_ranges` over the
//!   rendered prompt and its sections' ranges) — the prompt encoded once, each token
//!   attributed to its section;
//! - `system_prompt_whole`: `Tokenizer::count` of the same text, without
//!   the attribution, for what the attribution costs;
//! - `tool_schemas`: each tool schema's compact JSON, serialized and
//!   counted, as the CLI's `PromptTokens` does;
//! - `bpe_openai_whole` (feature `bpe-openai`): the same count with
//!   `bpe-openai` (GitHub's `bpe`), the candidate of issue 33, side by side
//!   with `tiktoken-rs`, which `Tokenizer` counts with; the two counts are
//!   checked equal, of the prompt and of each tool schema, before anything
//!   is timed.
//!
//! Group `tokens_build` (workload-free), what a process pays once, on its
//! first count, building the `o200k_base` encoding:
//!
//! - `first_count/dsh`, `first_count/tiktoken-rs` and (feature
//!   `bpe-openai`) `first_count/bpe-openai`: a fresh process's first count
//!   of one short text (`Tokenizer::count`, from its lean rank tables;
//!   `tiktoken-rs`'s `o200k_base`, built; `bpe-openai`'s `o200k_base`),
//!   timed inside that process — the bench
//!   runs itself as the child — so each sample pays what `dsh` pays: page
//!   faults of the tables and all;
//! - `o200k_base_build`: `tiktoken-rs` building a new `o200k_base` in this
//!   process (`bpe-openai` builds its encodings once per process, in a
//!   static, so it has no such figure).
//!
//! The tokenizer is the one `gpt-5` selects, `o200k_base`. Workloads are
//! read as the `assemble` bench reads them (`../shared/bench`, or
//! `$DSH_BENCH_DIR`).

use std::hint::black_box;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use dsh_agent_loop::Tokenizer;
use dsh_benches::{Workload, WorkloadPrompt};
use dsh_system_prompt::inspect::render_prompt_with_spans;
use dsh_system_prompt::{AssembleContext, PromptAssembly, ToolSchema, render_prompt};

/// The workload `name`'s registry, its tool schemas prebuilt.
fn load(name: &str) -> WorkloadPrompt {
    let workload = Workload::load(name);
    let tools: Vec<Arc<ToolSchema>> = workload.tools.iter().cloned().map(Arc::new).collect();
    WorkloadPrompt::new(&workload, &tools)
}

/// `registry`'s assembly, as every step makes it.
fn assemble(registry: &WorkloadPrompt) -> PromptAssembly {
    registry.prompt.assemble(&AssembleContext::default())
}

fn count_tool_schemas(tokenizer: Tokenizer, tools: &[Arc<ToolSchema>]) -> usize {
    tools
        .iter()
        .map(|tool| tokenizer.count(&serde_json::to_string(&**tool).expect("JSON")))
        .sum()
}

#[allow(clippy::print_stdout, reason = "the bench reports what it counts")]
fn tokens(c: &mut Criterion) {
    let tokenizer = Tokenizer::for_model("gpt-5");
    let mut group = c.benchmark_group("tokens");
    for name in ["W1", "W2"] {
        let registry = load(name);
        let assembly = assemble(&registry);
        let prompt = render_prompt_with_spans(&assembly).expect("render");
        // Once, outside timing: the counts, and that the parts add up.
        let counts = tokenizer.count_sections(&prompt);
        assert_eq!(counts.total, tokenizer.count(&prompt.text));
        #[cfg(feature = "bpe-openai")]
        let bpe = bpe_openai::o200k_base();
        #[cfg(feature = "bpe-openai")]
        {
            assert_eq!(counts.total, bpe.count(prompt.text.as_str()));
            for tool in &assembly.tools {
                let json = serde_json::to_string(&**tool).expect("JSON");
                assert_eq!(tokenizer.count(&json), bpe.count(json.as_str()));
            }
        }
        let schemas = count_tool_schemas(tokenizer, &assembly.tools);
        let schema_bytes: usize = assembly
            .tools
            .iter()
            .map(|tool| serde_json::to_string(&**tool).expect("JSON").len())
            .sum();
        println!(
            "{name}: system prompt {} bytes, {} tokens in {} sections; {} tool schemas {schema_bytes} bytes, {schemas} tokens",
            prompt.text.len(),
            counts.total,
            prompt.sections.len(),
            assembly.tools.len(),
        );

        group.throughput(Throughput::Bytes(prompt.text.len() as u64));
        group.bench_function(format!("assemble_render/{name}"), |b| {
            b.iter(|| render_prompt(&assemble(&registry)).expect("render"))
        });
        group.bench_function(format!("system_prompt/{name}"), |b| {
            b.iter(|| tokenizer.count_sections(black_box(&prompt)))
        });
        group.bench_function(format!("system_prompt_whole/{name}"), |b| {
            b.iter(|| tokenizer.count(black_box(&prompt.text)))
        });
        #[cfg(feature = "bpe-openai")]
        group.bench_function(format!("bpe_openai_whole/{name}"), |b| {
            b.iter(|| bpe.count(black_box(prompt.text.as_str())))
        });
        group.throughput(Throughput::Bytes(schema_bytes as u64));
        group.bench_function(format!("tool_schemas/{name}"), |b| {
            b.iter(|| count_tool_schemas(tokenizer, black_box(&assembly.tools)))
        });
    }
    group.finish();

    let mut build = c.benchmark_group("tokens_build");
    build.sample_size(10);
    let crates = [
        Some(DSH),
        Some(TIKTOKEN_RS),
        cfg!(feature = "bpe-openai").then_some(BPE_OPENAI),
    ];
    for crate_name in crates.into_iter().flatten() {
        build.bench_function(format!("first_count/{crate_name}"), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| first_count_in_child(crate_name)).sum())
        });
    }
    build.bench_function("o200k_base_build", |b| {
        b.iter(|| tiktoken_rs::o200k_base().expect("the shipped ranks build"))
    });
    build.finish();
}

const BPE_OPENAI: &str = "bpe-openai";
const DSH: &str = "dsh";
const TIKTOKEN_RS: &str = "tiktoken-rs";

/// Set in the child that times a first count: the crate to count with.
const FIRST_COUNT: &str = "DSH_BENCH_FIRST_COUNT";

/// The first count of a fresh process counting with `crate_name`, as the
/// child (this bench, run again) timed and printed it.
fn first_count_in_child(crate_name: &str) -> Duration {
    let exe = std::env::current_exe().expect("the bench's own path");
    let output = Command::new(exe)
        .env(FIRST_COUNT, crate_name)
        .output()
        .expect("the bench runs as a child");
    assert!(output.status.success(), "{output:?}");
    let nanos = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .expect("the child prints nanoseconds");
    Duration::from_nanos(nanos)
}

/// The child's part: one first count with `crate_name`, its time printed
/// in nanoseconds.
#[allow(clippy::print_stdout, reason = "the parent reads the figure")]
fn first_count(crate_name: &str) {
    let text = "Check the exit code.";
    let start = Instant::now();
    let count = match crate_name {
        DSH => Tokenizer::for_model("gpt-5").count(text),
        TIKTOKEN_RS => tiktoken_rs::o200k_base_singleton()
            .encode_ordinary(text)
            .len(),
        #[cfg(feature = "bpe-openai")]
        BPE_OPENAI => bpe_openai::o200k_base().count(text),
        other => panic!("no crate `{other}` to count with"),
    };
    let elapsed = start.elapsed();
    assert_eq!(count, 5);
    println!("{}", elapsed.as_nanos());
}

/// The benches, but a child asked for a first count does only that.
fn main() {
    if let Ok(crate_name) = std::env::var(FIRST_COUNT) {
        first_count(&crate_name);
        return;
    }
    dsh_benches::main(20, Duration::from_secs(5), &[tokens]);
}
