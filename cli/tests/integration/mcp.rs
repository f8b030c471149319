//! MCP servers in a deployment: `dsh run`, `dsh check`, `dsh prompt`,
//! against `dsh-mcp-test-server` (rmcp's server side, in this repository).

use crate::common;

use common::{assert_status, dsh, stderr, stdout, tool_names};
use serde_json::Value;

/// The MCP test server's binary.
static SERVER: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| dsh_mcp_test_server::binary().display().to_string());

/// A `[mcp.<name>]` table starting the test server with `args`, and
/// `extra` keys; its tools run unasked (`permission = "allow"`) unless
/// `extra` says otherwise.
fn server_table(name: &str, args: &[&str], extra: &str) -> String {
    let mut command = vec![SERVER.to_owned()];
    command.extend(args.iter().map(|arg| (*arg).to_owned()));
    let permission = if extra.contains("permission") || extra.contains("allow") {
        ""
    } else {
        "permission = \"allow\""
    };
    // A server that reports its pids is followed by them, which a
    // sandbox's PID namespace renumbers: it runs unsandboxed.
    let sandbox = if args.iter().any(|arg| arg.starts_with("pid-file=")) {
        "sandbox = \"full-access\""
    } else {
        ""
    };
    format!("\n[mcp.{name}]\ncommand = {command:?}\n{permission}\n{sandbox}\n{extra}\n")
}

fn system_prompt(request: &Value) -> String {
    request["system"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn a_run_calls_a_servers_tools_sees_its_instructions_and_new_tools_and_leaves_no_process() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let pid_file = dir.path().join("pids");
    let answers = "[[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"docs__echo\"\narguments = { text = \"hello from mcp\" }\n\
        [[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"docs__add_tool\"\narguments = {}\n\
        [[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"docs__image\"\narguments = {}\n\
        [[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"docs__extra\"\narguments = {}\n\
        [[answers]]\ntext = \"done\"\n";
    let tables = format!(
        "{}{}",
        server_table(
            "docs",
            &[
                "instructions=Search docs first. <<not_a_variable>>",
                &format!("pid-file={}", pid_file.display()),
                "stderr=docs server up",
            ],
            "",
        ),
        common::runner("", &["read", "mcp:docs"])
    );
    let config = common::scripted_config(dir.path(), answers, &tables);
    let trace = dir.path().join("trace.jsonl");
    let trace_arg = trace.display().to_string();
    let (output, requests) =
        common::run_recorded(dir.path(), &config, &["-p", "go", "--trace", &trace_arg]);
    assert_eq!(stdout(&output).trim(), "done");
    // The request after `add_tool` broke the prefix in the tools: the
    // trace names the server's new tool.
    let lines = common::json_lines(&trace);
    assert_eq!(lines[2]["prefix_broke_in"], "tools", "{:?}", lines[2]);
    assert_eq!(lines[2]["changed_tool"], "docs__extra");
    assert_eq!(lines[2]["changed_tool_server"], "docs");
    assert_eq!(lines[1]["changed_tool"], Value::Null);
    assert!(
        stderr(&output).contains("[mcp docs] docs server up"),
        "{}",
        stderr(&output)
    );

    let first = &requests[0];
    assert!(system_prompt(first).contains("Search docs first. <<not_a_variable>>"));
    let names = tool_names(first);
    assert!(names.contains(&"docs__echo".to_owned()), "{names:?}");
    assert!(!names.contains(&"docs__extra".to_owned()));
    let text = serde_json::to_string(&requests[1]).expect("json");
    assert!(text.contains("hello from mcp"), "{text}");
    // After `add_tool` the server's list changed: the next step has it,
    // after every tool already sent (by name it would be among them), so
    // the tools before it stay the prefix the provider cached.
    let mut appended = tool_names(&requests[1]);
    appended.push("docs__extra".to_owned());
    assert_eq!(tool_names(&requests[2]), appended);
    assert!(appended.iter().any(|name| name.as_str() > "docs__extra"));
    // `extra` removed itself: the tools before it keep their places, and
    // the person is told it is gone.
    assert_eq!(tool_names(&requests[4]), tool_names(&requests[1]));
    assert!(
        stderr(&output).contains("no longer offered to the model: `docs__extra`"),
        "{}",
        stderr(&output)
    );
    // The image is one of the result's, not a description.
    let messages = requests[3]["messages"].as_array().expect("messages");
    let result = messages.last().expect("the image's result");
    assert_eq!(result["text"], "a pixel:", "{result}");
    assert_eq!(result["images"][0]["mime_type"], "image/png", "{result}");

    let pids = common::server_pids(&pid_file);
    assert_eq!(pids.len(), 2);
    common::assert_all_gone(&pids);
}

#[test]
fn a_servers_log_messages_are_said_on_stderr_with_its_name_at_its_log_level() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let answers = "[[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"docs__progress\"\narguments = { ms = 1 }\n\
        [[answers]]\ntext = \"done\"\n";
    let tables = format!(
        "{}{}",
        server_table("docs", &["progress"], "log_level = \"info\""),
        common::runner("", &["mcp:docs"])
    );
    let config = common::scripted_config(dir.path(), answers, &tables);
    let (output, _) = common::run_recorded(dir.path(), &config, &["-p", "go"]);
    assert_eq!(stdout(&output).trim(), "done");
    let stderr = stderr(&output);
    assert!(
        stderr.contains("[mcp docs] info: steps: info at step 2\n")
            && stderr.contains("[mcp docs] warning: steps: warning at step 3\n"),
        "{stderr}"
    );
    assert!(!stderr.contains("debug at step 1"), "{stderr}");
}

