//! What a call of the file tools costs, through the tool registry as the
//! agent loop calls them, on a real file on disk: the overhead a model's
//! `read` or `edit` adds to a turn whose model request takes seconds.
//!
//! ```text
//! cargo bench -p dsh-benches --bench file_tools
//! ```
//!
//! Group `file_tools`, ids `<call>/<size>`, for a source-like file of
//! 2,000 lines (`64KiB`) and one of 32,000 lines (`1MiB`):
//!
//! - `read`: `read` of the first 2,000 lines (its default window), which
//!   also counts the rest and records what the session saw (SHA-256 of
//!   the whole file);
//! - `edit`: `edit` of one line in the middle, alternating between two
//!   texts so that every call changes the file: read the current text,
//!   check it against what the session saw, replace, write a temporary
//!   file, `fsync` it, rename it over the file.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::Criterion;
use dsh_tool_fs::{EditTool, Observations, ReadTool};
use dsh_tools::{ToolCallContext, ToolRegistry};

fn file_tools(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let observations = Observations::new();
    let tools = ToolRegistry::new();
    tools
        .register(Arc::new(
            ReadTool::new().with_observations(observations.clone()),
        ))
        .expect("read");
    tools
        .register(Arc::new(EditTool::new().with_observations(observations)))
        .expect("edit");
    let dir = tempfile::tempdir().expect("tempdir");
    let cx = ToolCallContext::new("bench").with_cwd(dir.path());

    let mut group = c.benchmark_group("file_tools");
    for (size, lines) in [("64KiB", 2_000), ("1MiB", 32_000)] {
        let name = format!("{size}.rs");
        let text: String = (0..lines)
            .map(|n| format!("    let value_{n:05} = compute({n}, \"text\");\n"))
            .collect();
        std::fs::write(dir.path().join(&name), &text).expect("write");
        let read = serde_json::json!({ "file_path": name }).to_string();
        group.bench_function(format!("read/{size}"), |b| {
            b.iter(|| {
                let result = runtime.block_on(tools.call("read", &read, &cx));
                assert!(!result.is_error, "{}", result.text);
                black_box(result)
            });
        });
        let middle = format!("value_{:05} =", lines / 2);
        let edits = [
            serde_json::json!({ "file_path": name, "old_string": middle, "new_string": "renamed =" }),
            serde_json::json!({ "file_path": name, "old_string": "renamed =", "new_string": middle }),
        ]
        .map(|arguments| arguments.to_string());
        let mut turn = 0;
        group.bench_function(format!("edit/{size}"), |b| {
            b.iter(|| {
                let result = runtime.block_on(tools.call("edit", &edits[turn % 2], &cx));
                turn += 1;
                assert!(!result.is_error, "{}", result.text);
                black_box(result)
            });
        });
    }
    group.finish();
}

fn main() {
    dsh_benches::main(30, Duration::from_secs(3), &[file_tools]);
}
