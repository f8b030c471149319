//! The bash tool's contract, exercised through the tool registry as the
//! agent loop calls it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dsh_tool_bash::{BashTool, OUTPUT_CAP_BYTES};
use dsh_tools::{CommandOutput, CommandReport, ToolCallContext, ToolResult};
use serde_json::json;

async fn bash_in(cx: &ToolCallContext, arguments: serde_json::Value) -> ToolResult {
    let tools = crate::registry(&[Arc::new(BashTool::new())]);
    let arguments = arguments.to_string();
    let call = tools.call("bash", &arguments, cx);
    // A regression that hangs fails the test instead of stalling the suite.
    tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("the bash call returns")
}

async fn bash(command: &str) -> ToolResult {
    bash_in(&ToolCallContext::new("test"), json!({ "command": command })).await
}

/// Whether process `pid` still runs (a zombie waiting to be reaped by an
/// init that does not reap counts as gone: it runs nothing).
fn is_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next());
            !matches!(state, Some("Z" | "X"))
        }
        Err(_) => false,
    }
}

fn pid_after(text: &str, label: &str) -> u32 {
    text.lines()
        .find_map(|line| line.strip_prefix(label))
        .and_then(|pid| pid.trim().parse().ok())
        .unwrap_or_else(|| panic!("no `{label}` line in {text:?}"))
}