#[test]
fn an_optional_server_that_fails_is_said_once_and_the_run_goes_on() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let tables = format!(
        "\n[mcp.docs]\ncommand = [\"/nonexistent/docs-server\"]\n{}",
        common::runner("", &["read", "mcp:docs"])
    );
    let config = common::scripted_config(dir.path(), "[[answers]]\ntext = \"fine\"\n", &tables);
    let (output, requests) = common::run_recorded(dir.path(), &config, &["-p", "go"]);
    assert_eq!(stdout(&output).trim(), "fine");
    let stderr = stderr(&output);
    assert_eq!(stderr.matches("MCP server `docs`").count(), 1, "{stderr}");
    assert!(stderr.contains("/nonexistent/docs-server"), "{stderr}");
    assert!(
        !tool_names(&requests[0])
            .iter()
            .any(|name| name.starts_with("docs__"))
    );
}

#[test]
fn a_required_server_that_fails_stops_the_run() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let tables = format!(
        "{}{}",
        server_table("docs", &["exit-at-start=2"], "required = true"),
        common::runner("", &["mcp:docs"])
    );
    let config = common::scripted_config(dir.path(), "[[answers]]\ntext = \"never\"\n", &tables);
    let output = dsh(&["run", "--config", &config, "-p", "go"]);
    let stderr = common::assert_fails_saying(&output, "MCP server `docs`");
    assert!(stderr.contains("the server is `required`"), "{stderr}");
    assert!(!stdout(&output).contains("never"));
}

#[test]
fn a_server_gets_the_base_environment_what_it_keeps_and_never_a_secret() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let env_file = dir.path().join("env.txt");
    let env_arg = format!("env-file={}", env_file.display());
    let tables = format!(
        "[adapter.openai]\nbase_url = \"http://127.0.0.1:9\"\nmodel = \"m\"\n\
         api_key_env = \"DSH_TEST_MODEL_KEY\"\n[environment]\nsecrets = [\"DSH_TEST_DB\"]\n{}{}",
        server_table(
            "docs",
            &[&env_arg],
            "env = { DSH_TEST_GIVEN = \"yes\" }\n\
             env_keep = [\"DSH_TEST_KEPT_TOKEN\", \"DSH_TEST_MODEL_KEY\", \"DSH_TEST_DB\"]"
        ),
        common::runner("", &["mcp:docs"])
    );
    let config = common::config(dir.path(), &tables);
    let output = common::command(&["prompt", "--config", &config])
        .env("DSH_TEST_MODEL_KEY", "sk-secret")
        .env("DSH_TEST_DB", "postgres://secret")
        .env("DSH_TEST_OTHER", "not passed")
        .env("DSH_TEST_KEPT_TOKEN", "kept")
        .output()
        .expect("dsh runs");
    assert_status(&output, 0);
    let seen = std::fs::read_to_string(&env_file).expect("the server wrote its environment");
    let seen: Vec<&str> = seen.lines().collect();
    // The model's key and a listed secret, even where `env_keep` names
    // them; dsh's other variables, but for the base.
    for absent in ["DSH_TEST_MODEL_KEY", "DSH_TEST_DB", "DSH_TEST_OTHER"] {
        assert!(!seen.contains(&absent), "{absent}: {seen:?}");
    }
    for present in ["DSH_TEST_KEPT_TOKEN", "DSH_TEST_GIVEN", "PATH", "HOME"] {
        assert!(seen.contains(&present), "{present}: {seen:?}");
    }
}

