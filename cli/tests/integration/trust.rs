//! Trust, probed as a careless or hostile user would: what a command and
//! a server see of dsh's environment, what a command may write and
//! reach, and which MCP tools run unasked — with the real `dsh`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common;

/// The texts of the tool results in the last request `requests` recorded.
fn tool_results(requests: &[Value]) -> Vec<String> {
    let last = requests.last().expect("a request");
    last["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A script whose model calls `bash` with `command`, then answers `done`.
fn bash_then_done(command: &str) -> String {
    format!(
        "[[answers]]\n[[answers.tool_calls]]\nname = \"bash\"\narguments = {{ command = {command:?} }}\n\
         [[answers]]\ntext = \"done\"\n"
    )
}

/// A directory outside the temporary one, which `workspace-write` lets
/// commands write.
fn outside_temp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("trust")
        .join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("directory");
    dir
}

#[test]
fn a_command_never_sees_a_secret_nor_a_secret_looking_name_it_does_not_keep() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = common::scripted_config(
        dir.path(),
        // Its own environment, then every process's it can reach through
        // `/proc`: dsh's (its parent's) holds every secret.
        &bash_then_done(
            "env | sort; cat /proc/$PPID/environ /proc/[0-9]*/environ | tr '\\0' '\\n'",
        ),
        &format!(
            "[environment]\nsecrets = [\"DSH_TEST_DB_URL\", \"DSH_TEST_MY_*\"]\n\
             [tools.bash]\nenv_keep = [\"DSH_TEST_GH_*\", \"DSH_TEST_DB_URL\"]\n\
             [mcp.tracker]\nurl = \"http://127.0.0.1:9/mcp\"\nbearer_token_env = \"DSH_TEST_MCP\"\n{}",
            common::runner("", &["bash"])
        ),
    );
    let (mut run, recorded) = common::recording_run(dir.path(), &config, &["-p", "Show env."]);
    let output = run
        .env("DSH_TEST_DB_URL", "postgres://secret-db")
        .env("DSH_TEST_MCP", "secret-mcp-token")
        .env("DSH_TEST_API_KEY", "secret-api-key")
        .env("dsh_test_password", "secret-password")
        .env("DSH_TEST_GH_TOKEN", "kept-token")
        .env("DSH_TEST_PLAIN", "plain")
        .env("DSH_TEST_MY_DB_PASS", "secret-my-pass")
        .env(
            "DSH_TEST_DATABASE_URL",
            "postgres://u:secret-url-password@h/db",
        )
        .env("DSH_TEST_HOOK", "https://hooks.example.com/x")
        .output()
        .expect("dsh runs");
    common::assert_status(&output, 0);
    let env = &tool_results(&common::recorded_requests(&recorded))[0];
    for secret in [
        "secret-db",
        "secret-mcp-token",
        "secret-api-key",
        "secret-password",
        "secret-my-pass",
        "secret-url-password",
    ] {
        assert!(!env.contains(secret), "{secret} in:\n{env}");
    }
    assert!(env.contains("DSH_TEST_GH_TOKEN=kept-token"), "{env}");
    assert!(env.contains("DSH_TEST_PLAIN=plain"), "{env}");
    assert!(
        env.contains("DSH_TEST_HOOK=https://hooks.example.com/x"),
        "{env}"
    );
}

