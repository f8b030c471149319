//! `write` and `edit` in the real binary: under `dsh run` on disk and
//! inside the workspace only; under `dsh acp` through the editor's
//! buffers when the client offers its file system, reported as diffs, and
//! with the user asked about the outside.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, FileSystemCapabilities, InitializeRequest,
    InitializeResponse, NewSessionRequest, PermissionOptionKind, PromptRequest,
    ReadTextFileRequest, ReadTextFileResponse, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionNotification, SessionUpdate,
    StopReason, ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolKind,
    WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::{Agent, Client, Error, ErrorCode};

const TIMEOUT: Duration = Duration::from_secs(60);

/// A scripted deployment whose agent `editor` has the file tools; the
/// model answers with `answers`.
fn deployment(dir: &Path, answers: &str) -> String {
    common::scripted_config(
        dir,
        answers,
        "[[agents]]\nid = \"editor\"\ntools = [\"read\", \"write\", \"edit\"]\n\
         persona = \"You edit files in <<cwd>>.\"\n",
    )
}

/// The answers: read `file`, replace `old` with `new` in it, then stop.
fn read_then_edit(file: &str, old: &str, new: &str) -> String {
    format!(
        "[[answers]]\n[[answers.tool_calls]]\nname = \"read\"\narguments = {{ file_path = {file:?} }}\n\
         [[answers]]\n[[answers.tool_calls]]\nname = \"edit\"\n\
         arguments = {{ file_path = {file:?}, old_string = {old:?}, new_string = {new:?} }}\n\
         [[answers]]\ntext = \"Done.\"\n"
    )
}

/// The answers: `write` each `(path, content)`, one call a step, then
/// stop.
fn writes(files: &[(&Path, &str)]) -> String {
    let mut answers = String::new();
    for (path, content) in files {
        answers.push_str(&format!(
            "[[answers]]\n[[answers.tool_calls]]\nname = \"write\"\n\
             arguments = {{ file_path = {:?}, content = {content:?} }}\n",
            path.display().to_string()
        ));
    }
    answers + "[[answers]]\ntext = \"Done.\"\n"
}

/// `name` in the real (canonical) directory of `dir`.
fn real_file(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    std::fs::canonicalize(dir.path())
        .expect("a canonical directory")
        .join(name)
}

/// What the client saw and was asked.
#[derive(Debug, Default)]
struct Editor {
    /// Its buffers, by path: what `fs/read_text_file` answers.
    buffers: HashMap<PathBuf, String>,
    /// The `fs/write_text_file` requests, in order.
    writes: Vec<(PathBuf, String)>,
    /// The `fs/read_text_file` requests, in order.
    reads: Vec<PathBuf>,
    /// The titles of the permission requests, in order.
    permissions: Vec<String>,
    updates: Vec<SessionUpdate>,
}

