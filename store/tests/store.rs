//! The store on real files: round trips, torn records, versions, modes,
//! locks, and several processes writing at once.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use dsh_agent_types::{Event, ToolCall, TurnEndReason};
use dsh_session_store::{
    INTERRUPTED_CALL, INTERRUPTED_TURN, ListQuery, NewSession, RecordedChange, RecordedQuestion,
    RequestPrefix, SessionWriter, Store, StoreError,
};

fn a_turn() -> Vec<Event> {
    vec![
        Event::UserMessage {
            text: "list the files\nplease".into(),
        },
        Event::StepStart { step: 1 },
        Event::Context {
            text: "todo: none".into(),
        },
        Event::AssistantMessage {
            text: "Looking.".into(),
            thoughts: Vec::new(),
        },
        Event::ToolCall {
            call: ToolCall::new("c1", "bash", r#"{"command":"ls"}"#),
        },
        Event::ToolResult {
            call_id: "c1".into(),
            name: "bash".into(),
            text: "a\nb".into(),
            is_error: false,
            images: Vec::new(),
        },
        Event::StepStart { step: 2 },
        Event::AssistantMessage {
            text: "Two files.".into(),
            thoughts: Vec::new(),
        },
        Event::TurnEnd {
            reason: TurnEndReason::Completed,
            error: None,
        },
    ]
}

fn store_in(dir: &Path) -> Store {
    Store::open(dir.join("state/dsh/sessions.db")).expect("the store opens")
}

/// A store in a temp dir of its own; keep the dir alive.
fn temp_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = store_in(dir.path());
    (dir, store)
}

/// A new session of agent `coder` on model `m`.
fn coder_session(store: &Store) -> SessionWriter {
    store
        .create(&NewSession::new("coder", "m"))
        .expect("the session is created")
}

/// A coder session with its first event and the prefix `You code.`
/// recorded, and its id.
fn recorded_session(store: &Store) -> (SessionWriter, String) {
    let writer = coder_session(store);
    writer.append(&a_turn()[0]).expect("the event is recorded");
    writer
        .record_prefix(&a_prefix("You code."))
        .expect("the prefix is recorded");
    let id = writer.id().to_owned();
    (writer, id)
}

fn raw(store: &Store) -> rusqlite::Connection {
    rusqlite::Connection::open(store.path()).expect("the file opens")
}

#[test]
fn a_session_round_trips() {
    let (_dir, store) = temp_store();
    let new = NewSession::new("coder", "gpt-5")
        .with_cwd("/work/project")
        .with_deployment("/work/dsh.toml", "abc123");
    let writer = store.create(&new).unwrap();
    for event in a_turn() {
        writer.append(&event).unwrap();
    }
    let id = writer.id().to_owned();
    drop(writer);

    // Another handle on the same file: nothing lives only in memory.
    let store = Store::open(store.path()).unwrap();
    let loaded = store.load(&id).unwrap();
    assert_eq!(loaded.events, a_turn());
    assert!(loaded.closed.is_empty() && loaded.skipped.is_empty());
    let info = loaded.info;
    assert_eq!(info.agent, "coder");
    assert_eq!(info.model, "gpt-5");
    assert_eq!(info.cwd.as_deref(), Some(Path::new("/work/project")));
    assert_eq!(
        info.deployment.as_deref(),
        Some(Path::new("/work/dsh.toml"))
    );
    assert_eq!(info.deployment_hash.as_deref(), Some("abc123"));
    assert_eq!(info.title, "list the files");
    assert!(info.updated_at_ms >= info.created_at_ms);
}

#[test]
fn the_directory_and_the_file_are_private() {
    let (_dir, store) = temp_store();
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(store.path().parent().unwrap()), 0o700);
    assert_eq!(mode(store.path()), 0o600);
    let writer = coder_session(&store);
    writer.append(&a_turn()[0]).unwrap();
    let wal = PathBuf::from(format!("{}-wal", store.path().display()));
    assert_eq!(mode(&wal), 0o600, "the WAL holds conversations too");
}

