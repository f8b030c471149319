//! The `write` and `edit` tools' contract, exercised through the tool
//! registry as the agent loop calls them, on real files.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dsh_tool_fs::{
    EditTool, FileAccess, FileError, Observations, OutsideWorkspace, ReadTool, WriteTool,
};
use dsh_tools::{FileChange, FileChanges, ToolCallContext, ToolRegistry, ToolResult, async_trait};
use serde_json::{Value, json};
use tempfile::TempDir;

/// The three file tools sharing one memory, `write` and `edit` with
/// `roots`.
fn tools(roots: &[PathBuf]) -> ToolRegistry {
    let observations = Observations::new();
    let tools = ToolRegistry::new();
    tools
        .register(Arc::new(
            ReadTool::new().with_observations(observations.clone()),
        ))
        .expect("read");
    tools
        .register(Arc::new(
            WriteTool::new()
                .with_observations(observations.clone())
                .with_roots(roots.to_vec()),
        ))
        .expect("write");
    tools
        .register(Arc::new(
            EditTool::new()
                .with_observations(observations)
                .with_roots(roots.to_vec()),
        ))
        .expect("edit");
    tools
}

/// A project directory (canonical, so paths in messages are exact) and
/// the tools.
struct Project {
    _dir: TempDir,
    root: PathBuf,
    tools: ToolRegistry,
}

impl Project {
    fn new() -> Self {
        Self::with_roots(&[])
    }

    fn with_roots(roots: &[PathBuf]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        Self {
            _dir: dir,
            root,
            tools: tools(roots),
        }
    }