/// Runs `dsh acp --config config` and, as its client with file-system
/// capabilities `fs`, initializes, opens a session in `cwd` with
/// `additional` directories and sends one prompt; permission requests are
/// allowed. Returns the initialize response, how the prompt ended, and
/// what the editor saw.
async fn acp_turn(
    config: &str,
    fs: FileSystemCapabilities,
    buffers: HashMap<PathBuf, String>,
    cwd: &Path,
    additional: Vec<PathBuf>,
) -> (InitializeResponse, StopReason, Editor) {
    // A temporary directory of dsh's own: the tests' other directories
    // are outside the sandbox's writable set wherever the machine keeps
    // its temporary files.
    let tmpdir = format!("TMPDIR={}", common::own_tmpdir());
    let agent = common::acp_agent(&[&tmpdir, "acp", "--config", config]);
    let editor = Arc::new(Mutex::new(Editor {
        buffers,
        ..Editor::default()
    }));
    let (on_update, on_read, on_write, on_ask) = (
        Arc::clone(&editor),
        Arc::clone(&editor),
        Arc::clone(&editor),
        Arc::clone(&editor),
    );
    let run = Client
        .v1()
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                on_update
                    .lock()
                    .expect("lock")
                    .updates
                    .push(notification.update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: ReadTextFileRequest, responder, _cx| {
                let text = {
                    let mut editor = on_read.lock().expect("lock");
                    editor.reads.push(request.path.clone());
                    editor.buffers.get(&request.path).cloned()
                };
                match text {
                    Some(text) => responder.respond(ReadTextFileResponse::new(text)),
                    None => responder.respond_with_error(Error::new(
                        ErrorCode::RESOURCE_NOT_FOUND,
                        "no such file",
                    )),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: WriteTextFileRequest, responder, _cx| {
                let mut editor = on_write.lock().expect("lock");
                editor
                    .buffers
                    .insert(request.path.clone(), request.content.clone());
                editor.writes.push((request.path, request.content));
                responder.respond(WriteTextFileResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                let allow = request
                    .options
                    .iter()
                    .find(|option| option.kind == PermissionOptionKind::AllowOnce)
                    .map(|option| option.option_id.clone())
                    .expect("an allow-once option");
                on_ask
                    .lock()
                    .expect("lock")
                    .permissions
                    .push(request.tool_call.fields.title.clone().unwrap_or_default());
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(allow)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(agent, async |cx: ConnectionTo<Agent>| {
            let init = cx
                .send_request(
                    InitializeRequest::new(ProtocolVersion::V1)
                        .client_capabilities(ClientCapabilities::new().fs(fs)),
                )
                .block_task()
                .await?;
            let session = cx
                .send_request(NewSessionRequest::new(cwd).additional_directories(additional))
                .block_task()
                .await?
                .session_id;
            let request = PromptRequest::new(session, vec![ContentBlock::from("Change it.")]);
            let stop = cx.send_request(request).block_task().await?.stop_reason;
            Ok((init, stop))
        });
    let (init, stop) = tokio::time::timeout(TIMEOUT, run)
        .await
        .expect("the session finishes in time")
        .expect("the client side succeeds");
    let editor = std::mem::take(&mut *editor.lock().expect("lock"));
    (init, stop, editor)
}

/// The tool calls the client was told of.
fn calls(updates: &[SessionUpdate]) -> Vec<&ToolCall> {
    updates
        .iter()
        .filter_map(|update| match update {
            SessionUpdate::ToolCall(call) => Some(call),
            _ => None,
        })
        .collect()
}

/// The updates of the call with id `id`.
fn updates_of<'a>(updates: &'a [SessionUpdate], id: &str) -> Vec<&'a ToolCallUpdate> {
    updates
        .iter()
        .filter_map(|update| match update {
            SessionUpdate::ToolCallUpdate(update) if update.tool_call_id.0.as_ref() == id => {
                Some(update)
            }
            _ => None,
        })
        .collect()
}

/// The text of the result of the call with id `id`.
fn result_text(updates: &[SessionUpdate], id: &str) -> String {
    let last = updates_of(updates, id)
        .into_iter()
        .rfind(|update| update.fields.status == Some(ToolCallStatus::Completed))
        .unwrap_or_else(|| panic!("call {id} completed: {updates:#?}"));
    last.fields
        .content
        .iter()
        .flatten()
        .filter_map(|content| match content {
            ToolCallContent::Content(content) => match &content.content {
                ContentBlock::Text(text) => Some(text.text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The diffs (path, old text, new text) the updates of call `id` carried.
fn diffs_of(updates: &[SessionUpdate], id: &str) -> Vec<(PathBuf, Option<String>, String)> {
    let mut diffs = Vec::new();
    for update in updates_of(updates, id) {
        for content in update.fields.content.iter().flatten() {
            if let ToolCallContent::Diff(diff) = content {
                let diff = (
                    diff.path.clone(),
                    diff.old_text.clone(),
                    diff.new_text.clone(),
                );
                if !diffs.contains(&diff) {
                    diffs.push(diff);
                }
            }
        }
    }
    diffs
}

/// A project directory, canonical (the tools name files by where they
/// really are), holding `a.txt` with `text` on disk.
fn project(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("project");
    let root = std::fs::canonicalize(dir.path()).expect("canonical");
    std::fs::write(root.join("a.txt"), text).expect("write");
    (dir, root)
}

#[tokio::test]
async fn with_the_editors_file_system_read_sees_the_buffer_and_edit_writes_to_it() {
    let dir = tempfile::tempdir().expect("config dir");
    let config = deployment(dir.path(), &read_then_edit("a.txt", "unsaved", "edited"));
    let (_project, root) = project("on disk\n");
    let file = root.join("a.txt");
    let buffers = HashMap::from([(file.clone(), "unsaved text\n".to_owned())]);
    let fs = FileSystemCapabilities::new()
        .read_text_file(true)
        .write_text_file(true);
    let (init, stop, editor) = acp_turn(&config, fs, buffers, &root, Vec::new()).await;

    assert_eq!(stop, StopReason::EndTurn);
    assert!(
        init.agent_capabilities
            .session_capabilities
            .additional_directories
            .is_some(),
        "dsh advertises additionalDirectories"
    );
    let calls = calls(&editor.updates);
    let [read, edit] = calls.as_slice() else {
        panic!("two calls: {calls:#?}");
    };
    // `read`: kind read, at the file; it shows the buffer, not the disk.
    assert_eq!(read.kind, ToolKind::Read);
    assert_eq!(
        read.locations
            .iter()
            .map(|location| &location.path)
            .collect::<Vec<_>>(),
        [&file]
    );
    assert_eq!(
        result_text(&editor.updates, &read.tool_call_id.0),
        "     1\tunsaved text\n"
    );
    // `edit`: kind edit; the change went to the editor, as a write of the
    // whole new text, and came back as a diff at its first changed line.
    assert_eq!(edit.kind, ToolKind::Edit);
    assert_eq!(editor.writes, [(file.clone(), "edited text\n".to_owned())]);
    assert_eq!(
        diffs_of(&editor.updates, &edit.tool_call_id.0),
        [(
            file.clone(),
            Some("unsaved text\n".to_owned()),
            "edited text\n".to_owned()
        )]
    );
    let located = updates_of(&editor.updates, &edit.tool_call_id.0)
        .into_iter()
        .find_map(|update| update.fields.locations.clone())
        .expect("the change's location");
    assert_eq!(
        (located[0].path.clone(), located[0].line),
        (file.clone(), Some(1))
    );
    assert!(
        result_text(&editor.updates, &edit.tool_call_id.0)
            .contains("replaced 1 occurrence; lines 1-1 now read:\n     1\tedited text")
    );
    // The disk was never touched.
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "on disk\n");
}

#[tokio::test]
async fn without_the_editors_file_system_the_disk_changes() {
    let dir = tempfile::tempdir().expect("config dir");
    let config = deployment(dir.path(), &read_then_edit("a.txt", "on disk", "edited"));
    let (_project, root) = project("on disk\n");
    let file = root.join("a.txt");
    let (_, stop, editor) = acp_turn(
        &config,
        FileSystemCapabilities::new(),
        HashMap::new(),
        &root,
        Vec::new(),
    )
    .await;

    assert_eq!(stop, StopReason::EndTurn);
    assert!(editor.reads.is_empty() && editor.writes.is_empty());
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "edited\n");
    let edit = calls(&editor.updates)[1].tool_call_id.0.clone();
    assert_eq!(
        diffs_of(&editor.updates, &edit),
        [(file, Some("on disk\n".to_owned()), "edited\n".to_owned())]
    );
}

#[tokio::test]
async fn additional_directories_need_no_question_and_the_rest_is_asked() {
    let dir = tempfile::tempdir().expect("config dir");
    let (extra, elsewhere) = (
        tempfile::tempdir().expect("extra"),
        tempfile::tempdir().expect("elsewhere"),
    );
    let extra_file = real_file(&extra, "in-extra.txt");
    let outside_file = real_file(&elsewhere, "outside.txt");
    let answers = writes(&[(&extra_file, "extra\n"), (&outside_file, "outside\n")]);
    let config = deployment(dir.path(), &answers);
    let (_project, root) = project("");
    let (_, stop, editor) = acp_turn(
        &config,
        FileSystemCapabilities::new(),
        HashMap::new(),
        &root,
        vec![extra.path().to_owned()],
    )
    .await;

    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(
        editor.permissions,
        [format!(
            "write {} (outside the workspace)",
            outside_file.display()
        )]
    );
    assert_eq!(
        std::fs::read_to_string(&extra_file).expect("read"),
        "extra\n"
    );
    assert_eq!(
        std::fs::read_to_string(&outside_file).expect("read"),
        "outside\n"
    );
}

#[test]
fn dsh_run_refuses_a_change_outside_the_workspace_and_makes_one_inside() {
    let dir = tempfile::tempdir().expect("config dir");
    let (_project, root) = project("");
    let outside = tempfile::tempdir().expect("outside");
    let target = real_file(&outside, "escaped.txt");
    let answers = writes(&[(&target, "out\n"), (Path::new("sub/in.txt"), "in\n")]);
    let config = deployment(dir.path(), &answers);
    let cwd = root.display().to_string();
    // dsh's temporary directory is its own, so `outside` is outside the
    // sandbox's writable set wherever the machine keeps temporary files.
    let (mut run, recorded) =
        common::recording_run(dir.path(), &config, &["--cwd", &cwd, "-p", "Write both."]);
    let output = run
        .env("TMPDIR", common::own_tmpdir())
        .output()
        .expect("dsh runs");
    common::assert_status(&output, 0);
    let requests = common::recorded_requests(&recorded);

    assert!(!target.exists());
    assert_eq!(
        std::fs::read_to_string(root.join("sub/in.txt")).expect("read"),
        "in\n"
    );
    let refusal = requests[1]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|message| message["role"] == "tool")
        .expect("a tool result")["text"]
        .as_str()
        .expect("text")
        .to_owned();
    assert_eq!(
        refusal,
        format!(
            "tool `write` failed: `{target}` is outside the workspace: it resolves to `{target}`, \
             which is not inside the working directory `{cwd}`; `write` changes files elsewhere \
             only in a directory the deployment lists, as in `[tools.write] roots = [\"{dir}\"]`",
            target = target.display(),
            dir = target.parent().expect("parent").display()
        )
    );
}

#[test]
fn a_deployments_roots_let_dsh_run_write_there() {
    let dir = tempfile::tempdir().expect("config dir");
    let (_project, root) = project("");
    let outside = tempfile::tempdir().expect("outside");
    let target = outside.path().join("allowed.txt");
    let answers = writes(&[(&target, "fine\n")]);
    let config = common::scripted_config(
        dir.path(),
        &answers,
        &format!(
            "[tools.write]\nroots = [{:?}]\n\
             [[agents]]\nid = \"editor\"\ntools = [\"write\"]\npersona = \"You write.\"\n",
            outside.path().display().to_string()
        ),
    );
    let cwd = root.display().to_string();
    common::run_recorded(dir.path(), &config, &["--cwd", &cwd, "-p", "Write it."]);
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "fine\n");
}
