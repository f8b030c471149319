//! Sessions that survive their process: `dsh run` records into the store,
//! `--continue`/`--resume` bring a session back (also after `kill -9`),
//! `dsh sessions` lists and deletes, `--no-store` and `[sessions]` turn it
//! off.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{self, assert_status, stderr, stdout, write};

/// A deployment of `runner` with bash and todo_write whose store is
/// `sessions.db` in `dir` (`extra` is added to `[sessions]`).
fn deployment(dir: &Path, answers: &str, extra: &str) -> String {
    common::scripted_config(
        dir,
        answers,
        &format!(
            "[sessions]\npath = \"sessions.db\"\n{extra}\n{}",
            common::runner("", &["bash", "todo_write"])
        ),
    )
}

/// `dsh` with `args` in the working directory `cwd`.
fn dsh_in(cwd: &Path, args: &[&str]) -> Command {
    let mut command = common::command(args);
    command.current_dir(cwd);
    command
}

fn sessions_json(dir: &Path, config: &str) -> Vec<Value> {
    let output = dsh_in(dir, &["sessions", "--config", config, "--json"])
        .output()
        .unwrap();
    assert_status(&output, 0);
    serde_json::from_str::<Value>(&stdout(&output))
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// `dsh run --config config` with `args` in the working directory `dir`,
/// which may fail: its output, and the model requests it recorded.
fn run(dir: &Path, config: &str, args: &[&str]) -> (std::process::Output, Vec<Value>) {
    let (mut run, recorded) = common::recording_run(dir, config, args);
    let output = run.current_dir(dir).output().unwrap();
    (output, common::recorded_requests(&recorded))
}

#[test]
fn a_run_is_recorded_and_continued_with_its_history() {
    let dir = tempfile::tempdir().unwrap();
    let config = deployment(dir.path(), "[[answers]]\ntext = \"First answer.\"\n", "");
    let (output, _) = run(dir.path(), &config, &["-p", "Remember the word kiwi."]);
    assert_status(&output, 0);

    let sessions = sessions_json(dir.path(), &config);
    assert_eq!(sessions.len(), 1);
    let session = &sessions[0];
    assert_eq!(session["agent"], "runner");
    assert_eq!(session["model"], "m");
    assert_eq!(session["title"], "Remember the word kiwi.");
    let cwd = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(session["cwd"], cwd.display().to_string());

    write(
        &dir.path().join("answers.toml"),
        "[[answers]]\ntext = \"kiwi\"\n",
    );
    let (output, requests) = run(dir.path(), &config, &["--continue", "-p", "Which word?"]);
    assert_status(&output, 0);
    assert_eq!(stdout(&output), "kiwi\n");
    assert!(
        stderr(&output).contains("> Remember the word kiwi."),
        "the history is shown: {}",
        stderr(&output)
    );
    let messages = requests[0]["messages"].as_array().unwrap();
    let texts: Vec<&str> = messages
        .iter()
        .map(|message| message["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        ["Remember the word kiwi.", "First answer.", "Which word?"]
    );
    // Still one session, now with both turns.
    let sessions = sessions_json(dir.path(), &config);
    assert_eq!(sessions.len(), 1);

    // `--resume ID` is the same session by its id.
    let id = sessions[0]["id"].as_str().unwrap().to_owned();
    write(
        &dir.path().join("answers.toml"),
        "[[answers]]\ntext = \"still kiwi\"\n",
    );
    let (output, requests) = run(dir.path(), &config, &["--resume", &id, "-p", "Again?"]);
    assert_status(&output, 0);
    assert_eq!(requests[0]["messages"].as_array().unwrap().len(), 5);
}

/// `kill -9` while a tool runs: what the step had written stays, the call
/// is answered as interrupted, and the session continues.
#[test]
fn a_killed_run_continues_with_the_call_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let config = deployment(
        dir.path(),
        "[[answers]]\ntext = \"Sleeping now.\"\n\
         [[answers.tool_calls]]\nname = \"bash\"\narguments = { command = \"sleep 30\" }\n\
         [[answers]]\ntext = \"never\"\n",
        "",
    );
    let mut child = dsh_in(dir.path(), &["run", "--config", &config, "-p", "Sleep."])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr_lines = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("→ bash") {
        let mut line = String::new();
        if stderr_lines.read_line(&mut line).unwrap() == 0 {
            panic!("dsh ended before running the tool:\n{seen}");
        }
        seen.push_str(&line);
    }
    child.kill().unwrap(); // SIGKILL: no cleanup of any kind.
    child.wait().unwrap();

    write(
        &dir.path().join("answers.toml"),
        "[[answers]]\ntext = \"Woke up.\"\n",
    );
    let (output, requests) = run(dir.path(), &config, &["--continue", "-p", "Are you awake?"]);
    assert_status(&output, 0);
    let stderr = stderr(&output);
    assert!(stderr.contains("> Sleep."), "{stderr}");
    assert!(stderr.contains("cut off mid-turn"), "{stderr}");
    let messages = requests[0]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4, "{messages:#?}");
    assert_eq!(messages[0]["text"], "Sleep.");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["text"], "Sleeping now.");
    assert_eq!(messages[1]["tool_calls"][0]["name"], "bash");
    assert_eq!(messages[2]["role"], "tool");
    assert_eq!(messages[2]["is_error"], true);
    assert_eq!(
        messages[2]["text"],
        dsh_session_store::INTERRUPTED_CALL,
        "the model learns the call was interrupted"
    );
    assert_eq!(messages[3]["text"], "Are you awake?");
    assert_eq!(stdout(&output), "Woke up.\n");
}