#[test]
fn a_command_cannot_write_outside_the_workspace_nor_connect_unless_full_access() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
    let port = listener.local_addr().expect("address").port();
    let dir = tempfile::tempdir().expect("tempdir");
    let workspace = outside_temp("workspace");
    let outside = outside_temp("outside");
    let target = outside.join("escaped.txt");
    let command = format!(
        "echo in > inside.txt; echo out > {}; (exec 3<>/dev/tcp/127.0.0.1/{port}) && echo connected",
        target.display()
    );
    let config = common::scripted_config(
        dir.path(),
        &bash_then_done(&command),
        &common::runner("", &["bash"]),
    );
    let cwd = workspace.display().to_string();
    // dsh's temporary directory is its own: `outside` is outside the
    // sandbox's writable set wherever the machine keeps temporary files.
    let (mut run, recorded) =
        common::recording_run(dir.path(), &config, &["--cwd", &cwd, "-p", "Escape."]);
    let output = run
        .env("TMPDIR", common::own_tmpdir())
        .output()
        .expect("dsh runs");
    common::assert_status(&output, 0);
    let result = &tool_results(&common::recorded_requests(&recorded))[0];
    assert!(workspace.join("inside.txt").exists(), "{result}");
    assert!(!target.exists(), "{result}");
    assert!(result.contains("Read-only file system"), "{result}");
    assert!(result.contains("Operation not permitted"), "{result}");
    assert!(!result.contains("connected"), "{result}");

    let (_, requests) = common::run_recorded(
        dir.path(),
        &config,
        &["--cwd", &cwd, "--sandbox", "full-access", "-p", "Escape."],
    );
    let result = &tool_results(&requests)[0];
    assert!(target.exists(), "{result}");
    assert!(result.ends_with("connected\n"), "{result}");
}

#[test]
fn the_prompt_says_the_sandbox_in_force() {
    let text = |args: &[&str]| {
        let output = common::command(&[&["prompt"], args].concat())
            .output()
            .expect("dsh runs");
        common::assert_status(&output, 0);
        common::stdout(&output)
    };
    assert!(text(&[]).contains("sandboxed (`workspace-write`)"));
    let dir = tempfile::tempdir().expect("tempdir");
    let config = common::scripted_config(
        dir.path(),
        "",
        "[sandbox]\nmode = \"read-only\"\n[[agents]]\nid = \"a\"\npersona = \"p\"\ntools = [\"bash\"]\n",
    );
    assert!(text(&["--config", &config]).contains("sandboxed (`read-only`): they can read files"));
}

/// The MCP test server's binary.
static SERVER: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| dsh_mcp_test_server::binary().display().to_string());

#[test]
fn an_unannotated_mcp_tool_asks_and_dsh_run_without_a_terminal_refuses_it_naming_the_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let answers = "[[answers]]\n\
         [[answers.tool_calls]]\nname = \"docs__echo\"\narguments = { text = \"read-only runs\" }\n\
         [[answers.tool_calls]]\nname = \"docs__fail\"\narguments = {}\n\
         [[answers]]\ntext = \"done\"\n";
    let tables = |extra: &str| {
        format!(
            "[mcp.docs]\ncommand = [{:?}]\n{extra}\n{}",
            *SERVER,
            common::runner("", &["mcp:docs"])
        )
    };
    let config = common::scripted_config(dir.path(), answers, &tables(""));
    let (_, requests) = common::run_recorded(dir.path(), &config, &["-p", "Call both."]);
    let results = tool_results(&requests);
    assert_eq!(results[0], "read-only runs");
    assert!(
        results[1].starts_with("not run: `docs__fail` runs only with the user's permission")
            && results[1].contains("set `[mcp.docs] allow = [\"fail\"]`"),
        "{}",
        results[1]
    );

    // Allowed by name, it runs (and fails as it always does).
    let config = common::scripted_config(dir.path(), answers, &tables("allow = [\"fail\"]"));
    let (_, requests) = common::run_recorded(dir.path(), &config, &["-p", "Call both."]);
    let results = tool_results(&requests);
    assert!(!results[1].starts_with("not run:"), "{}", results[1]);

    // `permission = "ask"` makes even the read-only tool ask.
    let config = common::scripted_config(dir.path(), answers, &tables("permission = \"ask\""));
    let (_, requests) = common::run_recorded(dir.path(), &config, &["-p", "Call both."]);
    assert!(tool_results(&requests)[0].starts_with("not run:"));
}
