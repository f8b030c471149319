//! `dsh prompt`: the system prompt of the example deployments, as text,
//! explained and as JSON.

use crate::common;

use common::{assert_status, dsh, stdout, workspace};

fn prompt(args: &[&str]) -> String {
    let output = dsh(&[&["prompt", "--cwd", common::snapshot_cwd()], args].concat());
    assert_status(&output, 0);
    stdout(&output)
}

#[test]
fn coding_agent_text() {
    insta::assert_snapshot!(prompt(&[]));
}

#[test]
fn coding_agent_explain() {
    insta::assert_snapshot!(prompt(&["--format", "explain"]));
}

/// The `tokens` of `--format json`: each section's, each tool schema's,
/// the totals, and the tokenizer. Only they are snapshotted: the rest is
/// the assembly, the explain snapshots show it, and its owners' line
/// numbers move with every edit of the crates that own them.
fn json_tokens(args: &[&str]) -> String {
    let json: serde_json::Value =
        serde_json::from_str(&prompt(&[args, &["--format", "json"]].concat())).expect("valid JSON");
    serde_json::to_string_pretty(&json["tokens"]).expect("JSON")
}

/// The tokenizer the model selects.
#[test]
fn coding_agent_json_tokens() {
    insta::assert_snapshot!(json_tokens(&[]));
}

/// Two agents and a preset: the coder sees the crates' sections alone;
/// the reviewer the preset's section and its own `tool:bash` in place of
/// the bash crate's, and each its own tool order.
#[test]
fn review_team_text() {
    let config = ["--config", "examples/review-team/dsh.toml"];
    insta::assert_snapshot!(
        "review_team_coder",
        prompt(&[&config[..], &["--agent", "coder"]].concat())
    );
    insta::assert_snapshot!(
        "review_team_reviewer",
        prompt(&[&config[..], &["--agent", "reviewer"]].concat())
    );
}

/// Which layer each section came from and what it shadows.
#[test]
fn review_team_reviewer_explain() {
    insta::assert_snapshot!(prompt(&[
        "--config",
        "examples/review-team/dsh.toml",
        "--agent",
        "reviewer",
        "--format",
        "explain"
    ]));
}

