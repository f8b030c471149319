//! The session store on a real file: what a session pays per event, what
//! an editor waits for when it loads a session, and what opening the store
//! adds to a process's start.
//!
//! ```text
//! cargo bench -p dsh-benches --bench session_store
//! ```
//!
//! Group `session_store`:
//!
//! - `record_event`: `SessionWriter::append` of one tool result of 2 KiB
//!   (one transaction, WAL, `synchronous = NORMAL`) onto a growing
//!   session — what the loop's recorder does for every event;
//! - `load_1000_events`: `Store::load` of a session of 1,000 events (a
//!   turn's mix: prompts, answers, calls, 2 KiB results), parsed and made
//!   whole — what `session/load` and `--continue` read;
//! - `open`: `Store::open` of an existing store (the schema checked, WAL
//!   set) — what `dsh run` and `dsh acp` add to their start.

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use dsh_agent_loop::{Event, ToolCall, TurnEndReason};
use dsh_session_store::{NewSession, Store};

/// A tool result of 2 KiB: about what a `read` of 40 lines returns.
fn result_text() -> String {
    "    let line = something(of, a, source, file); // and a comment\n".repeat(32)
}

/// The `n`th event of a realistic session: a turn of seven events.
fn event(n: usize) -> Event {
    match n % 7 {
        0 => Event::UserMessage {
            text: "Fix the failing test in the parser, then run the suite.".into(),
        },
        1 => Event::StepStart { step: 1 },
        2 => Event::AssistantMessage {
            text: "Let me read the parser first.".into(),
            thoughts: Vec::new(),
        },
        3 => Event::ToolCall {
            call: ToolCall::new(format!("call-{n}"), "read", r#"{"path":"src/parser.rs"}"#),
        },
        4 => Event::ToolResult {
            call_id: format!("call-{}", n - 1),
            name: "read".into(),
            text: result_text(),
            is_error: false,
            images: Vec::new(),
        },
        5 => Event::AssistantMessage {
            text: "The off-by-one is on line 12; fixed.".into(),
            thoughts: Vec::new(),
        },
        _ => Event::TurnEnd {
            reason: TurnEndReason::Completed,
            error: None,
        },
    }
}

fn session_store(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("dsh/sessions.db");
    let store = Store::open(&path).expect("the store opens");
    let mut group = c.benchmark_group("session_store");

    let writer = store
        .create(&NewSession::new("coder", "gpt-5").with_cwd("/work"))
        .expect("a session");
    let result = Event::ToolResult {
        call_id: "c1".into(),
        name: "read".into(),
        text: result_text(),
        is_error: false,
        images: Vec::new(),
    };
    group.bench_function("record_event", |b| {
        b.iter(|| writer.append(black_box(&result)).expect("recorded"))
    });
    drop(writer);

    let writer = store
        .create(&NewSession::new("coder", "gpt-5").with_cwd("/work"))
        .expect("a session");
    for n in 0..1_000 {
        writer.append(&event(n)).expect("recorded");
    }
    let id = writer.id().to_owned();
    drop(writer);
    group.bench_function("load_1000_events", |b| {
        b.iter(|| {
            let loaded = store.load(black_box(&id)).expect("loaded");
            assert_eq!(loaded.events.len(), 1_000 + loaded.closed.len());
            loaded
        })
    });

    group.bench_function("open", |b| {
        b.iter(|| Store::open(black_box(&path)).expect("the store opens"))
    });
    group.finish();
}

fn main() {
    dsh_benches::main(50, Duration::from_secs(5), &[session_store]);
}