    /// A project with file `name` holding `text`, read in this session.
    async fn having_read(name: &str, text: &str) -> Self {
        let project = Self::new();
        project.put(name, text);
        project.read(name).await;
        project
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// The path of `name` as the tools' messages show it.
    fn shown(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    fn put(&self, name: &str, text: impl AsRef<[u8]>) {
        std::fs::write(self.path(name), text).expect("write a test file");
    }

    fn get(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).expect("read a test file")
    }

    fn cx(&self) -> ToolCallContext {
        ToolCallContext::new("session-1").with_cwd(&self.root)
    }

    async fn call_in(&self, cx: &ToolCallContext, tool: &str, arguments: Value) -> ToolResult {
        self.tools.call(tool, &arguments.to_string(), cx).await
    }

    async fn call(&self, tool: &str, arguments: Value) -> ToolResult {
        self.call_in(&self.cx(), tool, arguments).await
    }

    async fn read(&self, name: &str) -> ToolResult {
        let result = self.call("read", json!({ "file_path": name })).await;
        assert!(!result.is_error, "read failed: {}", result.text);
        result
    }

    async fn edit(&self, name: &str, old: &str, new: &str) -> ToolResult {
        self.edit_in(&self.cx(), name, old, new).await
    }

    /// `edit` called in `cx`.
    async fn edit_in(&self, cx: &ToolCallContext, name: &str, old: &str, new: &str) -> ToolResult {
        self.call_in(
            cx,
            "edit",
            json!({ "file_path": name, "old_string": old, "new_string": new }),
        )
        .await
    }

    async fn write(&self, name: &str, content: &str) -> ToolResult {
        self.call("write", json!({ "file_path": name, "content": content }))
            .await
    }
}

#[track_caller]
fn assert_ok(result: &ToolResult) -> &str {
    assert!(!result.is_error, "expected success, got {}", result.text);
    &result.text
}

#[track_caller]
fn assert_error(result: &ToolResult, message: &str) {
    assert!(result.is_error, "expected an error, got {}", result.text);
    assert_eq!(result.text, message);
}

#[tokio::test]
async fn an_edit_of_a_read_file_replaces_the_text_and_shows_the_changed_lines() {
    let project = Project::having_read("a.rs", "fn main() {\n    println!(\"hi\");\n}\n").await;
    let result = project.edit("a.rs", "\"hi\"", "\"hello\"").await;
    assert_eq!(
        assert_ok(&result),
        format!(
            "Edited `{}`: replaced 1 occurrence; lines 2-2 now read:\n     1\tfn main() {{\n     2\t    println!(\"hello\");\n     3\t}}",
            project.path("a.rs").display()
        )
    );
    assert_eq!(
        project.get("a.rs"),
        "fn main() {\n    println!(\"hello\");\n}\n"
    );
}

#[tokio::test]
async fn a_file_never_read_is_not_changed() {
    let project = Project::new();
    project.put("a.txt", "alpha\n");
    let path = project.shown("a.txt");
    let expected = format!(
        "tool `edit` failed: `{path}` has not been read in this session; read it with `read` first, then change it"
    );
    assert_error(&project.edit("a.txt", "alpha", "beta").await, &expected);
    assert_error(
        &project.write("a.txt", "beta\n").await,
        &expected.replace("`edit`", "`write`"),
    );
    assert_eq!(project.get("a.txt"), "alpha\n");
}

#[tokio::test]
async fn a_file_changed_on_disk_after_the_read_is_not_changed() {
    let project = Project::having_read("a.txt", "alpha\n").await;
    // Someone else changes it.
    project.put("a.txt", "alpha, changed\n");
    let path = project.shown("a.txt");
    assert_error(
        &project.edit("a.txt", "alpha", "beta").await,
        &format!(
            "tool `edit` failed: `{path}` has changed since this session last read it (6 bytes then, 15 now); read it again, then change it"
        ),
    );
    assert_eq!(project.get("a.txt"), "alpha, changed\n");
    // Reading again is the fix.
    project.read("a.txt").await;
    assert_ok(&project.edit("a.txt", "alpha", "beta").await);
    assert_eq!(project.get("a.txt"), "beta, changed\n");
}

#[tokio::test]
async fn a_change_by_the_session_itself_counts_as_seen() {
    let project = Project::new();
    assert_ok(&project.write("new/dir/b.txt", "one\ntwo\n").await);
    assert_eq!(project.get("new/dir/b.txt"), "one\ntwo\n");
    assert_ok(&project.edit("new/dir/b.txt", "one", "uno").await);
    assert_ok(&project.edit("new/dir/b.txt", "two", "dos").await);
    assert_eq!(project.get("new/dir/b.txt"), "uno\ndos\n");
}

#[tokio::test]
async fn what_one_session_read_does_not_let_another_change_it() {
    let project = Project::having_read("a.txt", "alpha\n").await;
    let other = ToolCallContext::new("session-2").with_cwd(&project.root);
    let result = project.edit_in(&other, "a.txt", "alpha", "beta").await;
    assert!(result.is_error && result.text.contains("has not been read in this session"));
}

#[tokio::test]
async fn old_string_that_occurs_nowhere_or_several_times_is_an_error_naming_the_lines() {
    let project = Project::having_read("a.txt", "x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n").await;
    let path = project.shown("a.txt");
    assert_error(
        &project.edit("a.txt", "w = 0", "w = 1").await,
        &format!(
            "tool `edit` failed: `old_string` does not occur in `{path}`; read the file again and copy the text exactly, indentation and line breaks included"
        ),
    );
    assert_error(
        &project.edit("a.txt", "x = 1", "x = 2").await,
        &format!(
            "tool `edit` failed: `old_string` occurs 3 times in `{path}`, at lines 1, 3 and 5; add surrounding lines to `old_string` so that it matches once, or set `replace_all` to true to change every one"
        ),
    );
    assert_eq!(project.get("a.txt"), "x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n");
    // More context makes it unique; `replace_all` changes every one.
    assert_ok(&project.edit("a.txt", "y = 2\nx = 1", "y = 2\nx = 9").await);
    let result = project
        .call(
            "edit",
            json!({ "file_path": "a.txt", "old_string": "x = 1", "new_string": "x = 0", "replace_all": true }),
        )
        .await;
    assert!(assert_ok(&result).contains("replaced 2 occurrences"));
    assert_eq!(project.get("a.txt"), "x = 0\ny = 2\nx = 9\nz = 3\nx = 0\n");
}

#[tokio::test]
async fn equal_or_empty_strings_and_a_missing_file_are_errors() {
    let project = Project::having_read("a.txt", "alpha\n").await;
    assert_error(
        &project.edit("a.txt", "alpha", "alpha").await,
        "invalid arguments for tool `edit`: `new_string`: `old_string` and `new_string` are the same, so nothing would change; give the new text as `new_string`",
    );
    let empty = project.edit("a.txt", "", "beta").await;
    assert!(
        empty.is_error && empty.text.contains("`old_string`"),
        "{}",
        empty.text
    );
    assert_error(
        &project.edit("missing.txt", "a", "b").await,
        &format!(
            "tool `edit` failed: `{}` does not exist; create it with `write`",
            project.path("missing.txt").display()
        ),
    );
}

#[tokio::test]
async fn crlf_and_a_missing_final_newline_are_kept() {
    let project = Project::new();
    project.put("win.txt", "first\r\nsecond\r\nthird");
    let read = project.read("win.txt").await;
    assert_eq!(read.text, "     1\tfirst\n     2\tsecond\n     3\tthird\n");
    // The model writes `\n`, as read showed it.
    assert_ok(
        &project
            .edit("win.txt", "first\nsecond", "first\nnew\nsecond")
            .await,
    );
    assert_eq!(project.get("win.txt"), "first\r\nnew\r\nsecond\r\nthird");
    // A whole rewrite keeps them too.
    assert_ok(&project.write("win.txt", "one\ntwo\n").await);
    assert_eq!(project.get("win.txt"), "one\r\ntwo");

    project.put("unix.txt", "a\nb\n");
    project.read("unix.txt").await;
    assert_ok(&project.write("unix.txt", "c\nd").await);
    assert_eq!(project.get("unix.txt"), "c\nd\n");
}

#[tokio::test]
async fn permissions_are_kept() {
    let project = Project::new();
    project.put("run.sh", "#!/bin/sh\necho one\n");
    std::fs::set_permissions(
        project.path("run.sh"),
        std::fs::Permissions::from_mode(0o750),
    )
    .expect("chmod");
    project.read("run.sh").await;
    assert_ok(&project.edit("run.sh", "one", "two").await);
    let mode = std::fs::metadata(project.path("run.sh"))
        .expect("stat")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o750);
}