#[test]
fn prompt_with_no_mcp_starts_no_server_and_shows_none_of_its_parts() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let tables = format!(
        "{}{}",
        server_table("docs", &["instructions=Use the docs."], ""),
        common::runner("", &["read", "mcp:docs"])
    );
    let config = common::scripted_config(dir.path(), "[[answers]]\ntext = \"x\"\n", &tables);
    let with = dsh(&["prompt", "--config", &config]);
    assert_status(&with, 0);
    assert!(stdout(&with).contains("Use the docs."), "{}", stdout(&with));
    let without = dsh(&["prompt", "--config", &config, "--no-mcp"]);
    assert_status(&without, 0);
    assert!(
        !stdout(&without).contains("Use the docs."),
        "{}",
        stdout(&without)
    );
    // A required server that cannot start is not started either.
    let tables = format!(
        "{}{}",
        server_table("docs", &["exit-at-start=2"], "required = true"),
        common::runner("", &["mcp:docs"])
    );
    let config = common::scripted_config(dir.path(), "[[answers]]\ntext = \"x\"\n", &tables);
    assert_status(&dsh(&["prompt", "--config", &config]), 1);
    assert_status(&dsh(&["prompt", "--config", &config, "--no-mcp"]), 0);
}

#[test]
fn every_command_that_starts_servers_says_their_stderr_on_its_own() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let tables = format!(
        "{}{}",
        server_table("docs", &["stderr=docs server up"], ""),
        common::runner("", &["read", "mcp:docs"])
    );
    let config = common::scripted_config(dir.path(), "[[answers]]\ntext = \"x\"\n", &tables);
    for args in [
        vec!["prompt", "--config", &config],
        vec!["check", "--config", &config],
        vec!["diff", &config, &config],
    ] {
        let output = dsh(&args);
        assert_status(&output, 0);
        // stdout keeps the prompt, the report or the diff alone.
        assert!(!stdout(&output).contains("[mcp docs]"), "{args:?}");
        assert!(
            stderr(&output).contains("[mcp docs] docs server up\n"),
            "{args:?}: {}",
            stderr(&output)
        );
    }
}

#[test]
fn a_call_to_a_hung_server_fails_within_its_timeout_and_cancels_it() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let answers = "[[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"docs__slow\"\narguments = { ms = 60000 }\n\
        [[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"docs__echo\"\narguments = { text = \"still here\" }\n\
        [[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"docs__exit\"\narguments = {}\n\
        [[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"docs__echo\"\narguments = { text = \"x\" }\n\
        [[answers]]\ntext = \"over\"\n";
    let tables = format!(
        "{}{}",
        server_table("docs", &[], "call_timeout_secs = 0.3"),
        common::runner("", &["mcp:docs"])
    );
    let config = common::scripted_config(dir.path(), answers, &tables);
    let (output, requests) = common::run_recorded(dir.path(), &config, &["-p", "go"]);
    assert_eq!(stdout(&output).trim(), "over");
    assert!(
        stderr(&output).contains("[mcp docs] slow: cancelled"),
        "{}",
        stderr(&output)
    );
    let timed_out = serde_json::to_string(&requests[1]).expect("json");
    assert!(
        timed_out.contains("did not answer within 0.3 s"),
        "{timed_out}"
    );
    let dead = serde_json::to_string(&requests[4]).expect("json");
    assert!(dead.contains("is not running"), "{dead}");
}

#[test]
fn check_starts_the_servers_and_reports_each_failure_at_its_table() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let tables = format!(
        "{}{}\n[mcp.broken]\ncommand = [\"/nonexistent/broken\"]\n{}",
        server_table("docs", &[], "tools = [\"echo\", \"serch\"]"),
        server_table(
            "slow",
            &["start-delay-ms=5000"],
            "startup_timeout_secs = 0.2"
        ),
        common::runner("", &["read", "mcp:docs", "mcp:nope"])
    );
    let config = common::scripted_config(dir.path(), "[[answers]]\ntext = \"x\"\n", &tables);
    let output = dsh(&["check", "--config", &config]);
    common::assert_fails_saying(&output, "unknown MCP server `nope`");

    let tables = tables.replace(", \"mcp:nope\"", "");
    let config = common::scripted_config(dir.path(), "[[answers]]\ntext = \"x\"\n", &tables);
    let output = dsh(&["check", "--config", &config]);
    let stderr = common::assert_fails_saying(&output, "MCP server `docs` has no tool `serch`");
    // The hint names the server's tools, not only the allowed `echo`.
    assert!(stderr.contains("its tools are"), "{stderr}");
    assert!(stderr.contains("`dotted.name`"), "{stderr}");
    assert!(
        stderr.contains("MCP server `broken` could not be started"),
        "{stderr}"
    );
    assert!(
        stderr.contains("[mcp.broken]"),
        "the table is shown: {stderr}"
    );
    assert!(stderr.contains("MCP server `slow`"), "{stderr}");
    assert!(stderr.contains("startup_timeout_secs"), "{stderr}");

    let output = dsh(&["check", "--config", &config, "--no-mcp"]);
    assert_status(&output, 0);
}