async fn eventually_gone(pid: u32) -> bool {
    for _ in 0..100 {
        if !is_running(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn exit_zero_has_no_marker() {
    assert_eq!(bash("echo hello").await, ToolResult::ok("hello\n"));
    assert_eq!(bash("true").await, ToolResult::ok("(no output)"));
}

#[tokio::test]
async fn a_non_zero_exit_is_a_result_with_the_exit_code() {
    assert_eq!(
        bash("echo out; echo err >&2; exit 1").await,
        ToolResult::ok("out\nerr\n[exit code: 1]")
    );
    assert_eq!(
        bash("printf no-newline; exit 137").await,
        ToolResult::ok("no-newline\n[exit code: 137]")
    );
}

#[tokio::test]
async fn a_shell_killed_by_sigkill_is_reported_as_the_signal() {
    // `kill -9 $$` is what a shell reports as exit status 137.
    assert_eq!(
        bash("echo before; kill -9 $$; echo after").await,
        ToolResult::ok("before\n[killed by signal: SIGKILL]")
    );
}

#[tokio::test]
async fn a_signal_is_reported_by_name() {
    assert_eq!(
        bash("kill -TERM $$").await,
        ToolResult::ok("[killed by signal: SIGTERM]")
    );
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let started = Instant::now();
    // The child ignores SIGTERM, so only a SIGKILL to the group ends it.
    let result = bash_in(
        &ToolCallContext::new("test"),
        json!({
            "command": "trap '' TERM; sleep 30 & echo \"child $!\"; wait",
            "timeout_ms": 300,
        }),
    )
    .await;
    assert!(!result.is_error, "{result:?}");
    assert!(
        result.text.ends_with("\n[timed out after 300 ms]"),
        "{result:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    let child = pid_after(&result.text, "child ");
    assert!(
        eventually_gone(child).await,
        "the child {child} outlived the timeout"
    );
}

#[tokio::test]
async fn cancellation_is_a_tool_error_and_kills_the_group() {
    let cx = ToolCallContext::new("test");
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pid");
    let cancel = cx.cancel.clone();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let command = format!(
        "trap '' TERM; sleep 30 & echo $! > {}; wait",
        pid_file.display()
    );
    let result = bash_in(&cx, json!({ "command": command })).await;
    canceller.await.expect("the canceller ran");
    assert!(result.is_error, "{result:?}");
    assert_eq!(result.text, "tool `bash` was cancelled before it finished");
    let child: u32 = std::fs::read_to_string(&pid_file)
        .expect("the command wrote its child's pid")
        .trim()
        .parse()
        .expect("a pid");
    assert!(
        eventually_gone(child).await,
        "the child {child} outlived the cancellation"
    );
}

#[tokio::test]
async fn output_over_the_cap_is_truncated_with_a_notice() {
    let result = bash("head -c 100000 /dev/zero | tr '\\0' a; echo; echo the-end; exit 2").await;
    assert!(!result.is_error);
    let total = 100_000 + 1 + "the-end\n".len();
    let notice = format!(
        "[output truncated: {} bytes omitted; the first {} and the last {} bytes are shown]",
        total - OUTPUT_CAP_BYTES,
        OUTPUT_CAP_BYTES / 2,
        OUTPUT_CAP_BYTES / 2
    );
    assert!(result.text.contains(&notice), "{}", &result.text[..200]);
    assert!(result.text.ends_with("a\nthe-end\n[exit code: 2]"));
    assert!(result.text.len() < OUTPUT_CAP_BYTES + 300);
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().expect("the path exists")
}

#[tokio::test]
async fn a_relative_workdir_is_resolved_against_the_session_cwd() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
    let cx = ToolCallContext::new("test").with_cwd(dir.path());

    let result = bash_in(&cx, json!({ "command": "pwd -P", "workdir": "sub" })).await;
    assert_eq!(
        result,
        ToolResult::ok(format!(
            "{}\n",
            canonical(&dir.path().join("sub")).display()
        ))
    );

    let result = bash_in(&cx, json!({ "command": "pwd -P" })).await;
    assert_eq!(
        result,
        ToolResult::ok(format!("{}\n", canonical(dir.path()).display()))
    );
}

#[tokio::test]
async fn a_missing_workdir_is_an_error_naming_the_argument() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cx = ToolCallContext::new("test").with_cwd(dir.path());
    let result = bash_in(&cx, json!({ "command": "pwd", "workdir": "nope" })).await;
    assert!(result.is_error);
    assert_eq!(
        result.text,
        format!(
            "invalid arguments for tool `bash`: `workdir`: `{}` does not exist",
            dir.path().join("nope").display()
        )
    );
}

#[tokio::test]
async fn a_timeout_over_the_maximum_is_rejected_by_the_schema() {
    let result = bash_in(
        &ToolCallContext::new("test"),
        json!({ "command": "true", "timeout_ms": 600_001 }),
    )
    .await;
    assert!(result.is_error);
    assert!(result.text.contains("`timeout_ms`"), "{}", result.text);
}

#[tokio::test]
async fn standard_input_is_empty() {
    assert_eq!(bash("cat; echo done").await, ToolResult::ok("done\n"));
}

#[tokio::test]
async fn a_background_process_holding_the_output_does_not_hold_the_call() {
    let started = Instant::now();
    let result = bash("sleep 30 & echo \"bg $!\"").await;
    assert!(started.elapsed() < Duration::from_secs(5), "{result:?}");
    let pid = pid_after(&result.text, "bg ");
    // Clean up the sleeper, which the call leaves running.
    let _ = std::process::Command::new("kill")
        .arg("-9")
        .arg(pid.to_string())
        .status();
}

#[tokio::test]
async fn a_redirected_background_process_outlives_the_call() {
    let result = bash("sleep 30 > /dev/null 2>&1 & echo \"bg $!\"").await;
    let pid = pid_after(&result.text, "bg ");
    assert!(is_running(pid), "the background process was killed");
    let _ = std::process::Command::new("kill")
        .arg("-9")
        .arg(pid.to_string())
        .status();
}

#[test]
fn the_description_carries_the_per_call_contract() {
    use dsh_tools::Tool;
    let description = BashTool::new().description();
    for needle in [
        "bash -c",
        "workdir",
        "timeout_ms",
        "120000",
        "600000",
        "30720",
        "[exit code: N]",
        "[killed by signal: SIGNAME]",
        "[timed out after N ms]",
        "no marker",
    ] {
        assert!(description.contains(needle), "missing {needle:?}");
    }
    let parameters = BashTool::new().parameters();
    assert_eq!(parameters["required"], json!(["command"]));
    assert_eq!(parameters["properties"]["timeout_ms"]["maximum"], 600_000);
}

/// A directory outside the temporary directory, which `workspace-write`
/// lets commands write.
fn outside_temp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("bash-sandbox")
        .join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("directory");
    dir
}

#[tokio::test]
async fn a_command_runs_in_the_sandbox_the_call_carries() {
    use dsh_sandbox::{Sandbox, SandboxMode};
    let workspace = outside_temp("workspace");
    let outside = outside_temp("outside");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
    let port = listener.local_addr().expect("address").port();
    let cx = ToolCallContext::new("test")
        .with_cwd(&workspace)
        .with(Sandbox::new(SandboxMode::WorkspaceWrite).with_temp_dir(outside_temp("temp")));
    let command = format!(
        "echo in > inside.txt; echo out > {}/escaped.txt; \
         (exec 3<>/dev/tcp/127.0.0.1/{port}) && echo connected",
        outside.display()
    );
    let result = bash_in(&cx, json!({ "command": command })).await;
    assert!(workspace.join("inside.txt").exists(), "{}", result.text);
    assert!(!outside.join("escaped.txt").exists(), "{}", result.text);
    // Written outside, the file system is read-only; a socket is refused.
    assert!(
        result.text.contains("Read-only file system"),
        "{}",
        result.text
    );
    assert!(
        result.text.contains("Operation not permitted"),
        "{}",
        result.text
    );
    assert!(!result.text.contains("connected"), "{}", result.text);
    assert!(result.text.ends_with("[exit code: 1]"), "{}", result.text);

    // The same command without a sandbox in the call writes and connects.
    let cx = ToolCallContext::new("test").with_cwd(&workspace);
    let result = bash_in(&cx, json!({ "command": command })).await;
    assert!(outside.join("escaped.txt").exists(), "{}", result.text);
    assert!(result.text.ends_with("connected\n"), "{}", result.text);
}

/// The reports a call made to its [`CommandOutput`], each as a line:
/// `out <text>` or `exit <code> <signal>`.
fn live_context() -> (ToolCallContext, Arc<std::sync::Mutex<Vec<String>>>) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let cx = ToolCallContext::new("test").with(CommandOutput::new(move |report| {
        let line = match report {
            CommandReport::Output(text) => format!("out {text}"),
            CommandReport::Exit(exit) => format!("exit {:?} {:?}", exit.code, exit.signal),
            other => format!("{other:?}"),
        };
        sink.lock().unwrap().push(line);
    }));
    (cx, seen)
}

