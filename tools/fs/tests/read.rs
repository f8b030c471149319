//! The read tool's contract, exercised through the tool registry as the
//! agent loop calls it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use dsh_tool_fs::{MAX_LINE_BYTES, MAX_OUTPUT_BYTES, ReadTool};
use dsh_tools::{ToolCallContext, ToolRegistry, ToolResult};
use serde_json::json;
use tempfile::TempDir;

/// Runs one call on a runtime of its own, in a thread of its own, and
/// waits at most five seconds: refusals must come at once, and a
/// regression that blocks (say, opening a FIFO) fails the test instead of
/// hanging the suite (a runtime waits for its blocking tasks when dropped,
/// so a timeout inside the test's own runtime would hang too).
fn read_in(dir: &Path, arguments: serde_json::Value) -> ToolResult {
    let (sender, receiver) = std::sync::mpsc::channel();
    let cx = ToolCallContext::new("test").with_cwd(dir);
    std::thread::spawn(move || {
        let tools = ToolRegistry::new();
        tools
            .register(Arc::new(ReadTool::new()))
            .expect("read registers");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let result = runtime.block_on(tools.call("read", &arguments.to_string(), &cx));
        let _ = sender.send(result);
    });
    receiver
        .recv_timeout(Duration::from_secs(5))
        .expect("the read call returns at once")
}

fn read(dir: &Path, file: &str) -> ToolResult {
    read_in(dir, json!({ "file_path": file }))
}

/// A fresh directory holding `file` with `contents`.
fn dir_with(file: &str, contents: impl AsRef<[u8]>) -> TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(file), contents).expect("write");
    dir
}

/// A fresh directory holding `ten.txt`: `line 1` to `line 10`.
fn ten_lines() -> TempDir {
    let text: String = (1..=10).map(|n| format!("line {n}\n")).collect();
    dir_with("ten.txt", text)
}

/// A fresh directory holding the FIFO `pipe`.
fn dir_with_fifo() -> TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    nix::unistd::mkfifo(&dir.path().join("pipe"), nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    dir
}

fn numbered(range: std::ops::RangeInclusive<u32>) -> String {
    range.map(|n| format!("{n:>6}\tline {n}\n")).collect()
}

fn error_text(result: &ToolResult) -> &str {
    assert!(result.is_error, "expected an error, got {result:?}");
    &result.text
}

/// Asserts that reading `file` in `dir` fails with `message`, in which
/// `{path}` stands for the full path of the file: every refusal names it.
#[track_caller]
fn assert_read_fails(dir: &Path, file: &str, message: &str) {
    let path = dir.join(file).display().to_string();
    assert_eq!(
        error_text(&read(dir, file)),
        message.replace("{path}", &path)
    );
}

#[test]
fn a_whole_file_is_numbered_without_a_hint() {
    let dir = ten_lines();
    assert_eq!(
        read(dir.path(), "ten.txt"),
        ToolResult::ok(numbered(1..=10))
    );
}

#[test]
fn offset_and_limit_choose_the_window() {
    let dir = ten_lines();
    let result = read_in(
        dir.path(),
        json!({ "file_path": "ten.txt", "offset": 3, "limit": 2 }),
    );
    assert_eq!(
        result,
        ToolResult::ok(format!(
            "{}[showing lines 3-4 of 10; call read with offset=5 to see more]",
            numbered(3..=4)
        ))
    );

    // A window that reaches the end needs no hint.
    let result = read_in(
        dir.path(),
        json!({ "file_path": "ten.txt", "offset": 9, "limit": 5 }),
    );
    assert_eq!(result, ToolResult::ok(numbered(9..=10)));

    let result = read_in(dir.path(), json!({ "file_path": "ten.txt", "offset": 11 }));
    assert_eq!(
        error_text(&result),
        format!(
            "invalid arguments for tool `read`: `offset`: line 11 is past the end of `{}`, which has 10 lines",
            dir.path().join("ten.txt").display()
        )
    );
}

#[test]
fn out_of_range_offset_and_limit_are_rejected_by_the_schema() {
    let dir = ten_lines();
    let result = read_in(dir.path(), json!({ "file_path": "ten.txt", "offset": 0 }));
    assert!(error_text(&result).contains("`offset`"), "{}", result.text);
    let result = read_in(
        dir.path(),
        json!({ "file_path": "ten.txt", "limit": 10_001 }),
    );
    assert!(error_text(&result).contains("`limit`"), "{}", result.text);
}

#[test]
fn a_line_over_the_cap_is_cut_with_a_marker() {
    let long = "x".repeat(5000);
    let dir = dir_with("long.txt", format!("short\n{long}\nafter\n"));
    let result = read(dir.path(), "long.txt");
    assert_eq!(
        result,
        ToolResult::ok(format!(
            "     1\tshort\n     2\t{}… [line truncated: {} more bytes]\n     3\tafter\n",
            "x".repeat(MAX_LINE_BYTES),
            5000 - MAX_LINE_BYTES
        ))
    );
}

#[test]
fn a_cut_never_splits_a_character() {
    // One ASCII byte, then two-byte characters: the cap falls inside one.
    let line = format!("a{}", "é".repeat(1500));
    let dir = dir_with("accents.txt", &line);
    let result = read(dir.path(), "accents.txt");
    let kept = format!("a{}", "é".repeat((MAX_LINE_BYTES - 1) / 2));
    assert_eq!(
        result,
        ToolResult::ok(format!(
            "     1\t{kept}… [line truncated: {} more bytes]\n",
            line.len() - kept.len()
        ))
    );
}