#[test]
fn check_reports_each_server_its_tools_instructions_resources_prompts_and_what_was_left_out() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let tables = format!(
        "{}{}\n[mcp.broken]\ncommand = [\"/nonexistent/broken\"]\n{}",
        server_table(
            "docs",
            &["instructions-bytes=5000", "resources", "prompts"],
            "tools = [\"echo\", \"read_resource\"]"
        ),
        server_table("plain", &[], ""),
        common::runner("", &["read", "mcp:docs", "mcp:plain"])
    );
    let config = common::scripted_config(dir.path(), "[[answers]]\ntext = \"x\"\n", &tables);
    let output = dsh(&["check", "--config", &config, "--format", "json"]);
    // The broken server fails the check; the report says it too.
    assert_status(&output, 1);
    let report: Value = serde_json::from_str(&stdout(&output)).expect("one JSON object");
    assert_eq!(report["ok"], false);
    let servers = report["mcp_servers"].as_array().expect("the servers");
    let names: Vec<&str> = servers.iter().filter_map(|s| s["name"].as_str()).collect();
    // In the deployment's order: its tables by name.
    assert_eq!(names, ["broken", "docs", "plain"]);
    let docs = &servers[1];
    assert_eq!(docs["started"], true);
    assert_eq!(docs["tools"], 2, "echo and the resource reader: {docs}");
    assert!(
        docs["schema_bytes"]
            .as_u64()
            .is_some_and(|bytes| bytes > 100),
        "{docs}"
    );
    assert!(
        docs["schema_tokens"]
            .as_u64()
            .is_some_and(|tokens| tokens > 10),
        "{docs}"
    );
    assert_eq!(docs["instructions_bytes"], 5000);
    assert_eq!(docs["instructions_cut"], true);
    assert_eq!(docs["resources"], 2);
    assert_eq!(docs["resource_templates"], 1);
    assert_eq!(docs["resource_reader"], "docs__read_resource");
    assert_eq!(docs["prompts"], serde_json::json!(["review"]));
    let left_out = docs["left_out"].as_array().expect("a list");
    assert!(
        left_out.iter().any(|tool| tool["tool"] == "slow"
            && tool["reason"] == "not in the server's `tools` allow-list"),
        "{left_out:?}"
    );
    let plain = &servers[2];
    assert_eq!(
        (plain["resources"].clone(), plain["prompts"].clone()),
        (Value::Null, Value::Null)
    );
    assert_eq!(plain["instructions_bytes"], Value::Null);
    let broken = &servers[0];
    assert_eq!(broken["started"], false);
    assert!(
        broken["failure"]
            .as_str()
            .is_some_and(|failure| failure.contains("/nonexistent/broken")),
        "{broken}"
    );

    // In text, a line a server.
    let tables = tables.replace(
        "\n[mcp.broken]\ncommand = [\"/nonexistent/broken\"]\n",
        "\n",
    );
    let config = common::scripted_config(dir.path(), "[[answers]]\ntext = \"x\"\n", &tables);
    let output = dsh(&["check", "--config", &config]);
    assert_status(&output, 0);
    let text = stdout(&output);
    let docs = text
        .lines()
        .find(|line| line.starts_with("mcp docs ("))
        .expect("a line for docs");
    assert!(docs.contains(": 2 tools, "), "{docs}");
    assert!(
        docs.contains("instructions 5000 bytes, cut to 4096"),
        "{docs}"
    );
    assert!(
        docs.contains("2 resources and 1 resource template (read with `docs__read_resource`)"),
        "{docs}"
    );
    assert!(docs.contains("1 prompts `review`"), "{docs}");
    assert!(
        docs.contains("left out `slow`: not in the server's `tools` allow-list"),
        "{docs}"
    );
    assert!(text.contains("mcp plain ("), "{text}");
}

#[test]
fn check_counts_the_servers_tool_schemas_in_max_prompt_tokens() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let tables = format!(
        "{}\n[[agents]]\nid = \"runner\"\ntools = [\"mcp:docs\"]\nmax_prompt_tokens = 60\n\
         persona = \"Short.\"\n",
        server_table("docs", &[], ""),
    );
    let config = common::scripted_config(dir.path(), "[[answers]]\ntext = \"x\"\n", &tables);
    let output = dsh(&["check", "--config", &config]);
    common::assert_fails_saying(&output, "tool schema `docs__");
    let output = dsh(&["check", "--config", &config, "--no-mcp"]);
    assert_status(&output, 0);
}

