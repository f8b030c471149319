//! The third front end: `deployment/examples/headless.rs` drives a
//! session with JSON lines, on the scripted adapter, through a turn whose
//! call asks first.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// The JSON lines the example writes for `prompts`, answering `approve`.
fn run(dir: &Path, approve: &str, prompts: &str) -> Vec<serde_json::Value> {
    std::fs::write(
        dir.join("answers.toml"),
        "[[answers]]\n[[answers.tool_calls]]\nname = \"bash\"\narguments = '{\"command\": \"echo hi\"}'\n\
         [[answers]]\ntext = \"done\"\n",
    )
    .expect("written");
    std::fs::write(
        dir.join("dsh.toml"),
        "[adapter.scripted]\nanswers = \"answers.toml\"\nmodel = \"m\"\n\
         [sessions]\nenabled = false\n[tools.bash]\npermission = \"ask\"\n\
         [[agents]]\nid = \"a\"\ntools = [\"bash\"]\npersona = \"A test agent.\"\n",
    )
    .expect("written");
    let mut child = Command::new(super::example("headless"))
        .current_dir(dir)
        .args(["--config", "dsh.toml", "--approve", approve])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the example runs");
    let mut stdin = child.stdin.take().expect("its stdin");
    stdin.write_all(prompts.as_bytes()).expect("written");
    drop(stdin);
    let output = child.wait_with_output().expect("it ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    (String::from_utf8_lossy(&output.stdout).lines())
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

/// The `type` of each event, in order.
fn types(events: &[serde_json::Value]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|event| event["type"].as_str())
        .collect()
}

#[test]
fn a_turn_with_an_approved_call_comes_out_as_json_lines() {
    let dir = tempfile::tempdir().expect("a directory");
    let events = run(dir.path(), "once", "{\"prompt\": \"say hi\"}\n");
    let types = types(&events);
    let asked = types
        .iter()
        .position(|kind| *kind == "question")
        .expect("asked");
    let ended = types
        .iter()
        .position(|kind| *kind == "call_ended")
        .expect("ended");
    assert!(asked < ended, "{types:?}");
    let end = &events[ended];
    assert_eq!(end["command"]["output"], "hi\n", "{end}");
    assert_eq!(end["is_error"], false, "{end}");
    assert_eq!(types.last(), Some(&"prompted"), "{types:?}");
    assert_eq!(events.last().expect("an end")["result"]["finish"], "Stop");
}

#[test]
fn a_refused_call_never_runs_and_the_model_reads_why() {
    let dir = tempfile::tempdir().expect("a directory");
    let events = run(dir.path(), "never", "{\"prompt\": \"say hi\"}\nnot json\n");
    let end = (events.iter())
        .find(|event| event["type"] == "call_ended")
        .expect("the call ended");
    assert_eq!(end["never_ran"], true, "{end}");
    assert!(
        end["text"]
            .as_str()
            .is_some_and(|text| text.contains("declined")),
        "{end}"
    );
    let last = events.last().expect("an end");
    assert!(
        last["error"].as_str().is_some(),
        "a line that is no prompt: {last}"
    );
}