#[test]
fn sessions_are_listed_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let config = deployment(dir.path(), "[[answers]]\ntext = \"ok\"\n", "");
    for prompt in ["one", "two"] {
        let (output, _) = run(dir.path(), &config, &["-p", prompt]);
        assert_status(&output, 0);
    }
    let listed = dsh_in(dir.path(), &["sessions", "--config", &config])
        .output()
        .unwrap();
    assert_status(&listed, 0);
    let text = stdout(&listed);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].starts_with("ID") && lines[0].ends_with("TITLE"),
        "{text}"
    );
    assert!(
        lines[1].contains("runner") && lines[1].ends_with("two"),
        "{text}"
    );

    let sessions = sessions_json(dir.path(), &config);
    let id = sessions[0]["id"].as_str().unwrap();
    let deleted = dsh_in(dir.path(), &["sessions", "--config", &config, "delete", id])
        .output()
        .unwrap();
    assert_status(&deleted, 0);
    assert_eq!(sessions_json(dir.path(), &config).len(), 1);

    let unknown = dsh_in(
        dir.path(),
        &["sessions", "--config", &config, "delete", "nope"],
    )
    .output()
    .unwrap();
    common::assert_fails_saying(&unknown, "no session `nope`");

    let all = dsh_in(
        dir.path(),
        &["sessions", "--config", &config, "delete", "--all"],
    )
    .output()
    .unwrap();
    assert_status(&all, 0);
    assert!(sessions_json(dir.path(), &config).is_empty());
}

#[test]
fn the_store_is_private_and_in_the_state_directory_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::scripted_config(
        dir.path(),
        "[[answers]]\ntext = \"ok\"\n",
        &common::runner("", &["bash"]),
    );
    let state = dir.path().join("state");
    let output = dsh_in(dir.path(), &["run", "--config", &config, "-p", "hi"])
        .env("XDG_STATE_HOME", &state)
        .output()
        .unwrap();
    assert_status(&output, 0);
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&state.join("dsh")), 0o700);
    assert_eq!(mode(&state.join("dsh/sessions.db")), 0o600);
}