/// The tool order: the deployment's for the coder, the preset's for the
/// reviewer (and for the child it starts, which joins the preset).
#[test]
fn review_team_tool_orders() {
    let tools = |agent: &str| -> Vec<String> {
        let json: serde_json::Value = serde_json::from_str(&prompt(&[
            "--config",
            "examples/review-team/dsh.toml",
            "--agent",
            agent,
            "--format",
            "json",
        ]))
        .expect("valid JSON");
        json["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|tool| tool["name"].as_str().expect("name").to_owned())
            .collect()
    };
    assert_eq!(tools("coder"), ["read", "bash", "task", "todo_write"]);
    assert_eq!(tools("reviewer"), ["read", "bash", "task"]);
    assert_eq!(tools("reviewer/task"), ["read", "bash"]);
}

/// A child joins its parent's preset: the reviewer's child gets the
/// preset's section, not the reviewer's own `tool:bash`; the coder's child
/// neither.
#[test]
fn a_child_sees_its_parents_preset() {
    let text = |agent: &str| {
        prompt(&[
            "--config",
            "examples/review-team/dsh.toml",
            "--agent",
            agent,
        ])
    };
    let preset_section = "Report each problem with its file and line";
    let own_habit = "Run read-only commands only";
    assert!(text("reviewer/task").contains(preset_section));
    assert!(!text("reviewer/task").contains(own_habit));
    assert!(text("reviewer").contains(own_habit));
    assert!(!text("coder/task").contains(preset_section));
}

#[test]
fn acp_agent_text() {
    insta::assert_snapshot!(prompt(&["--config", "examples/acp-agent/dsh.toml"]));
}

#[test]
fn acp_agent_explain() {
    insta::assert_snapshot!(prompt(&[
        "--config",
        "examples/acp-agent/dsh.toml",
        "--format",
        "explain"
    ]));
}

/// The scripted model is no model a tokenizer table knows: the default
/// tokenizer, said to be one.
#[test]
fn acp_agent_json_tokens() {
    insta::assert_snapshot!(json_tokens(&["--config", "examples/acp-agent/dsh.toml"]));
}

/// The tokens explain and JSON show add up, and are those of the
/// tokenizer the deployment names when it names one.
#[test]
fn tokens_add_up_and_follow_the_configured_tokenizer() {
    let tokens = |config: &str| -> serde_json::Value {
        let json: serde_json::Value =
            serde_json::from_str(&prompt(&["--config", config, "--format", "json"]))
                .expect("valid JSON");
        json["tokens"].clone()
    };
    let default = tokens("examples/coding-agent/dsh.toml");
    let sum = |list: &serde_json::Value| -> u64 {
        list.as_array()
            .expect("a list")
            .iter()
            .map(|item| item["tokens"].as_u64().expect("a count"))
            .sum()
    };
    assert_eq!(
        sum(&default["sections"]) + default["separators"].as_u64().expect("separators"),
        default["system_prompt"].as_u64().expect("the prompt's")
    );
    assert_eq!(
        default["tools_total"].as_u64(),
        Some(sum(&default["tools"]))
    );
    assert_eq!(
        default["total"].as_u64(),
        Some(sum(&default["tools"]) + sum(&default["sections"]))
    );

    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("dsh.toml");
    let file = std::fs::read_to_string(workspace().join("examples/coding-agent/dsh.toml"))
        .expect("the example")
        .replace(
            "api_key_env = \"OPENAI_API_KEY\"\n",
            "api_key_env = \"OPENAI_API_KEY\"\ntokenizer = \"cl100k_base\"\n",
        );
    std::fs::write(&path, file).expect("write the deployment");
    let config = path.display().to_string();
    let configured = tokens(&config);
    assert_eq!(configured["tokenizer"], "cl100k_base");
    assert_eq!(configured["tokenizer_choice"], "configured");
    // English prose encodes alike in both; the schemas' JSON does not.
    assert_ne!(configured["total"], default["total"]);
    let explain = prompt(&["--config", &config, "--format", "explain"]);
    assert!(
        explain.contains("tokenizer  cl100k_base (`tokenizer` in [adapter.openai])\n"),
        "{explain}"
    );
}

/// The coding agent's prompt is its persona (with the model's name), then
/// the habits of read, write, edit and bash, in that order — and nothing
/// else: no tool list, no banner, no second copy of any guidance.
#[test]
fn coding_agent_text_is_persona_then_read_write_edit_bash() {
    let file = std::fs::read_to_string(workspace().join("examples/coding-agent/dsh.toml"))
        .expect("the example exists");
    let deployment: toml::Table = toml::from_str(&file).expect("the example is TOML");
    let persona = deployment["agents"][0]["persona"]
        .as_str()
        .expect("a persona")
        .replace("<<model>>", "gpt-5");
    assert!(persona.contains("running on gpt-5"), "{persona}");
    let expected = [
        persona.as_str(),
        dsh_tool_fs::READ_HABIT,
        dsh_tool_fs::WRITE_HABIT,
        dsh_tool_fs::EDIT_HABIT,
        dsh_tool_bash::EXIT_CODE_HABIT,
        &dsh_sandbox::Sandbox::new(dsh_sandbox::SandboxMode::WorkspaceWrite).describe(),
    ]
    .join("\n\n");
    assert_eq!(prompt(&[]), expected);
}

#[test]
fn the_embedded_deployment_is_the_coding_agent_example() {
    assert_eq!(
        prompt(&[]),
        prompt(&["--config", "examples/coding-agent/dsh.toml"])
    );
}

#[test]
fn acp_agent_states_its_working_directory() {
    let text = prompt(&["--config", "examples/acp-agent/dsh.toml"]);
    assert!(
        text.contains(&format!(
            "Your working directory is {}",
            common::snapshot_cwd()
        )),
        "{text}"
    );
}

/// The `name` of each object in the array `json[key]`.
fn names<'a>(json: &'a serde_json::Value, key: &str) -> Vec<&'a str> {
    json[key]
        .as_array()
        .expect(key)
        .iter()
        .map(|item| item["name"].as_str().expect("a name"))
        .collect()
}