#[test]
fn the_store_is_in_wal_mode() {
    let (_dir, store) = temp_store();
    let mode: String = raw(&store)
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn a_results_images_round_trip_and_a_result_without_them_loads_as_before() {
    let (_dir, store) = temp_store();
    let writer = coder_session(&store);
    let mut events = a_turn();
    let shot = Event::ToolResult {
        call_id: "c2".into(),
        name: "docs__image".into(),
        text: "a pixel:".into(),
        is_error: false,
        images: vec![dsh_agent_types::Image {
            mime_type: "image/png".into(),
            data: "iVBORw0K".into(),
        }],
    };
    events.insert(6, shot);
    for event in &events {
        writer.append(event).unwrap();
    }
    let id = writer.id().to_owned();
    drop(writer);
    let loaded = store.load(&id).unwrap();
    assert_eq!(loaded.events, events);
    // A result without images is written as a dsh before them wrote it,
    // and such a record loads.
    let body: String = raw(&store)
        .query_row(
            "SELECT body FROM events WHERE session_id = ?1 AND seq = 6",
            [&id],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(
        body,
        r#"{"type":"tool_result","call_id":"c1","name":"bash","text":"a\nb","is_error":false}"#
    );
}

#[test]
fn a_torn_record_is_reported_and_skipped() {
    let (_dir, store) = temp_store();
    let writer = coder_session(&store);
    for event in a_turn() {
        writer.append(&event).unwrap();
    }
    let id = writer.id().to_owned();
    drop(writer);
    let conn = raw(&store);
    // Half a JSON object, and a kind a newer dsh might write.
    conn.execute(
        "UPDATE events SET body = '{\"type\":\"assistant_message\",\"te' WHERE session_id = ?1 AND seq = 8",
        [&id],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO events (session_id, seq, kind, body, at) VALUES (?1, 100, 'compaction', '{\"type\":\"compaction\",\"summary\":\"s\"}', 0)",
        [&id],
    )
    .unwrap();

    let loaded = store.load(&id).unwrap();
    let mut expected = a_turn();
    expected.remove(7);
    assert_eq!(loaded.events, expected, "the rest of the session loads");
    assert_eq!(loaded.skipped.len(), 2);
    assert_eq!(loaded.skipped[0].seq, 8);
    assert!(
        loaded.skipped[0]
            .to_string()
            .contains("does not read as an event"),
        "{}",
        loaded.skipped[0]
    );
    assert!(
        loaded.skipped[1]
            .to_string()
            .contains("does not know the kind `compaction`"),
        "{}",
        loaded.skipped[1]
    );
}

#[test]
fn a_crash_mid_call_resumes_with_the_call_interrupted() {
    let (_dir, store) = temp_store();
    let writer = coder_session(&store);
    // The process died while `c1` ran: no result, no turn end.
    for event in &a_turn()[..5] {
        writer.append(event).unwrap();
    }
    let id = writer.id().to_owned();
    drop(writer);

    let (loaded, writer) = store.resume(&id).unwrap();
    assert_eq!(loaded.events[3], a_turn()[3], "the step's answer stays");
    assert_eq!(
        loaded.events[5..],
        [
            Event::ToolResult {
                call_id: "c1".into(),
                name: "bash".into(),
                text: INTERRUPTED_CALL.into(),
                is_error: true,
                images: Vec::new(),
            },
            Event::TurnEnd {
                reason: TurnEndReason::Error,
                error: Some(INTERRUPTED_TURN.into()),
            },
        ]
    );
    drop(writer);
    // Written back: the stored log is whole now.
    let again = store.load(&id).unwrap();
    assert!(again.closed.is_empty());
    assert_eq!(again.events, loaded.events);
}

#[test]
fn a_session_open_elsewhere_is_read_but_not_written() {
    let (_dir, store) = temp_store();
    let writer = coder_session(&store);
    writer.append(&a_turn()[0]).unwrap();
    let id = writer.id().to_owned();
    let other = Store::open(store.path()).unwrap();
    assert_eq!(other.load(&id).unwrap().events.len(), 2);
    assert!(matches!(other.resume(&id), Err(StoreError::InUse { .. })));
    assert!(matches!(other.delete(&id), Err(StoreError::InUse { .. })));
    // Loading did not write the closing events of the open turn.
    drop(writer);
    assert_eq!(other.resume(&id).unwrap().0.closed.len(), 1);
}

#[test]
fn list_filters_by_cwd_and_pages() {
    let (_dir, store) = temp_store();
    let mut ids = Vec::new();
    for n in 0..5 {
        let cwd = if n % 2 == 0 { "/a" } else { "/b" };
        let writer = store
            .create(&NewSession::new("coder", "m").with_cwd(cwd))
            .unwrap();
        writer
            .append(&Event::UserMessage {
                text: format!("prompt {n}"),
            })
            .unwrap();
        ids.push(writer.id().to_owned());
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let all = store.list(&ListQuery::default()).unwrap();
    assert_eq!(all.len(), 5);
    assert_eq!(all[0].title, "prompt 4", "the newest first");

    let mut query = ListQuery::default();
    query.cwd = Some("/a".into());
    query.limit = Some(2);
    let first = store.list(&query).unwrap();
    assert_eq!(
        first.iter().map(|s| s.title.as_str()).collect::<Vec<_>>(),
        ["prompt 4", "prompt 2"]
    );
    let last = first.last().unwrap();
    query.before = Some((last.updated_at_ms, last.id.clone()));
    let second = store.list(&query).unwrap();
    assert_eq!(
        second.iter().map(|s| s.title.as_str()).collect::<Vec<_>>(),
        ["prompt 0"]
    );
    assert_eq!(
        store
            .latest_in(Path::new("/b"), Some("coder"))
            .unwrap()
            .unwrap()
            .title,
        "prompt 3"
    );
}

#[test]
fn a_calls_questions_are_kept_beside_its_changes_and_neither_reads_as_the_other() {
    let (_dir, store) = temp_store();
    let (writer, id) = recorded_session(&store);
    let change = RecordedChange::new("/p/a.txt".into(), None, "a\n".to_owned(), 1);
    let question = |n: u32, answered: bool| {
        RecordedQuestion::new(
            format!("sampling-{n}"),
            "MCP server `docs` asks to use the model".to_owned(),
            "user: hi".to_owned(),
            serde_json::json!({"server": "docs", "maxTokens": 64}),
            answered,
        )
    };
    writer
        .record_question("call_1", &question(1, true))
        .unwrap();
    writer.record_change("call_1", &change).unwrap();
    writer
        .record_question("call_1", &question(2, false))
        .unwrap();
    let changes = store.changes(&id).unwrap();
    assert_eq!(changes["call_1"], [change]);
    let questions = store.questions(&id).unwrap();
    assert_eq!(questions["call_1"], [question(1, true), question(2, false)]);
}

#[test]
fn delete_removes_a_session_and_its_events() {
    let (_dir, store) = temp_store();
    let (writer, id) = recorded_session(&store);
    writer.set("mode", "ask").unwrap();
    let change = RecordedChange::new("/p/a.txt".into(), None, "a\n".to_owned(), 1);
    writer.record_change("call_1", &change).unwrap();
    let kept = coder_session(&store);
    drop(writer);
    store.delete(&id).unwrap();
    assert!(matches!(store.load(&id), Err(StoreError::NotFound { .. })));
    for table in ["events", "prefixes", "settings", "changes"] {
        let rows: i64 = raw(&store)
            .query_row(
                &format!("SELECT COUNT(*) FROM {table} WHERE session_id = ?1"),
                [&id],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(rows, 0, "{table}");
    }
    let error = store.delete("no-such-id").unwrap_err();
    assert!(
        error.to_string().contains("no session `no-such-id`"),
        "{error}"
    );
    // `--all` leaves the one still open.
    assert_eq!(store.delete_all().unwrap(), [kept.id().to_owned()]);
}

#[test]
fn a_newer_store_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE future (x); PRAGMA user_version = 99;")
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let error = Store::open(&path).unwrap_err();
    assert!(matches!(error, StoreError::TooNew { found: 99, .. }));
    assert!(error.to_string().contains("schema version 99"), "{error}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "never rewritten");
}

#[test]
fn a_foreign_database_is_not_taken_over() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE notes (x);")
        .unwrap();
    assert!(matches!(
        Store::open(&path),
        Err(StoreError::NotAStore { .. })
    ));
}

/// The child side of [`two_processes_write_at_once`]: writes one session
/// of `EVENTS` events into the store named by the environment.
const CHILD_ENV: &str = "DSH_STORE_TEST_CHILD";
const EVENTS: usize = 150;

#[test]
fn child_writer() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let store = Store::open(PathBuf::from(path)).unwrap();
    let writer = Arc::new(store.create(&NewSession::new("child", "m")).unwrap());
    let record = writer.recorder();
    for n in 0..EVENTS {
        record(&Event::UserMessage {
            text: format!("{n}"),
        });
    }
    assert!(writer.take_failure().is_none());
}

#[test]
fn two_processes_write_at_once() {
    let (_dir, store) = temp_store();
    let spawn = || {
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_writer", "--quiet"])
            .env(CHILD_ENV, store.path())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let children = [spawn(), spawn()];
    // And this process too, at the same time.
    let writer = store.create(&NewSession::new("parent", "m")).unwrap();
    for n in 0..EVENTS {
        writer
            .append(&Event::UserMessage {
                text: format!("{n}"),
            })
            .unwrap();
    }
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let sessions = store.list(&ListQuery::default()).unwrap();
    assert_eq!(sessions.len(), 3);
    for info in sessions {
        let loaded = store.load(&info.id).unwrap();
        assert!(loaded.skipped.is_empty());
        let texts: Vec<String> = loaded
            .events
            .iter()
            .filter_map(|event| match event {
                Event::UserMessage { text } => Some(text.clone()),
                _ => None,
            })
            .collect();
        let expected: Vec<String> = (0..EVENTS).map(|n| n.to_string()).collect();
        assert_eq!(texts, expected, "session {} of {}", info.id, info.agent);
    }
}

fn a_prefix(system_prompt: &str) -> RequestPrefix {
    RequestPrefix::new(
        system_prompt,
        vec![("agent:persona".to_owned(), 0..system_prompt.len())],
        vec![("bash".to_owned(), r#"{"name":"bash"}"#.to_owned())],
    )
}

#[test]
fn the_last_request_prefix_is_kept_replaced_and_reloaded() {
    let (_dir, store) = temp_store();
    let writer = coder_session(&store);
    let id = writer.id().to_owned();
    assert_eq!(store.load(&id).unwrap().prefix, None);
    writer.record_prefix(&a_prefix("You code.")).unwrap();
    writer.record_prefix(&a_prefix("You review.")).unwrap();
    drop(writer);
    let (loaded, _writer) = store.resume(&id).unwrap();
    assert_eq!(loaded.prefix, Some(a_prefix("You review.")), "the last one");
}

#[test]
fn a_calls_file_changes_are_kept_in_order_by_call() {
    let (dir, store) = temp_store();
    let writer = coder_session(&store);
    let id = writer.id().to_owned();
    assert!(store.changes(&id).unwrap().is_empty());
    let change = |text: &str, line| {
        RecordedChange::new(
            "/p/a.txt".into(),
            Some("old\n".to_owned()),
            text.to_owned(),
            line,
        )
    };
    writer.record_change("call_2", &change("x\n", 3)).unwrap();
    writer.record_change("call_1", &change("b\n", 2)).unwrap();
    writer.record_change("call_1", &change("a\n", 1)).unwrap();
    drop(writer);
    // Another process reads them back, each call's in the order recorded.
    let changes = store_in(dir.path()).changes(&id).unwrap();
    assert_eq!(changes["call_1"], [change("b\n", 2), change("a\n", 1)]);
    assert_eq!(changes["call_2"], [change("x\n", 3)]);
}

#[test]
fn a_sessions_settings_are_kept_replaced_and_reloaded() {
    let (_dir, store) = temp_store();
    let writer = coder_session(&store);
    let id = writer.id().to_owned();
    assert!(store.load(&id).unwrap().settings.is_empty());
    writer.set("mode", "ask").unwrap();
    writer.set("model", "small").unwrap();
    writer.set("mode", "read-only").unwrap();
    drop(writer);
    let (loaded, _writer) = store.resume(&id).unwrap();
    let settings: Vec<(&str, &str)> = (loaded.settings.iter())
        .map(|(key, value)| (key.as_str(), value.as_str()))
        .collect();
    assert_eq!(settings, [("mode", "read-only"), ("model", "small")]);
}

#[test]
fn a_torn_prefix_is_reported_and_the_session_still_loads() {
    let (_dir, store) = temp_store();
    let (writer, id) = recorded_session(&store);
    drop(writer);
    raw(&store)
        .execute(
            "UPDATE prefixes SET body = '{\"system_prompt\": \"You c' WHERE session_id = ?1",
            [&id],
        )
        .unwrap();
    let loaded = store.load(&id).unwrap();
    assert_eq!(loaded.prefix, None);
    assert_eq!(loaded.events.len(), 2, "the prompt, and the end closing it");
    let [skipped] = loaded.skipped.as_slice() else {
        panic!("one skipped record: {:?}", loaded.skipped);
    };
    assert_eq!(skipped.kind, "request_prefix");
    assert!(skipped.reason.contains("request prefix"), "{skipped}");
}

/// The file SQLite keeps beside the store at `path` with `suffix`
/// (`-wal`, `-shm`).
fn beside(path: &Path, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{}{suffix}", path.display()))
}

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// Opening a FIFO for writing waits for a reader: the store refuses it
/// before anything opens it, or this test would never end.
#[test]
fn a_fifo_at_the_store_path_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let error = Store::open(&path).unwrap_err();
    assert!(
        matches!(
            &error,
            StoreError::NotARegularFile {
                kind: "a FIFO (named pipe)",
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "the session store's file `{}` is a FIFO (named pipe), not a regular file; move \
             it away, or name another store with `[sessions] path`",
            path.display()
        )
    );
}

#[test]
fn a_directory_at_the_store_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    std::fs::create_dir(&path).unwrap();
    let error = Store::open(&path).unwrap_err();
    assert!(
        matches!(&error, StoreError::NotARegularFile { path: at, kind: "a directory" } if *at == path),
        "{error:?}"
    );
}

/// SQLite's WAL beside the store is checked as the store is.
#[test]
fn a_fifo_beside_the_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let wal = beside(&path, "-wal");
    nix::unistd::mkfifo(&wal, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let error = Store::open(&path).unwrap_err();
    assert!(
        matches!(&error, StoreError::NotARegularFile { path: at, kind: "a FIFO (named pipe)" } if *at == wal),
        "{error:?}"
    );
}

/// A session's lock is a file beside the store too.
#[test]
fn a_fifo_at_a_sessions_lock_is_refused() {
    let (_dir, store) = temp_store();
    let (writer, id) = recorded_session(&store);
    drop(writer);
    let lock = beside(store.path(), "-locks").join(&id);
    std::fs::remove_file(&lock).unwrap();
    nix::unistd::mkfifo(&lock, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let error = store.resume(&id).unwrap_err();
    assert!(
        matches!(&error, StoreError::NotARegularFile { path: at, kind: "a FIFO (named pipe)" } if *at == lock),
        "{error:?}"
    );
}

/// A store made before dsh kept it private, or opened up by hand: the
/// file, its WAL and its shared memory are each tightened, and nothing
/// else changes.
#[test]
fn a_store_open_to_others_is_made_private_with_its_wal_and_shm() {
    let (_dir, store) = temp_store();
    let (writer, id) = recorded_session(&store);
    drop(writer);
    let path = store.path().to_owned();
    drop(store);
    let opened = [
        (path.clone(), 0o644),
        (beside(&path, "-wal"), 0o640),
        (beside(&path, "-shm"), 0o666),
    ];
    for (file, mode) in &opened {
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(*mode)).unwrap();
    }
    let store = Store::open(&path).unwrap();
    for (file, _) in &opened {
        assert_eq!(mode_of(file), 0o600, "{}", file.display());
    }
    assert_eq!(store.load(&id).unwrap().info.title, "list the files");
}

/// The child side of [`another_users_open_store_is_refused`]: opens, as
/// a user who does not own it, the store named by the environment.
const FOREIGN_ENV: &str = "DSH_STORE_TEST_FOREIGN";

#[test]
fn foreign_store_child() {
    let Some(path) = std::env::var_os(FOREIGN_ENV) else {
        return;
    };
    let path = PathBuf::from(path);
    let error = Store::open(&path).unwrap_err();
    assert!(
        matches!(
            &error,
            StoreError::NotPrivate {
                mode: 0o644,
                owner: 0,
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.starts_with(&format!(
            "the session store's file `{}` is open to other users (mode 0644) and cannot be \
             made private",
            path.display()
        )),
        "{message}"
    );
    assert!(
        message.contains("it belongs to uid 0, who can `chmod 600` it"),
        "{message}"
    );
}

/// Root's store, readable by all, opened by `nobody`: it cannot be made
/// private, and is refused saying so rather than used as it is. Only
/// root can make a file of another user's, so the test needs root (as
/// the tests run on CI); it opens the store in a child process that
/// runs as `nobody`.
#[test]
fn another_users_open_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let path = store.path().to_owned();
    drop(store);
    if std::fs::metadata(&path).unwrap().uid() != 0 {
        // Not root: this user can make no file of another user's.
        return;
    }
    // `nobody` may reach the store, and read it.
    let mut reach = path.parent();
    while let Some(dir_of) = reach.filter(|at| at.starts_with(dir.path())) {
        std::fs::set_permissions(dir_of, std::fs::Permissions::from_mode(0o755)).unwrap();
        reach = dir_of.parent();
    }
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = std::fs::read(&path).unwrap();
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "foreign_store_child", "--nocapture"])
        .env(FOREIGN_ENV, &path)
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(mode_of(&path), 0o644, "left as it was");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

/// Bytes that are no database: a fixed xorshift sequence.
fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[0]
        })
        .collect()
}

/// A damaged store's error names the file and both ways on: move it
/// aside, or run without the store.
fn assert_damaged(error: &StoreError, path: &Path) {
    assert!(matches!(error, StoreError::Damaged { .. }), "{error:?}");
    let message = error.to_string();
    for needle in [
        format!("the session store `{}` is damaged (", path.display()),
        "move it aside with its `-wal` and `-shm` files".to_owned(),
        "`--no-store`".to_owned(),
    ] {
        assert!(message.contains(&needle), "{needle:?} in {message}");
    }
}

#[test]
fn a_file_of_random_bytes_is_a_damaged_store_with_a_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    std::fs::write(&path, noise(8192)).unwrap();
    assert_damaged(&Store::open(&path).unwrap_err(), &path);
    assert_eq!(std::fs::read(&path).unwrap(), noise(8192), "left as it was");
}

#[test]
fn a_truncated_store_is_damaged_with_a_way_out() {
    let (_dir, store) = temp_store();
    for _ in 0..20 {
        let writer = coder_session(&store);
        for n in 0..10 {
            let text = format!("{n} {}", "many words ".repeat(200));
            writer.append(&Event::UserMessage { text }).unwrap();
        }
    }
    let path = store.path().to_owned();
    drop(store);
    // Everything into the file itself, and no WAL left beside it: the
    // file alone is the store, and half of it is lost.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(conn);
    assert!(!beside(&path, "-wal").exists());
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len > 100_000, "{len} bytes");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let error = Store::open(&path)
        .and_then(|store| store.list(&ListQuery::default()))
        .unwrap_err();
    assert_damaged(&error, &path);
}