/// A deployment, in `dir`, of the test server started with `args` and
/// listed by agent `runner` (besides `read`, and `tools`), with the
/// `instances` tables, and the top-level keys `top`.
fn with_server(
    dir: &std::path::Path,
    args: &[&str],
    instances: &str,
    tools: &[&str],
    top: &str,
) -> String {
    let mut listed = vec!["read", "mcp:docs"];
    listed.extend(tools);
    common::write(&dir.join("answers.toml"), "[[answers]]\ntext = \"x\"\n");
    common::config(
        dir,
        &format!(
            "{top}[adapter.scripted]\nanswers = \"answers.toml\"\nmodel = \"m\"\n{}{}",
            server_table("docs", args, ""),
            common::runner(instances, &listed)
        ),
    )
}

/// `dsh check` on [`with_server`]'s deployment: stderr, its wrapped
/// lines joined, after a check that fails.
fn check_fails_with_server(args: &[&str], instances: &str, tools: &[&str], top: &str) -> String {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = with_server(dir.path(), args, instances, tools, top);
    let output = dsh(&["check", "--config", &config]);
    assert_status(&output, 1);
    stderr(&output).replace("\n  │ ", " ")
}

#[test]
fn check_refuses_more_tools_than_a_request_may_carry() {
    let err = check_fails_with_server(&["extra-tools=130"], "", &[], "");
    assert!(
        err.contains(
            "agent `runner` sends 144 tools, more than the 128 OpenAI's API accepts in \
             one request"
        ),
        "{err}"
    );
}

#[test]
fn check_refuses_a_tool_whose_input_schema_is_not_an_object() {
    let err = check_fails_with_server(&["array-schema"], "", &[], "");
    assert!(
        err.contains(
            "the input schema of tool `docs__listy` of MCP server `docs` is not an object: it \
             has `\"type\": \"array\"` at its top"
        ),
        "{err}"
    );
    assert!(err.contains("[mcp.docs]"), "the table is shown: {err}");
}

#[test]
fn check_refuses_a_tool_schema_over_the_deployments_limit() {
    // Under the default limit, a 100 KB schema passes; under a limit of
    // 50,000 bytes, set at the top of the file, it does not.
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = with_server(dir.path(), &["schema-bytes=100000"], "", &[], "");
    assert_status(&dsh(&["check", "--config", &config]), 0);
    let err = check_fails_with_server(
        &["schema-bytes=100000"],
        "",
        &[],
        "max_tool_schema_bytes = 50000\n",
    );
    assert!(
        err.contains("the schema of tool `docs__wide` of MCP server `docs` is 100"),
        "{err}"
    );
    assert!(
        err.contains("bytes, over the 50000 of `max_tool_schema_bytes`"),
        "{err}"
    );
    assert!(err.contains("the limit"), "the key is shown: {err}");
}

#[test]
fn check_refuses_an_instance_that_hides_an_mcp_tool() {
    let instance = "[tools.docs__echo]\nkind = \"subagent\"\nprovider = \"spawn\"\n";
    let err = check_fails_with_server(&[], instance, &["docs__echo"], "");
    assert!(
        err.contains(
            "tool instance `docs__echo` hides tool `echo` of MCP server `docs`, which the model \
             would see by the same name: agent `runner` gets the instance only"
        ),
        "{err}"
    );
    assert!(
        err.contains("[tools.docs__echo]"),
        "the table is shown: {err}"
    );
}