/// A read-only file is refused, not replaced, as root too (CI runs the
/// tests as root, whom the mode does not stop).
#[tokio::test]
async fn a_read_only_file_is_refused_and_kept() {
    let project = Project::having_read("frozen.txt", "keep\n").await;
    std::fs::set_permissions(
        project.path("frozen.txt"),
        std::fs::Permissions::from_mode(0o444),
    )
    .expect("chmod");
    let refusal = format!(
        "`{}` is read-only (mode 0444); dsh does not change a file its mode keeps from writing, \
         not even as root: make it writable first (`chmod u+w`) if it should change",
        project.shown("frozen.txt")
    );
    let result = project.edit("frozen.txt", "keep", "lose").await;
    assert_error(&result, &format!("tool `edit` failed: {refusal}"));
    let result = project.write("frozen.txt", "lose\n").await;
    assert_error(&result, &format!("tool `write` failed: {refusal}"));
    assert_eq!(project.get("frozen.txt"), "keep\n");
}

#[tokio::test]
async fn binary_and_non_utf8_files_are_refused() {
    let project = Project::new();
    project.put("bin", b"\x7fELF\x00\x01");
    let result = project.write("bin", "text").await;
    assert_error(
        &result,
        &format!(
            "tool `write` failed: `{}` looks like a binary file (a NUL byte at byte 4); only UTF-8 text files can be read or changed",
            project.path("bin").display()
        ),
    );
    project.put("latin1.txt", b"caf\xe9\n");
    let result = project.edit("latin1.txt", "caf", "cafe").await;
    assert_error(
        &result,
        &format!(
            "tool `edit` failed: line 1 of `{}` is not valid UTF-8 (at byte 3 of the line); only UTF-8 text files can be read or changed",
            project.path("latin1.txt").display()
        ),
    );
    assert_eq!(
        std::fs::read(project.path("bin")).expect("read"),
        b"\x7fELF\x00\x01"
    );
}

#[tokio::test]
async fn a_dot_dot_path_out_of_the_workspace_is_refused() {
    let outside = tempfile::tempdir().expect("outside");
    let project = Project::new();
    let target = std::fs::canonicalize(outside.path())
        .expect("canonical")
        .join("escaped.txt");
    // `sub/../../…/<outside dir>/escaped.txt`: up from the project to
    // the root, then down to the other directory.
    let up = "../".repeat(project.root.components().count());
    let relative = format!(
        "sub/{up}{}",
        target.strip_prefix("/").expect("absolute").display()
    );
    let result = project.write(&relative, "out\n").await;
    assert_error(
        &result,
        &format!(
            "tool `write` failed: `{}` is outside the workspace: it resolves to `{}`, which is not inside the working directory `{}`; `write` changes files elsewhere only in a directory the deployment lists, as in `[tools.write] roots = [\"{}\"]`",
            project.path(&relative).display(),
            target.display(),
            project.root.display(),
            target.parent().expect("parent").display()
        ),
    );
    assert!(!target.exists());
}

