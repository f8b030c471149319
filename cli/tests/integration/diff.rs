//! `dsh diff`: an agent's request prefix in two deployments or dumps,
//! compared by owner, in tokens and in what it costs the cache; its exit
//! status is `diff(1)`'s.

use std::path::Path;

use serde_json::Value;

use crate::common::{self, assert_status, dsh, stderr, stdout};

const OLD: &str = "examples/prompt-change/old.toml";
const NEW: &str = "examples/prompt-change/new.toml";

/// `dsh diff` with `args`, in the snapshots' working directory; asserts
/// its exit status and returns its stdout.
#[track_caller]
fn diff(args: &[&str], status: i32) -> String {
    let output = dsh(&[&["diff", "--cwd", common::snapshot_cwd()], args].concat());
    assert_status(&output, status);
    stdout(&output)
}

/// The JSON of `dsh diff --format json` with `args`.
#[track_caller]
fn diff_json(args: &[&str], status: i32) -> Value {
    serde_json::from_str(&diff(&[args, &["--format", "json"]].concat(), status))
        .expect("valid JSON")
}

/// `(name, change)` of each entry of `changes`.
fn changes(changes: &Value) -> Vec<(String, String)> {
    (changes.as_array().expect("a list").iter())
        .map(|change| {
            let text = |key: &str| change[key].as_str().expect(key).to_owned();
            (text("name"), text("change"))
        })
        .collect()
}

/// The example change differs in exactly four facts: the model the
/// persona names (so the persona changed through `<<model>>`, and the
/// cache breaks in it), one section's text, one section's order, one
/// tool's description — each with its owner and tokens on both sides.
#[test]
fn the_example_change_is_its_four_differences() {
    let json = diff_json(&[OLD, NEW], 1);
    assert_eq!(json["same"], false);
    assert_eq!(
        changes(&json["sections"]["changes"]),
        [
            ("agent:persona".to_owned(), "changed".to_owned()),
            ("review:style".to_owned(), "changed".to_owned()),
            ("review:handoff".to_owned(), "moved".to_owned()),
        ]
    );
    let sections = &json["sections"]["changes"];
    assert_eq!(sections[0]["cause"], "variables");
    assert_eq!(sections[0]["through"], serde_json::json!(["model"]));
    assert_eq!(sections[0]["new"]["owner"]["file"], NEW);
    assert_eq!(sections[0]["old"]["owner"]["file"], OLD);
    assert_eq!(sections[1]["cause"], "text");
    assert_eq!(sections[2]["old"]["order"], 50);
    assert_eq!(sections[2]["new"]["order"], 130);
    let variables: Vec<&str> = (json["variables"].as_array().expect("variables").iter())
        .map(|variable| variable["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(variables, ["model"]);
    assert_eq!(
        json["variables"][0]["used_by"],
        serde_json::json!(["agent:persona"])
    );
    assert_eq!(
        changes(&json["tools"]["changes"]),
        [("task".to_owned(), "changed".to_owned())]
    );
    let task = &json["tools"]["changes"][0];
    assert!(task["description"].is_array(), "{task}");
    assert_eq!(task["schema"], serde_json::json!([]));
    assert_eq!(task["new"]["owner"]["item"], "tools.task");
    assert_eq!(json["cache"]["part"], "system_prompt");
    assert_eq!(json["cache"]["section"], "agent:persona");
    let old_tokens = json["totals"]["prefix"]["old"]["tokens"].as_u64();
    let new_tokens = json["totals"]["prefix"]["new"]["tokens"].as_u64();
    assert!(old_tokens < new_tokens, "{old_tokens:?} {new_tokens:?}");
}

/// The example change in each format, whole.
#[test]
fn the_example_change_in_each_format() {
    insta::assert_snapshot!("example_text", diff(&[OLD, NEW], 1));
    insta::assert_snapshot!(
        "example_markdown",
        diff(&[OLD, NEW, "--format", "markdown"], 1)
    );
    insta::assert_snapshot!("example_json", diff(&[OLD, NEW, "--format", "json"], 1));
}

/// The same file twice: exit 0, and one line saying so (text and
/// markdown); the JSON says `same`, with nothing changed.
#[test]
fn identical_inputs_exit_0_in_one_line() {
    for format in ["text", "markdown"] {
        let out = diff(&[NEW, NEW, "--format", format], 0);
        assert_eq!(out.lines().count(), 1, "{out}");
        assert!(out.starts_with("no difference: "), "{out}");
    }
    let json = diff_json(&[NEW, NEW], 0);
    assert_eq!(json["same"], true);
    assert_eq!(json["cache"], Value::Null);
    assert_eq!(json["sections"]["changes"], serde_json::json!([]));
    assert_eq!(json["tools"]["changes"], serde_json::json!([]));
}

/// `dsh prompt --format json` of a deployment, in the snapshots' working
/// directory, written to `path`.
fn dump(config: &str, path: &Path) {
    let output = dsh(&[
        "prompt",
        "--config",
        config,
        "--cwd",
        common::snapshot_cwd(),
        "--format",
        "json",
    ]);
    assert_status(&output, 0);
    common::write(path, &stdout(&output));
}

/// A dump says its format's version, and carries what `diff` reads: it
/// compares with its own deployment as the same (in the dump's working
/// directory, with no `--cwd`), and two dumps compare as their two
/// deployments do.
#[test]
fn dumps_compare_as_their_deployments() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (old, new) = (dir.path().join("old.json"), dir.path().join("new.json"));
    dump(OLD, &old);
    dump(NEW, &new);
    let text = std::fs::read_to_string(&new).expect("the dump");
    assert!(text.starts_with("{\n  \"format_version\": 1,"), "{text}");
    let (old, new) = (old.display().to_string(), new.display().to_string());

    let output = dsh(&["diff", &new, NEW]);
    assert_status(&output, 0);
    assert!(stdout(&output).starts_with("no difference: "));

    let without_sides = |mut json: Value| {
        for side in ["old", "new"] {
            json[side] = Value::Null;
        }
        json
    };
    assert_eq!(
        without_sides(diff_json(&[&old, &new], 1)),
        without_sides(diff_json(&[OLD, NEW], 1))
    );
}

/// `--fail-on cache-break` fails only on a break, and with `--before`
/// only on one before the new prompt's section, or before the tokens:
/// the example breaks in the persona, after 8 tokens.
#[test]
fn fail_on_a_cache_break_before_a_section_or_a_token_count() {
    let status = |extra: &[&str]| {
        let args = [&["diff", OLD, NEW, "--cwd", common::snapshot_cwd()], extra].concat();
        dsh(&[&args[..], &["--fail-on", "cache-break"]].concat())
            .status
            .code()
    };
    assert_eq!(status(&[]), Some(1));
    assert_eq!(status(&["--before", "review:style"]), Some(1));
    assert_eq!(status(&["--before", "agent:persona"]), Some(0));
    assert_eq!(status(&["--before", "8"]), Some(0));
    assert_eq!(status(&["--before", "9"]), Some(1));
    let same = dsh(&["diff", NEW, NEW, "--fail-on", "cache-break"]);
    assert_status(&same, 0);
    // `--before` means nothing without `--fail-on`: a usage error.
    assert_status(&dsh(&["diff", OLD, NEW, "--before", "8"]), 2);
}

/// Trouble exits 2, the problem located in the file it is in.
#[test]
fn trouble_exits_2_saying_where() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let bad = dir.path().join("bad.json");
    common::write(
        &bad,
        "{\n  \"format_version\": 1,\n  \"prefix\": {\n    \"agent\": 3\n  }\n}\n",
    );
    let bad = bad.display().to_string();
    let output = dsh(&["diff", &bad, NEW]);
    assert_status(&output, 2);
    let says = stderr(&output);
    assert!(
        says.contains("expected a string (`prefix.agent`)"),
        "{says}"
    );
    assert!(says.contains(&format!("{bad}:4:14")), "{says}");

    let old = dir.path().join("old.json");
    common::write(&old, "{\n  \"sections\": []\n}\n");
    let output = dsh(&["diff", &old.display().to_string(), NEW]);
    assert_status(&output, 2);
    assert!(
        stderr(&output).contains("has no `format_version`"),
        "{}",
        stderr(&output)
    );

    let output = dsh(&[
        "diff",
        OLD,
        NEW,
        "--fail-on",
        "cache-break",
        "--before",
        "review:styl",
    ]);
    assert_status(&output, 2);
    assert!(
        stderr(&output).contains("did you mean `review:style`?"),
        "{}",
        stderr(&output)
    );
    assert_eq!(stdout(&output), "", "no report on trouble");

    // Both sides' problems, each in its file, when neither renders.
    let acp = common::workspace().join("examples/acp-agent");
    let copy = dir.path().join("acp.toml");
    let text = std::fs::read_to_string(acp.join("dsh.toml")).expect("the example");
    let answers = acp.join("answers.toml").display().to_string();
    common::write(
        &copy,
        &text.replace("\"answers.toml\"", &format!("{answers:?}")),
    );
    let copy = copy.display().to_string();
    let output = dsh(&["diff", "examples/acp-agent/dsh.toml", &copy, "--no-cwd"]);
    assert_status(&output, 2);
    let says = stderr(&output);
    assert_eq!(says.matches("`<<cwd>>` has no value").count(), 2, "{says}");
    assert!(says.contains("examples/acp-agent/dsh.toml:"), "{says}");
    assert!(says.contains(&format!("{copy}:")), "{says}");
}