#[test]
fn explain_and_json_group_the_tools_by_server() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let tables = format!(
        "{}{}",
        server_table(
            "docs",
            &["instructions=Use the docs.", "task-only"],
            "tools = [\"echo\", \"fail\", \"dotted.name\", \"research\"]"
        ),
        common::runner("", &["read", "mcp:docs"])
    );
    let config = common::scripted_config(dir.path(), "[[answers]]\ntext = \"x\"\n", &tables);
    let output = dsh(&["prompt", "--config", &config, "--format", "explain"]);
    assert_status(&output, 0);
    let explained = stdout(&output);
    let table = explained
        .split("tools by MCP server")
        .nth(1)
        .expect("a table of the servers");
    let row = table
        .lines()
        .find(|line| line.trim_start().starts_with("docs "))
        .expect("a row of docs");
    assert!(row.contains(" 3 "), "three tools: {row}");
    assert!(
        explained.contains("`dotted.name` of `docs` is sent as `docs__dotted_name`: characters model APIs reject became `_`"),
        "{explained}"
    );
    assert!(row.contains(SERVER.as_str()), "{row}");
    assert!(explained.contains("mcp:docs"), "the section: {explained}");
    // A tool that runs only as a task is not sent, and said; the
    // allow-list's choices are not.
    assert!(
        explained.contains(
            "`research` of `docs` is not sent: it runs only as an MCP task \
             (`execution.taskSupport: \"required\"`)"
        ),
        "{explained}"
    );
    assert!(!explained.contains("`slow` of `docs`"), "{explained}");

    let output = dsh(&["prompt", "--config", &config, "--format", "json"]);
    assert_status(&output, 0);
    let json: Value = serde_json::from_str(&stdout(&output)).expect("json");
    let server = &json["mcp_servers"][0];
    assert_eq!(server["name"], "docs");
    let left_out: Vec<&str> = (server["left_out"].as_array().into_iter().flatten())
        .filter_map(|entry| entry["tool"].as_str())
        .collect();
    assert!(left_out.contains(&"research"), "{server}");
    assert_eq!(
        server["tools"],
        serde_json::json!(["docs__dotted_name", "docs__echo", "docs__fail"])
    );
    assert!(
        server["schema_bytes"]
            .as_u64()
            .is_some_and(|bytes| bytes > 0)
    );
    assert!(
        server["schema_tokens"]
            .as_u64()
            .is_some_and(|tokens| tokens > 0)
    );
    let owner = json["sections"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|section| section["name"] == "mcp:docs")
        .map(|section| section["owner"].clone())
        .expect("the section in the assembly");
    assert_eq!(owner["krate"], "MCP server `docs`");
}