#[tokio::test]
async fn a_symbolic_link_out_of_the_workspace_is_refused() {
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(outside.path().join("secret.txt"), "keep\n").expect("write");
    let project = Project::new();
    std::os::unix::fs::symlink(outside.path(), project.path("link")).expect("symlink");
    // Even after reading it through the link.
    project.read("link/secret.txt").await;
    let result = project.edit("link/secret.txt", "keep", "lost").await;
    assert!(
        result.is_error
            && result
                .text
                .contains("is outside the workspace: it resolves to"),
        "{}",
        result.text
    );
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).expect("read"),
        "keep\n"
    );
}

#[tokio::test]
async fn a_listed_root_lets_changes_outside_the_working_directory() {
    let outside = tempfile::tempdir().expect("outside");
    let project = Project::with_roots(&[outside.path().to_owned()]);
    let target = outside.path().join("allowed.txt");
    let result = project.write(&target.display().to_string(), "fine\n").await;
    assert_ok(&result);
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "fine\n");
}

/// A front end's say over the outside: one extra root, and a user who
/// answers `yes`.
#[derive(Debug)]
struct Asks {
    root: PathBuf,
    yes: bool,
    asked: Mutex<Vec<PathBuf>>,
}

#[async_trait]
impl OutsideWorkspace for Asks {
    fn roots(&self) -> Vec<PathBuf> {
        vec![self.root.clone()]
    }

    async fn allow(&self, tool: &str, path: &Path, _cx: &ToolCallContext) -> Result<(), String> {
        self.asked.lock().expect("lock").push(path.to_owned());
        if self.yes {
            Ok(())
        } else {
            Err(format!("the user declined to let `{tool}` change it"))
        }
    }
}

#[tokio::test]
async fn the_front_end_adds_roots_and_is_asked_about_the_rest() {
    let (extra, elsewhere) = (
        tempfile::tempdir().expect("a"),
        tempfile::tempdir().expect("b"),
    );
    let project = Project::new();
    for yes in [false, true] {
        let asks = Arc::new(Asks {
            root: extra.path().to_owned(),
            yes,
            asked: Mutex::new(Vec::new()),
        });
        let outside: Arc<dyn OutsideWorkspace> = asks.clone();
        let cx = project.cx().with(outside);
        let write =
            |path: PathBuf| json!({ "file_path": path.display().to_string(), "content": "x\n" });
        // Its root needs no question.
        let result = project
            .call_in(&cx, "write", write(extra.path().join(format!("{yes}.txt"))))
            .await;
        assert_ok(&result);
        let target = elsewhere.path().join("asked.txt");
        let result = project.call_in(&cx, "write", write(target.clone())).await;
        assert_eq!(
            *asks.asked.lock().expect("lock"),
            [std::fs::canonicalize(elsewhere.path())
                .expect("c")
                .join("asked.txt")]
        );
        if yes {
            assert_ok(&result);
        } else {
            assert_error(
                &result,
                &format!(
                    "tool `write` failed: `{}` is outside the workspace, and it may not be changed: the user declined to let `write` change it",
                    target.display()
                ),
            );
        }
        assert_eq!(target.exists(), yes);
    }
}

/// An editor's buffers: what it holds, and what was written to it.
#[derive(Debug, Default)]
struct Buffers {
    files: Mutex<HashMap<PathBuf, String>>,
}

#[async_trait]
impl FileAccess for Buffers {
    async fn read_text(&self, path: &Path) -> Result<String, FileError> {
        self.files
            .lock()
            .expect("lock")
            .get(path)
            .cloned()
            .ok_or_else(|| FileError::NotFound {
                path: path.to_owned(),
            })
    }

    async fn write_text(&self, path: &Path, text: &str) -> Result<(), FileError> {
        self.files
            .lock()
            .expect("lock")
            .insert(path.to_owned(), text.to_owned());
        Ok(())
    }
}