#[test]
fn json_is_the_assembly() {
    let json: serde_json::Value =
        serde_json::from_str(&prompt(&["--format", "json"])).expect("valid JSON");
    let sections = names(&json, "sections");
    assert_eq!(sections[0], "agent:persona");
    let habits: Vec<&str> = sections
        .iter()
        .copied()
        .filter(|name| name.starts_with("tool:"))
        .collect();
    assert_eq!(
        habits,
        ["tool:read", "tool:write", "tool:edit", "tool:bash"],
        "the tools' habits, by order"
    );
    assert_eq!(json["variables"]["model"], "gpt-5");
    assert_eq!(json["variables"]["cwd"], common::snapshot_cwd());
    let tools = names(&json, "tools");
    assert_eq!(
        tools,
        [
            "bash",
            "edit",
            "fork",
            "read",
            "task",
            "todo_write",
            "write"
        ],
        "without a `tool_order`, by name"
    );
    assert_eq!(
        names(&json, "contexts"),
        ["host:mode", "todo"],
        "the runtime contexts, apart from the sections"
    );
    assert!(!sections.contains(&"todo"));
}

#[test]
fn an_unknown_agent_is_an_error() {
    let output = dsh(&["prompt", "--agent", "nobody"]);
    let stderr = common::assert_fails_saying(&output, "no agent `nobody`");
    assert!(stderr.contains("`coder`"), "{stderr}");
}

#[test]
fn a_persona_that_does_not_render_prints_no_prompt() {
    let output = dsh(&[
        "prompt",
        "--config",
        "examples/acp-agent/dsh.toml",
        "--no-cwd",
    ]);
    common::assert_fails_saying(&output, "`<<cwd>>` has no value");
    assert_eq!(stdout(&output), "");
}

/// `prompt`, `check` and `run` take a working directory by one rule: an
/// existing directory, relative to the current one when relative.
#[test]
fn every_command_refuses_a_working_directory_that_is_not_one() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing").display().to_string();
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let file = file.display().to_string();
    for (args, says) in [
        (
            vec!["prompt", "--cwd", &missing],
            format!("the working directory `{missing}` cannot be read"),
        ),
        (
            vec!["check", "--cwd", &missing],
            format!("the working directory `{missing}` cannot be read"),
        ),
        (
            vec!["run", "--cwd", &file, "-p", "hi"],
            format!("the working directory `{file}` is not a directory"),
        ),
    ] {
        let output = dsh(&args);
        assert_status(&output, 1);
        let stderr = common::stderr(&output);
        assert!(stderr.contains(&says), "{args:?}: {stderr}");
        assert!(
            stderr.contains("pass an existing directory with `--cwd DIR`"),
            "{stderr}"
        );
    }
    // Relative to the current directory (the workspace, in these tests).
    let output = dsh(&[
        "prompt",
        "--config",
        "examples/acp-agent/dsh.toml",
        "--cwd",
        "examples",
    ]);
    assert_status(&output, 0);
    let examples = common::workspace().join("examples");
    assert!(
        stdout(&output).contains(&format!("Your working directory is {}", examples.display())),
        "{}",
        stdout(&output)
    );
}

#[test]
fn usage_errors_exit_2() {
    assert_status(&dsh(&["prompt", "--format", "yaml"]), 2);
    assert_status(&dsh(&["prompt", "--cwd", "/x", "--no-cwd"]), 2);
    assert_status(&dsh(&["frobnicate"]), 2);
    assert_status(&dsh(&["prompt", "--help"]), 0);
}

/// A spawned child is addressed as `<agent>/<instance>`: its prompt is its
/// own persona, then the guidance of its own tools only.
#[test]
fn a_childs_prompt_by_its_id() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = common::config(
        dir.path(),
        "[adapter.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"big\"\n\
         [tools.review]\nkind = \"subagent\"\nprovider = \"spawn\"\n\
         [tools.review.child]\nmodel = \"small\"\npersona = \"You review on <<model>>.\"\ntools = [\"read\"]\n\
         [[agents]]\nid = \"boss\"\npersona = \"You lead on <<model>>.\"\ntools = [\"bash\", \"review\"]\n",
    );
    let child = prompt(&["--config", &config, "--agent", "boss/review"]);
    assert!(
        child.starts_with("You review on small.\n\nUse read, not shell"),
        "{child}"
    );
    assert!(!child.contains("exit code"), "{child}");
    let boss = prompt(&["--config", &config, "--agent", "boss"]);
    assert!(boss.starts_with("You lead on big.\n\n"), "{boss}");
}
