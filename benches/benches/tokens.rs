//! Counting the tokens of the W1 and W2 workloads' rendered prompts and
//! tool schemas, as `dsh prompt --format explain` and `dsh check` do,
//! beside assembling and rendering the same prompt.
//!
//! ```text
//! cargo bench -p dsh-benches --bench tokens
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
//! - `o200k_base_build` (workload-free): building the BPE from the ranks
//!   the crate ships, which a process pays once, on its first count.
//!
//! The tokenizer is the one `gpt-5` selects, `o200k_base`. Workloads are
//! read as the `assemble` bench reads them (`../shared/bench`, or
//! `$DSH_BENCH_DIR`).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
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
        group.throughput(Throughput::Bytes(schema_bytes as u64));
        group.bench_function(format!("tool_schemas/{name}"), |b| {
            b.iter(|| count_tool_schemas(tokenizer, black_box(&assembly.tools)))
        });
    }
    group.finish();

    let mut build = c.benchmark_group("tokens_build");
    build.sample_size(10);
    build.bench_function("o200k_base_build", |b| {
        b.iter(|| tiktoken_rs::o200k_base().expect("the shipped ranks build"))
    });
    build.finish();
}

criterion_group! {
    name = benches;
    config = dsh_benches::criterion(20, Duration::from_secs(5));
    targets = tokens
}
criterion_main!(benches);
