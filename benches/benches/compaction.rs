//! What deciding whether to compact costs a step (`ContextBudget::assess`,
//! the loop's pre-step seam), far below the budget and near it, beside
//! what a step of `dsh run --trace` pays to count the same request.
//!
//! ```text
//! cargo bench -p dsh-benches --bench compaction
//! ```
//!
//! The request is a coding session's: the system prompt and the five tool
//! schemas of the example coding agent's size (1.3 KB, 6.1 KB), and a
//! conversation of 30 steps, each an assistant message calling `read` and
//! a 2 KB result (~70 KB of messages). The next step adds one call and
//! its result. Group `compaction`, ids:
//!
//! - `far_below/known`: a 272k window, the size the API reported for the
//!   last request known — the common path: the new messages' lengths are
//!   added, nothing is counted;
//! - `far_below/unknown`: the same with no reported size (a scripted
//!   adapter, a resumed session's first step): every part's length;
//! - `near/known`: a window the request nearly fills: the new messages
//!   are counted with the tokenizer (the bound could reach the threshold);
//! - `near/unknown`: no reported size near the window: the whole request
//!   is counted, once (the next steps have a known size);
//! - `trace_step`: the least a step of `--trace` pays: the canonical parts
//!   of the whole request (each message's JSON), and the new ones counted
//!   (it also hashes the prefix and compares the parts, left out here);
//! - `messages`: `Session::messages`, what every step already pays to
//!   build the request, for scale.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::Criterion;
use dsh_agent_loop::{Assessment, ContextBudget, Event, KnownSize, Session, Tokenizer, ToolCall};
use dsh_system_prompt::ToolSchema;

const STEPS: usize = 30;

/// A file's content as `read` returns it: 2 KB of numbered lines.
fn file(step: usize) -> String {
    (1..=40)
        .map(|line| format!("{line:>6}\tlet value_{step}_{line} = compute({line}, \"{step}\");\n"))
        .collect()
}

fn tools() -> Vec<Arc<ToolSchema>> {
    let description = "Reads a file of the workspace and returns its lines, numbered. ".repeat(16);
    ["bash", "fork", "read", "task", "todo_write"]
        .into_iter()
        .map(|name| {
            Arc::new(ToolSchema::new(
                name,
                description.clone(),
                serde_json::json!({
                    "type": "object",
                    "properties": {
                        "file_path": {"type": "string", "description": "The file to read, absolute or relative to the working directory."},
                        "offset": {"type": "integer", "description": "The first line to read, from 1."},
                        "limit": {"type": "integer", "description": "How many lines to read at most."},
                    },
                    "required": ["file_path"],
                }),
            ))
        })
        .collect()
}

/// A session of `steps` steps reading files.
fn session(steps: usize) -> Session {
    let mut events = vec![Event::UserMessage {
        text: "Find where the value is computed wrong and fix it.".to_owned(),
    }];
    for step in 0..steps {
        let id = format!("call_{step}");
        events.push(Event::StepStart {
            step: u32::try_from(step).unwrap_or(u32::MAX) + 1,
        });
        events.push(Event::AssistantMessage {
            text: format!("Let me read file {step}."),
            thoughts: Vec::new(),
        });
        events.push(Event::ToolCall {
            call: ToolCall::new(
                &id,
                "read",
                format!("{{\"file_path\":\"src/file_{step}.rs\"}}"),
            ),
        });
        events.push(Event::ToolResult {
            call_id: id,
            name: "read".to_owned(),
            text: file(step),
            is_error: false,
            images: Vec::new(),
        });
    }
    Session::new().with_history(events)
}

#[allow(
    clippy::print_stdout,
    reason = "the bench reports the request it measures"
)]
fn compaction(c: &mut Criterion) {
    let system = "You are a coding agent. ".repeat(55);
    let tools = tools();
    let before = session(STEPS).messages();
    let messages = session(STEPS + 1).messages();
    let tokenizer = Tokenizer::for_model("gpt-5");
    let size = ContextBudget::for_model("gpt-5", Some(1_000_000), None)
        .count_request(&system, &tools, &before);
    let known = KnownSize {
        tokens: size,
        messages: before.len(),
        prefix: (system.len(), tools.len()),
    };
    let far = ContextBudget::for_model("gpt-5", None, None);
    // A window whose threshold the request with the new step crosses by
    // its count, not by its bound.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "a bench's window from a few thousand tokens"
    )]
    let near = ContextBudget::for_model("gpt-5", Some((size as f64 / 0.85) as u64 + 2_000), None);
    println!(
        "request: {} bytes of system prompt, {} tools, {} messages, {size} tokens before the step",
        system.len(),
        tools.len(),
        messages.len()
    );
    // The verdicts, once, outside timing: each case takes the path its
    // name says.
    assert!(matches!(
        far.assess(Some(known), &system, &tools, &messages),
        Assessment::FarBelow { .. }
    ));
    assert!(matches!(
        far.assess(None, &system, &tools, &messages),
        Assessment::FarBelow { .. }
    ));
    assert!(matches!(
        near.assess(Some(known), &system, &tools, &messages),
        Assessment::Below { .. }
    ));
    assert!(matches!(
        near.assess(None, &system, &tools, &messages),
        Assessment::Below { .. }
    ));

    let mut group = c.benchmark_group("compaction");
    group.bench_function("far_below/known", |b| {
        b.iter(|| far.assess(Some(known), &system, &tools, black_box(&messages)))
    });
    group.bench_function("far_below/unknown", |b| {
        b.iter(|| far.assess(None, &system, &tools, black_box(&messages)))
    });
    group.bench_function("near/known", |b| {
        b.iter(|| near.assess(Some(known), &system, &tools, black_box(&messages)))
    });
    group.bench_function("near/unknown", |b| {
        b.iter(|| near.assess(None, &system, &tools, black_box(&messages)))
    });
    group.bench_function("trace_step", |b| {
        b.iter(|| {
            // The canonical parts of the whole request…
            let mut parts = vec![system.clone()];
            parts.extend(
                tools
                    .iter()
                    .map(|tool| serde_json::to_string(&**tool).expect("JSON")),
            );
            parts.extend(
                black_box(&messages)
                    .iter()
                    .map(|message| serde_json::to_string(message).expect("JSON")),
            );
            // …and the new ones counted.
            let new = parts.len() - (messages.len() - before.len());
            parts[new..]
                .iter()
                .map(|part| tokenizer.count(part))
                .sum::<usize>()
        })
    });
    let full = session(STEPS + 1);
    group.bench_function("messages", |b| b.iter(|| black_box(&full).messages()));
    group.finish();
}

fn main() {
    dsh_benches::main(20, Duration::from_secs(3), &[compaction]);
}