#[test]
fn no_store_and_enabled_false_record_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = deployment(dir.path(), "[[answers]]\ntext = \"ok\"\n", "");
    let (output, _) = run(dir.path(), &config, &["--no-store", "-p", "hi"]);
    assert_status(&output, 0);
    assert!(!dir.path().join("sessions.db").exists());
    let (output, _) = run(
        dir.path(),
        &config,
        &["--no-store", "--continue", "-p", "hi"],
    );
    common::assert_fails_saying(&output, "need the session store");

    let off = tempfile::tempdir().unwrap();
    let config = deployment(
        off.path(),
        "[[answers]]\ntext = \"ok\"\n",
        "enabled = false",
    );
    let (output, _) = run(off.path(), &config, &["-p", "hi"]);
    assert_status(&output, 0);
    assert!(!off.path().join("sessions.db").exists());
    let listed = dsh_in(off.path(), &["sessions", "--config", &config])
        .output()
        .unwrap();
    common::assert_fails_saying(&listed, "records no sessions");
}

#[test]
fn continue_without_a_session_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let config = deployment(dir.path(), "[[answers]]\ntext = \"ok\"\n", "");
    let (output, _) = run(dir.path(), &config, &["--continue", "-p", "hi"]);
    common::assert_fails_saying(&output, "no recorded session of agent `runner`");
}

#[test]
fn a_changed_deployment_continues_on_the_new_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let config = deployment(dir.path(), "[[answers]]\ntext = \"ok\"\n", "");
    let (output, _) = run(dir.path(), &config, &["-p", "hi"]);
    assert_status(&output, 0);
    let text = std::fs::read_to_string(&config).unwrap();
    write(
        Path::new(&config),
        &text.replace("You are a test agent", "You are a changed agent"),
    );
    let (output, requests, first) = continue_traced(dir.path(), &config);
    assert!(
        stderr(&output).contains("the deployment changed since"),
        "{}",
        stderr(&output)
    );
    let system = requests[0]["system"].as_str().unwrap();
    assert!(system.contains("You are a changed agent"), "{system}");
    // The first request is compared with the last one the earlier process
    // sent: the prefix broke in the persona, after "You are a ".
    assert_eq!(first["prefix_broke_in"], "system_prompt", "{first}");
    assert_eq!(first["changed_section"], "agent:persona", "{first}");
    assert_eq!(
        first["shared_prefix_bytes"],
        system.find("changed").unwrap(),
        "{first}"
    );
    assert!(
        first["shared_prefix_tokens"].as_u64().unwrap() > 0,
        "{first}"
    );
}

#[test]
fn an_unchanged_deployment_continues_with_its_whole_prefix_shared() {
    let dir = tempfile::tempdir().unwrap();
    let config = deployment(dir.path(), "[[answers]]\ntext = \"ok\"\n", "");
    let (output, _) = run(dir.path(), &config, &["-p", "hi"]);
    assert_status(&output, 0);
    let (output, requests, first) = continue_traced(dir.path(), &config);
    assert_eq!(first["prefix_broke_in"], Value::Null, "{first}");
    // All the earlier request sent: the system prompt, the tools and the
    // first prompt (its answer came after it).
    let bytes = first["bytes"].as_u64().unwrap();
    let shared = first["shared_prefix_bytes"].as_u64().unwrap();
    let again = serde_json::to_string(&requests[0]["messages"].as_array().unwrap().last())
        .unwrap()
        .len() as u64;
    assert!(shared > 0 && shared < bytes - again, "{first}");
    assert!(
        stderr(&output).contains("the cache never broke"),
        "{}",
        stderr(&output)
    );
}

/// `dsh run --continue --trace … -p again`, which must succeed: its
/// output, its requests, and the first line of its trace.
fn continue_traced(dir: &Path, config: &str) -> (std::process::Output, Vec<Value>, Value) {
    let trace = dir.join("trace.jsonl");
    let trace_arg = trace.display().to_string();
    let (output, requests) = run(
        dir,
        config,
        &["--continue", "--trace", &trace_arg, "-p", "again"],
    );
    assert_status(&output, 0);
    let text = std::fs::read_to_string(trace).unwrap();
    let first = serde_json::from_str(text.lines().next().expect("a trace line")).unwrap();
    (output, requests, first)
}