/// A tool's schema change is named by JSON Pointer; a tool added at the
/// end breaks the prefix in the tools, at that tool.
#[test]
fn tool_schemas_and_a_break_in_the_tools() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let write = |name: &str, provider: &str, tools: &str| {
        let path = dir.path().join(name);
        common::write(
            &path,
            &format!(
                "[adapter.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"gpt-5\"\n\
                 [tools.helper]\nkind = \"subagent\"\nprovider = \"{provider}\"\n\
                 [[agents]]\nid = \"a\"\npersona = \"You help.\"\ntools = {tools}\n"
            ),
        );
        path.display().to_string()
    };
    let spawn = write("spawn.toml", "spawn", r#"["read", "helper"]"#);
    let fork = write("fork.toml", "fork", r#"["read", "helper"]"#);
    let json = diff_json(&[&spawn, &fork], 1);
    let helper = &json["tools"]["changes"][0];
    assert_eq!(helper["name"], "helper");
    assert_eq!(
        helper["schema"],
        serde_json::json!([{"path": "/properties/prompt/description", "change": "changed"}])
    );
    assert_eq!(json["cache"]["part"], "tools");
    assert_eq!(json["cache"]["tool"], "helper");

    let more = write("more.toml", "spawn", r#"["read", "helper", "todo_write"]"#);
    let json = diff_json(&[&spawn, &more], 1);
    assert_eq!(
        changes(&json["tools"]["changes"]),
        [("todo_write".to_owned(), "added".to_owned())]
    );
    assert_eq!(json["cache"]["tool"], "todo_write");
    let kept = &json["cache"]["kept"];
    assert_eq!(kept["tokens"], json["totals"]["prefix"]["old"]["tokens"]);
}