#[tokio::test]
async fn output_reaches_the_callers_view_as_it_is_written_then_the_exit() {
    let (cx, seen) = live_context();
    let command = "for n in 1 2 3; do echo line $n; sleep 0.3; done; exit 4";
    let result = bash_in(&cx, json!({ "command": command })).await;
    // The model reads the capped result, as without a view.
    assert_eq!(
        result,
        ToolResult::ok("line 1\nline 2\nline 3\n[exit code: 4]")
    );
    let seen = seen.lock().unwrap().clone();
    let (exit, output) = seen.split_last().expect("reports");
    assert_eq!(exit, "exit Some(4) None", "the exit comes last: {seen:?}");
    assert!(
        output.len() >= 2,
        "lines written apart are reported apart: {seen:?}"
    );
    let text: String = output
        .iter()
        .map(|line| line.strip_prefix("out ").expect("output before the exit"))
        .collect();
    assert_eq!(text, "line 1\nline 2\nline 3\n");
}

#[tokio::test]
async fn a_timed_out_command_reports_the_kill() {
    let (cx, seen) = live_context();
    let result = bash_in(
        &cx,
        json!({ "command": "echo start; sleep 30", "timeout_ms": 300 }),
    )
    .await;
    assert!(
        result.text.ends_with("[timed out after 300 ms]"),
        "{result:?}"
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, ["out start\n", "exit None Some(\"SIGKILL\")"]);
}
