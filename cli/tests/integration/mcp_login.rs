//! `dsh mcp list|login|logout` and `dsh check` against real parts: an
//! OAuth authorization server and an MCP server it protects, on
//! 127.0.0.1, from the official Python SDK (installed once under the
//! target directory). The login's browser is an HTTP client that opens
//! the URL `dsh mcp login` prints; the test authorization server approves
//! at once and sends it back to dsh's callback. Then a turn of `dsh run`
//! calls the protected server's tool.

use std::io::BufRead as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use dsh_mcp_test_server::oauth::{OAuthServers, browse_blocking};

use crate::common::{self, assert_status, stderr, stdout};

/// `dsh` with `args`, its state (and so its logins) in `state`.
fn dsh_in(state: &Path, args: &[&str]) -> Command {
    let mut command = common::command(args);
    command
        .env("XDG_STATE_HOME", state)
        .env("DSH_NO_BROWSER", "1");
    command
}

fn run(state: &Path, args: &[&str]) -> Output {
    dsh_in(state, args).output().expect("dsh runs")
}

/// `output`'s stderr as words, the reporter's wrapping and margin gone.
fn said(output: &Output) -> String {
    let text = stderr(output);
    let words: Vec<&str> = (text.split_whitespace())
        .filter(|word| !matches!(*word, "│" | "×"))
        .collect();
    words.join(" ")
}

/// `dsh mcp login NAME`: reads the URL it prints, opens it as a browser
/// would, and waits for dsh to end; what it printed.
fn login(state: &Path, config: &str, name: &str) -> String {
    let mut child = dsh_in(state, &["mcp", "login", name, "--config", config])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dsh starts");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut printed = String::new();
    let url = loop {
        let mut line = String::new();
        let read = stdout.read_line(&mut line).expect("stdout reads");
        printed.push_str(&line);
        assert!(read > 0, "no URL printed: {printed}");
        if line.starts_with("http://") {
            break line.trim().to_owned();
        }
    };
    let page = browse_blocking(&url).unwrap_or_else(|error| panic!("{error}"));
    assert!(page.contains("you may close this page"), "{page}");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).expect("stdout reads");
    let output = child.wait_with_output().expect("dsh ends");
    assert!(
        output.status.success(),
        "{printed}{rest}\n{}",
        stderr(&output)
    );
    printed + &rest
}

#[test]
fn a_login_lets_a_turn_call_the_protected_servers_tool_and_a_logout_forgets_it() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-mcp");
    let servers = OAuthServers::start(&dir, 3600).unwrap_or_else(|error| panic!("{error}"));
    let work = tempfile::tempdir().expect("a temp dir");
    let state = work.path().join("state");
    let answers = "[[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"protected__whoami\"\narguments = {}\n\
        [[answers]]\ntext = \"done\"\n";
    let tables = format!(
        "\n[mcp.protected]\nurl = \"{}\"\npermission = \"allow\"\n{}",
        servers.url,
        common::runner("", &["mcp:protected"])
    );
    let config = common::scripted_config(work.path(), answers, &tables);
    let needs_login = "needs a login: run `dsh mcp login protected`";

    let list = run(&state, &["mcp", "list", "--config", &config]);
    assert_status(&list, 0);
    let expected = format!(
        "protected ({}): OAuth: login needed: run `dsh mcp login protected`",
        servers.url
    );
    assert_eq!(stdout(&list).trim(), expected);
    let check = run(&state, &["check", "--config", &config]);
    assert_status(&check, 1);
    assert!(said(&check).contains(needs_login), "{}", stderr(&check));

    let printed = login(&state, &config, "protected");
    assert!(
        printed.contains("Open this URL to log in to MCP server `protected`"),
        "{printed}"
    );
    assert!(
        printed.contains("Logged in to MCP server `protected`: OAuth: logged in at"),
        "{printed}"
    );
    let kept = state.join("dsh/logins/mcp/protected.json");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&kept)
            .expect("the login is kept")
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    let list = run(&state, &["mcp", "list", "--config", &config]);
    assert!(
        stdout(&list).contains("OAuth: logged in at http://127.0.0.1:"),
        "{}",
        stdout(&list)
    );

    // A turn calls the protected tool with the login.
    let recorded = work.path().join("requests.jsonl");
    let recorded_arg = recorded.display().to_string();
    let turn = run(
        &state,
        &[
            "run",
            "--config",
            &config,
            "--record-requests",
            &recorded_arg,
            "-p",
            "who am I?",
        ],
    );
    assert_status(&turn, 0);
    assert_eq!(stdout(&turn).trim(), "done");
    let requests = common::recorded_requests(&recorded);
    let last = requests.last().expect("two requests").to_string();
    assert!(last.contains("demo_user, access token 1"), "{last}");

    let logout = run(&state, &["mcp", "logout", "protected", "--config", &config]);
    assert_status(&logout, 0);
    assert!(stdout(&logout).contains("Logged out of MCP server `protected`"));
    assert!(!kept.exists());
    let check = run(&state, &["check", "--config", &config]);
    assert_status(&check, 1);
    assert!(said(&check).contains(needs_login), "{}", stderr(&check));
}