/// A first prompt that would retitle the terminal (OSC 0, ended by BEL)
/// is listed escaped.
#[test]
fn sessions_lists_control_characters_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let config = deployment(dir.path(), "[[answers]]\ntext = \"ok\"\n", "");
    let (output, _) = run(dir.path(), &config, &["-p", "\x1b]0;owned\x07 hello"]);
    assert_status(&output, 0);
    let listed = dsh_in(dir.path(), &["sessions", "--config", &config])
        .output()
        .unwrap();
    assert_status(&listed, 0);
    let table = stdout(&listed);
    assert!(table.contains("\\u{1b}]0;owned\\u{7} hello"), "{table:?}");
    assert!(!table.contains(['\x1b', '\x07']), "{table:?}");
}

/// Random bytes where the store should be: every command that opens the
/// store names it and the ways on, and `--no-store` is one.
#[test]
fn a_damaged_store_names_the_file_and_the_ways_on() {
    let dir = tempfile::tempdir().unwrap();
    let config = deployment(dir.path(), "[[answers]]\ntext = \"ok\"\n", "");
    let store = dir.path().join("sessions.db");
    let noise: Vec<u8> = (0..4096u32)
        .map(|n| (n.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&store, &noise).unwrap();
    let (output, _) = run(dir.path(), &config, &["-p", "hi"]);
    let said = common::assert_fails_saying(&output, "is damaged (file is not a database");
    for needle in [
        format!("`{}`", store.display()),
        "move it aside with its `-wal` and `-shm` files".to_owned(),
        "`--no-store`".to_owned(),
    ] {
        assert!(said.contains(&needle), "{needle:?} in {said}");
    }
    let listed = dsh_in(dir.path(), &["sessions", "--config", &config])
        .output()
        .unwrap();
    common::assert_fails_saying(&listed, "is damaged (file is not a database");

    let (output, _) = run(dir.path(), &config, &["--no-store", "-p", "hi"]);
    assert_status(&output, 0);
    assert_eq!(std::fs::read(&store).unwrap(), noise, "left as it was");
}

/// A FIFO where the store should be: refused at once, naming it, where
/// opening it used to wait for a reader forever.
#[test]
fn a_fifo_at_the_store_path_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = deployment(dir.path(), "[[answers]]\ntext = \"ok\"\n", "");
    let store = dir.path().join("sessions.db");
    let made = Command::new("mkfifo").arg(&store).status().unwrap();
    assert!(made.success());
    let refusal = format!(
        "the session store's file `{}` is a FIFO (named pipe), not a regular file",
        store.display()
    );
    let listed = dsh_in(dir.path(), &["sessions", "--config", &config])
        .output()
        .unwrap();
    common::assert_fails_saying(&listed, &refusal);
    let (output, _) = run(dir.path(), &config, &["-p", "hi"]);
    common::assert_fails_saying(&output, &refusal);
}

/// An answer's thoughts are recorded with it: a continued session shows
/// them in its history and sends them with the answer again (signed ones
/// are what Anthropic needs to go on with a tool-using turn).
#[test]
fn a_continued_session_keeps_the_thoughts_of_its_answers() {
    let dir = tempfile::tempdir().unwrap();
    let config = deployment(
        dir.path(),
        "[[answers]]\ntext = \"First answer.\"\nthoughts = [\"Keep it short.\"]\n",
        "",
    );
    let (output, _) = run(dir.path(), &config, &["-p", "hi"]);
    assert_status(&output, 0);
    write(
        &dir.path().join("answers.toml"),
        "[[answers]]\ntext = \"Second.\"\n",
    );
    let (output, requests) = run(dir.path(), &config, &["--continue", "-p", "again"]);
    assert_status(&output, 0);
    let shown = stderr(&output);
    assert!(
        shown.contains("Keep it short.\nFirst answer.\n"),
        "the history shows the thought before its answer: {shown}"
    );
    assert_eq!(
        requests[0]["messages"][1]["thoughts"],
        serde_json::json!([{"kind": "text", "text": "Keep it short."}])
    );
}