#[tokio::test]
async fn with_a_file_access_the_tools_read_and_write_through_it_and_report_the_change() {
    let project = Project::new();
    project.put("a.txt", "on disk\n");
    let buffers = Arc::new(Buffers::default());
    buffers
        .files
        .lock()
        .expect("lock")
        .insert(project.path("a.txt"), "unsaved\nbuffer\n".to_owned());
    let changes = Arc::new(Mutex::new(Vec::<FileChange>::new()));
    let sink = Arc::clone(&changes);
    let files: Arc<dyn FileAccess> = buffers.clone();
    let cx = project
        .cx()
        .with(files)
        .with(FileChanges::new(move |change| {
            sink.lock().expect("lock").push(change.clone())
        }));

    let read = project
        .call_in(&cx, "read", json!({ "file_path": "a.txt" }))
        .await;
    assert_eq!(assert_ok(&read), "     1\tunsaved\n     2\tbuffer\n");
    let edit = project
        .edit_in(&cx, "a.txt", "buffer", "buffer, edited")
        .await;
    assert_ok(&edit);
    assert_eq!(
        buffers.files.lock().expect("lock")[&project.path("a.txt")],
        "unsaved\nbuffer, edited\n"
    );
    assert_eq!(project.get("a.txt"), "on disk\n");
    assert_eq!(
        *changes.lock().expect("lock"),
        [FileChange {
            path: project.path("a.txt"),
            old_text: Some("unsaved\nbuffer\n".to_owned()),
            new_text: "unsaved\nbuffer, edited\n".to_owned(),
            first_changed_line: 2,
        }]
    );
}

#[tokio::test]
async fn a_long_change_is_shown_bounded() {
    let project = Project::new();
    let text: String = (1..=500).map(|n| format!("line {n}\n")).collect();
    let result = project.write("long.txt", &text).await;
    let shown = assert_ok(&result);
    assert!(shown.starts_with(&format!(
        "Created `{}` (500 lines); lines 1-500 now read:\n     1\tline 1\n",
        project.path("long.txt").display()
    )));
    assert!(
        shown.ends_with("[… lines 41-500 are not shown; call read with offset=41 to see them]")
    );
}

#[tokio::test]
async fn a_file_larger_than_a_whole_file_change_holds_is_refused() {
    let project = Project::new();
    let size = dsh_tool_fs::MAX_FILE_BYTES + 1;
    let file = std::fs::File::create(project.path("huge.log")).expect("create");
    file.set_len(size).expect("grow");
    // A sparse file of zeros reads as binary; the size is checked first.
    let result = project.write("huge.log", "small\n").await;
    assert_error(
        &result,
        &format!(
            "tool `write` failed: `{}` has {size} bytes, more than the {} a whole-file change holds; change it with a command instead",
            project.path("huge.log").display(),
            dsh_tool_fs::MAX_FILE_BYTES
        ),
    );
    assert_eq!(
        std::fs::metadata(project.path("huge.log"))
            .expect("stat")
            .len(),
        size
    );
}

#[tokio::test]
async fn the_sandbox_in_force_decides_where_changes_go() {
    use dsh_sandbox::{Sandbox, SandboxMode};
    // Outside the temporary directory, which `workspace-write` allows.
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a directory");
    let (writable, elsewhere) = (base.path().join("writable"), base.path().join("elsewhere"));
    for dir in [&writable, &elsewhere] {
        std::fs::create_dir_all(dir).expect("directory");
    }
    let project = Project::new();
    let write = |path: &Path| json!({ "file_path": path.display().to_string(), "content": "x\n" });

    let read_only = project.cx().with(Sandbox::new(SandboxMode::ReadOnly));
    let result = project
        .call_in(&read_only, "write", write(&project.path("new.txt")))
        .await;
    assert!(
        result.is_error && result.text.contains("sandbox is `read-only`"),
        "{}",
        result.text
    );
    assert!(!project.path("new.txt").exists());

    let workspace = Sandbox::new(SandboxMode::WorkspaceWrite)
        .with_writable([writable.clone()])
        .with_temp_dir(base.path().join("temp"));
    let cx = project.cx().with(workspace);
    assert_ok(
        &project
            .call_in(&cx, "write", write(&project.path("new.txt")))
            .await,
    );
    assert_ok(
        &project
            .call_in(&cx, "write", write(&writable.join("w.txt")))
            .await,
    );
    let target = elsewhere.join("e.txt");
    let result = project.call_in(&cx, "write", write(&target)).await;
    assert!(
        result.is_error && result.text.contains("is outside the workspace"),
        "{}",
        result.text
    );
    assert!(!target.exists());
    // What runs later is protected inside the workspace: the refusal says
    // why and how to allow it.
    for protected in [".git/hooks/pre-commit", ".vscode/tasks.json", "dsh.toml"] {
        let path = project.path(protected);
        let result = project.call_in(&cx, "write", write(&path)).await;
        assert!(
            result.is_error && result.text.contains("[sandbox] writable"),
            "{protected}: {}",
            result.text
        );
        assert!(!path.exists(), "{protected}");
    }

    let full = project.cx().with(Sandbox::new(SandboxMode::FullAccess));
    assert_ok(&project.call_in(&full, "write", write(&target)).await);
    assert!(target.exists());
}