#[test]
fn a_terminated_dsh_leaves_no_server_running() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let pid_file = dir.path().join("pids");
    let tables = format!(
        "{}{}",
        server_table("docs", &[&format!("pid-file={}", pid_file.display())], ""),
        common::runner("", &["mcp:docs"])
    );
    let config = common::scripted_config(dir.path(), "[[answers]]\ntext = \"x\"\n", &tables);
    // `dsh acp` waits on its stdin with the server running.
    let mut dsh = common::spawn(&["acp", "--config", &config]);
    let mut pids = Vec::new();
    for _ in 0..500 {
        if let Ok(text) = std::fs::read_to_string(&pid_file)
            && text.lines().count() == 2
        {
            pids = text
                .lines()
                .map(|line| line.parse::<u32>().expect("a pid"))
                .collect();
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(pids.len(), 2, "the server started");
    // Its stdin stays open: only the signal ends it.
    let status = std::process::Command::new("kill")
        .args(["-TERM", &dsh.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    dsh.wait().expect("dsh exits");
    common::assert_all_gone(&pids);
}

/// The pids the server wrote to `pid_file` (its own, its child's), once
/// it has written both: the server has started, and hangs in `initialize`.
fn started_server(pid_file: &std::path::Path) -> Vec<u32> {
    for _ in 0..1500 {
        if let Ok(text) = std::fs::read_to_string(pid_file)
            && text.lines().count() == 2
        {
            return common::server_pids(pid_file);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("the server did not start");
}

/// A signal while a server starts — one that never answers `initialize`
/// — ends every command at once with the signal's status (128 and its
/// number), and leaves no process of the server's group: not Ctrl-C's
/// `SIGINT`, which used to kill dsh alone, nor `SIGTERM` or `SIGHUP`,
/// which `dsh run` and `dsh acp` used to hold until the start-up timeout.
#[test]
fn a_signal_while_a_server_starts_ends_dsh_with_its_status_and_leaves_no_process() {
    let run: &[&str] = &["run", "-p", "go"];
    let cases: [(&str, i32, &[&str]); 8] = [
        ("-INT", 130, run),
        ("-INT", 130, &["acp"]),
        ("-INT", 130, &["prompt"]),
        ("-INT", 130, &["check"]),
        ("-TERM", 143, run),
        ("-TERM", 143, &["acp"]),
        ("-HUP", 129, run),
        ("-HUP", 129, &["acp"]),
    ];
    for (signal, status, command) in cases {
        let dir = tempfile::tempdir().expect("a temp dir");
        let pid_file = dir.path().join("pids");
        let pids_arg = format!("pid-file={}", pid_file.display());
        let tables = format!(
            "{}{}",
            server_table(
                "docs",
                &[&pids_arg, "hang-at-initialize"],
                // Were the signal held, dsh would end after this, not now.
                "startup_timeout_secs = 30"
            ),
            common::runner("", &["mcp:docs"])
        );
        let config = common::scripted_config(dir.path(), "[[answers]]\ntext = \"x\"\n", &tables);
        let mut args = command.to_vec();
        args.extend(["--config", &config]);
        // stdin stays open: `dsh acp` would end when it closes.
        let dsh = common::spawn(&args);
        let pids = started_server(&pid_file);
        let killed = std::process::Command::new("kill")
            .args([signal, &dsh.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(killed.success());
        let output = dsh.wait_with_output().expect("dsh ends");
        assert_eq!(
            output.status.code(),
            Some(status),
            "{signal} {command:?}: {}",
            stderr(&output)
        );
        common::assert_all_gone(&pids);
    }
}

/// Ctrl-C's `SIGINT` to `dsh acp` once it serves (it has answered
/// `initialize`, so its servers have started) ends it the way `SIGTERM`
/// does: status 0, and no process of a server's group left.
#[test]
fn sigint_ends_dsh_acp_gently_and_stops_its_servers() {
    use std::io::{BufRead, Write};

    let dir = tempfile::tempdir().expect("a temp dir");
    let pid_file = dir.path().join("pids");
    let pids_arg = format!("pid-file={}", pid_file.display());
    let tables = format!(
        "{}{}",
        server_table("docs", &[&pids_arg], ""),
        common::runner("", &["mcp:docs"])
    );
    let config = common::scripted_config(dir.path(), "[[answers]]\ntext = \"x\"\n", &tables);
    let mut dsh = common::spawn(&["acp", "--config", &config]);
    let mut stdin = dsh.stdin.take().expect("stdin");
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n")
        .expect("write stdin");
    let mut answer = String::new();
    std::io::BufReader::new(dsh.stdout.take().expect("stdout"))
        .read_line(&mut answer)
        .expect("read stdout");
    assert!(answer.contains("\"protocolVersion\":1"), "{answer}");
    let pids = common::server_pids(&pid_file);
    let killed = std::process::Command::new("kill")
        .args(["-INT", &dsh.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    // stdin stays open: only the signal ends it.
    let output = dsh.wait_with_output().expect("dsh ends");
    drop(stdin);
    assert_status(&output, 0);
    common::assert_all_gone(&pids);
}

#[test]
fn a_servers_prompt_runs_as_a_command_of_the_input_line() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let tables = format!(
        "{}{}",
        server_table("docs", &["prompts"], ""),
        common::runner("", &["read", "mcp:docs"])
    );
    let config = common::scripted_config(dir.path(), "[[answers]]\ntext = \"reviewed\"\n", &tables);
    let recorded = dir.path().join("requests.jsonl");
    let recorded_arg = recorded.display().to_string();
    let input = "/docs:review\n/docs:reveiw x.rs\n/docs:review file=x.rs\n";
    let output = common::with_stdin(
        &[
            "run",
            "--config",
            &config,
            "--record-requests",
            &recorded_arg,
        ],
        input,
    );
    assert_status(&output, 0);
    assert_eq!(stdout(&output).trim(), "reviewed");
    // The two that cannot run say why, and send nothing.
    let said = stderr(&output);
    assert!(
        said.contains("`/docs:review` needs its argument `file`"),
        "{said}"
    );
    assert!(
        said.contains("MCP server `docs` has no prompt `reveiw`; it has `review`"),
        "{said}"
    );
    // The one that runs sends the prompt's text as the person's turn.
    let requests = common::recorded_requests(&recorded);
    assert_eq!(requests.len(), 1);
    let sent = requests[0]["messages"].to_string();
    assert!(sent.contains("Review x.rs for mistakes."), "{sent}");
    assert!(!sent.contains("/docs:review"), "{sent}");
}

#[test]
fn a_servers_question_is_declined_and_said() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let answers = "[[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"docs__elicit\"\narguments = {}\n\
        [[answers]]\ntext = \"done\"\n";
    let tables = format!(
        "{}{}",
        server_table("docs", &["elicits"], ""),
        common::runner("", &["read", "mcp:docs"])
    );
    let config = common::scripted_config(dir.path(), answers, &tables);
    let (output, requests) = common::run_recorded(dir.path(), &config, &["-p", "go"]);
    assert_eq!(stdout(&output).trim(), "done");
    // The server hears a decline, not an error; the person, what it asked.
    let result = requests[1]["messages"].to_string();
    assert!(result.contains("elicitation: Decline"), "{result}");
    let said = stderr(&output);
    assert!(
        said.contains(
            "[mcp docs] asked for input, declined (no one here answers it): Sign in, please."
        ),
        "{said}"
    );
}

#[test]
fn without_a_terminal_a_servers_sampling_is_refused_and_never_reaches_the_model() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let answers = "[[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"docs__sample\"\narguments = { text = \"Name a colour.\" }\n\
        [[answers]]\ntext = \"done\"\n";
    let tables = format!(
        "{}{}",
        server_table("docs", &["samples"], ""),
        common::runner("", &["read", "mcp:docs"])
    );
    let config = common::scripted_config(dir.path(), answers, &tables);
    let (output, requests) = common::run_recorded(dir.path(), &config, &["-p", "go"]);
    assert_eq!(stdout(&output).trim(), "done");
    // No one can answer: dsh did not advertise sampling, and refuses the
    // request the server sends anyway; the model saw the turn's two steps.
    assert_eq!(requests.len(), 2, "{requests:?}");
    let result = requests[1]["messages"].to_string();
    assert!(result.contains("sampling failed"), "{result}");
    assert!(
        result.contains("dsh answers no sampling requests here"),
        "{result}"
    );
}

/// A deployment's stdio server works for the session: `roots/list`
/// answers the session's directory (`--cwd`), not the directory of the
/// deployment's file, where the server was started.
#[test]
fn a_deployment_servers_roots_are_the_sessions_directory_not_the_deployments() {
    let dir = tempfile::tempdir().expect("the deployment's directory");
    let project = tempfile::tempdir().expect("a project");
    let answers = "[[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"docs__roots\"\narguments = {}\n\
        [[answers]]\ntext = \"done\"\n";
    let tables = format!(
        "{}{}",
        server_table("docs", &["roots"], ""),
        common::runner("", &["mcp:docs"])
    );
    let config = common::scripted_config(dir.path(), answers, &tables);
    let cwd = project.path().display().to_string();
    let (output, requests) =
        common::run_recorded(dir.path(), &config, &["--cwd", &cwd, "-p", "go"]);
    assert_status(&output, 0);
    let result = serde_json::to_string(&requests[1]).expect("json");
    // The server starts in the session's directory, so its roots are that
    // directory from the start.
    let project_uri = format!("file://{}\\nlist_changed: ", project.path().display());
    assert!(result.contains(&project_uri), "{project_uri} in {result}");
    let deployment_uri = format!("file://{}", dir.path().display());
    assert!(
        !result.contains(&format!("{deployment_uri}\\n")),
        "{result}"
    );
}

/// `dsh check` starts a server as a session would (sampling and
/// elicitation advertised): a tool the server offers only to a client
/// that samples, allow-listed, is found — not reported unknown.
#[test]
fn check_sees_a_tool_offered_only_to_a_client_that_samples() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let tables = format!(
        "{}{}",
        server_table(
            "docs",
            &["sampling-only"],
            "tools = [\"echo\", \"summarize\"]"
        ),
        common::runner("", &["mcp:docs"])
    );
    let config = common::scripted_config(dir.path(), "[[answers]]\ntext = \"x\"\n", &tables);
    let output = dsh(&["check", "--config", &config, "--format", "json"]);
    assert_status(&output, 0);
    let report: Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    let docs = &report["mcp_servers"][0];
    assert_eq!(docs["tools"], 2, "echo and summarize: {docs}");
}

/// A deployment's stdio server runs in the session's working directory
/// (`--cwd`), not the deployment's, unless its table gives `cwd`,
/// relative to the deployment file.
#[test]
fn a_deployment_server_runs_in_the_sessions_directory_unless_its_table_says() {
    let answers = "[[answers]]\ntext = \"done\"\n";
    for (cwd_key, in_deployment) in [("", false), ("cwd = \".\"", true)] {
        let dir = tempfile::tempdir().expect("the deployment's directory");
        let project = tempfile::tempdir().expect("a project");
        let script = format!("pwd > where; exec {}", *SERVER);
        let tables = format!(
            "\n[mcp.docs]\ncommand = [\"sh\", \"-c\", {script:?}]\n{cwd_key}\n{}",
            common::runner("", &["mcp:docs"])
        );
        let config = common::scripted_config(dir.path(), answers, &tables);
        let cwd = project.path().display().to_string();
        let (output, _) = common::run_recorded(dir.path(), &config, &["--cwd", &cwd, "-p", "go"]);
        assert_status(&output, 0);
        let (ran_in, not_in) = match in_deployment {
            true => (dir.path(), project.path()),
            false => (project.path(), dir.path()),
        };
        let said = std::fs::read_to_string(ran_in.join("where")).expect("the server wrote");
        assert_eq!(said.trim(), ran_in.display().to_string(), "{cwd_key}");
        assert!(!not_in.join("where").exists(), "{cwd_key}");
    }
}