/// `dsh run --continue` and `--resume ID` bring a session back with the
/// mode and the model it was switched to, not the deployment's: the
/// model answers as the picked one, under the picked mode's sandbox.
#[test]
fn a_continued_or_resumed_run_keeps_its_mode_and_model() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::scripted_config(
        dir.path(),
        "[[answers]]\ntext = \"one\"\n",
        &format!(
            "models = [\"m\", \"m2\"]\n[sessions]\npath = \"sessions.db\"\n{}",
            common::runner("", &["bash"])
        ),
    );
    let picked = ["--mode", "read-only", "--model", "m2", "-p", "first"];
    let (output, requests) = run(dir.path(), &config, &picked);
    assert_status(&output, 0);
    assert_eq!(requests[0]["model"], "m2");
    let id = sessions_json(dir.path(), &config)[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for again in [vec!["--continue"], vec!["--resume", id.as_str()]] {
        write(
            &dir.path().join("answers.toml"),
            "[[answers]]\ntext = \"more\"\n",
        );
        let mut args = again.clone();
        args.extend(["-p", "again"]);
        let (output, requests) = run(dir.path(), &config, &args);
        assert_status(&output, 0);
        assert_eq!(requests[0]["model"], "m2", "{again:?} keeps the model");
        let last = requests[0].to_string();
        assert!(
            last.contains("switched this session to the mode `read-only`"),
            "{again:?} keeps the mode: {last}"
        );
    }
}

/// `dsh run --fork ID`: a new session with ID's history, whose first
/// request's system prompt and tools are ID's last, byte for byte — the
/// trace compares it with ID's recorded prefix and finds all of it
/// shared — while ID itself goes on as it was.
#[test]
fn a_fork_has_its_parents_history_and_prefix_and_leaves_the_parent_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let config = deployment(dir.path(), "[[answers]]\ntext = \"First answer.\"\n", "");
    let (output, parent_requests) = run(dir.path(), &config, &["-p", "Remember kiwi."]);
    assert_status(&output, 0);
    let parent = sessions_json(dir.path(), &config)[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    write(
        &dir.path().join("answers.toml"),
        "[[answers]]\ntext = \"kiwi\"\n",
    );
    let trace = dir.path().join("trace.jsonl").display().to_string();
    let args = ["--fork", &parent, "--trace", &trace, "-p", "Which word?"];
    let (output, requests) = run(dir.path(), &config, &args);
    assert_status(&output, 0);
    assert_eq!(stdout(&output), "kiwi\n");
    let (last, first) = (parent_requests.last().unwrap(), &requests[0]);
    assert_eq!(first["system"], last["system"]);
    assert_eq!(first["tools"], last["tools"]);
    let texts: Vec<&str> = (first["messages"].as_array().unwrap().iter())
        .map(|message| message["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["Remember kiwi.", "First answer.", "Which word?"]);
    let line = &common::json_lines(Path::new(&trace))[0];
    assert_eq!(line["prefix_broke_in"], Value::Null, "{line}");
    assert!(line["shared_prefix_bytes"].as_u64() > Some(0), "{line}");
    // Two sessions now; the parent has its one turn still.
    let sessions = sessions_json(dir.path(), &config);
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    let fork = (sessions.iter())
        .find(|session| session["id"] != parent.as_str())
        .unwrap();
    assert_eq!(fork["title"], "Remember kiwi.");
    write(
        &dir.path().join("answers.toml"),
        "[[answers]]\ntext = \"again\"\n",
    );
    let (output, requests) = run(dir.path(), &config, &["--resume", &parent, "-p", "More?"]);
    assert_status(&output, 0);
    let texts: Vec<&str> = (requests[0]["messages"].as_array().unwrap().iter())
        .map(|message| message["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["Remember kiwi.", "First answer.", "More?"]);
}