#[test]
fn a_huge_single_line_is_streamed_and_cut() {
    let dir = dir_with("minified.js", "y".repeat(20 * 1024 * 1024));
    let result = read(dir.path(), "minified.js");
    assert!(!result.is_error);
    assert!(
        result.text.ends_with(&format!(
            "… [line truncated: {} more bytes]\n",
            20 * 1024 * 1024 - MAX_LINE_BYTES
        )),
        "{}",
        &result.text[result.text.len() - 80..]
    );
}

#[test]
fn the_output_is_capped_and_the_hint_says_where_to_continue() {
    let line = "z".repeat(100);
    let text: String = (0..3000).map(|_| format!("{line}\n")).collect();
    let dir = dir_with("wide.txt", text);
    let result = read(dir.path(), "wide.txt");
    assert!(!result.is_error);
    // Each shown line is 6 digits + tab + 100 bytes + newline.
    let fitting = MAX_OUTPUT_BYTES / 108;
    assert!(result.text.len() <= MAX_OUTPUT_BYTES + 200);
    assert!(
        result.text.ends_with(&format!(
            "[showing lines 1-{fitting} of 3000 (the output is capped at {MAX_OUTPUT_BYTES} bytes); \
             call read with offset={} to see more]",
            fitting + 1
        )),
        "{}",
        &result.text[result.text.len() - 150..]
    );
}

#[test]
fn crlf_line_endings_are_not_shown() {
    let dir = dir_with("dos.txt", "one\r\ntwo\r\n");
    assert_eq!(
        read(dir.path(), "dos.txt"),
        ToolResult::ok("     1\tone\n     2\ttwo\n")
    );
}

#[test]
fn an_absolute_path_ignores_the_session_cwd() {
    let dir = ten_lines();
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ten.txt");
    let result = read_in(elsewhere.path(), json!({ "file_path": path, "limit": 1 }));
    assert!(result.text.starts_with("     1\tline 1\n"), "{result:?}");
}

#[test]
fn an_empty_file_says_so() {
    let dir = dir_with("empty.txt", "");
    assert_eq!(
        read(dir.path(), "empty.txt"),
        ToolResult::ok(format!(
            "[`{}` is empty]",
            dir.path().join("empty.txt").display()
        ))
    );
}

#[test]
fn a_directory_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("src")).expect("mkdir");
    assert_read_fails(
        dir.path(),
        "src",
        "tool `read` failed: `{path}` is a directory, not a regular file; read only reads regular files",
    );
}

#[test]
fn a_fifo_is_refused_at_once() {
    let dir = dir_with_fifo();
    assert_read_fails(
        dir.path(),
        "pipe",
        "tool `read` failed: `{path}` is a FIFO (named pipe), not a regular file; read only reads regular files",
    );
}

#[test]
fn a_symlink_to_a_fifo_is_refused_at_once() {
    let dir = dir_with_fifo();
    std::os::unix::fs::symlink(dir.path().join("pipe"), dir.path().join("link")).expect("symlink");
    assert_read_fails(
        dir.path(),
        "link",
        "tool `read` failed: `{path}` is a FIFO (named pipe) (through a symbolic link), not a regular file; \
         read only reads regular files",
    );
}

#[test]
fn a_socket_and_a_device_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let _listener =
        std::os::unix::net::UnixListener::bind(dir.path().join("sock")).expect("bind a socket");
    let result = read(dir.path(), "sock");
    assert!(
        error_text(&result).contains("is a socket"),
        "{}",
        result.text
    );

    // `/dev/zero` never ends: reading it would never return.
    let result = read(dir.path(), "/dev/zero");
    assert!(
        error_text(&result).contains("`/dev/zero` is a character device"),
        "{}",
        result.text
    );
}

#[test]
fn a_binary_file_is_refused() {
    let dir = dir_with("a.out", b"\x7fELF\x02\x01\x01\x00\x00");
    assert_read_fails(
        dir.path(),
        "a.out",
        "tool `read` failed: `{path}` looks like a binary file (a NUL byte at byte 7); read only reads UTF-8 text",
    );
}

#[test]
fn a_missing_file_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_read_fails(
        dir.path(),
        "nope.txt",
        "tool `read` failed: `{path}` does not exist",
    );
}

#[test]
fn invalid_utf8_is_an_error_naming_the_line() {
    let dir = dir_with("latin1.txt", b"caf\xc3\xa9\nna\xefve\n");
    assert_read_fails(
        dir.path(),
        "latin1.txt",
        "tool `read` failed: line 2 of `{path}` is not valid UTF-8 (at byte 2 of the line); read only reads UTF-8 text",
    );
    // The lines before it read fine.
    let result = read_in(dir.path(), json!({ "file_path": "latin1.txt", "limit": 1 }));
    assert_eq!(
        result,
        ToolResult::ok(
            "     1\tcafé\n[showing lines 1-1 of 2; call read with offset=2 to see more]"
        )
    );
}

#[test]
fn the_description_carries_the_per_call_contract() {
    use dsh_tools::Tool;
    let description = ReadTool::new().description();
    for needle in [
        "file_path",
        "offset",
        "limit",
        "2000",
        "10000",
        "line truncated",
        "call read with offset=",
        "FIFO",
        "symbolic link",
        "binary",
        "UTF-8",
    ] {
        assert!(description.contains(needle), "missing {needle:?}");
    }
    let parameters = ReadTool::new().parameters();
    assert_eq!(parameters["required"], json!(["file_path"]));
    assert_eq!(parameters["properties"]["limit"]["maximum"], 10_000);
}
