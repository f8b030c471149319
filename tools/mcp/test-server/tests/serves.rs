//! The binary serves MCP on stdio: it answers `initialize` with its name
//! and the capabilities its arguments ask for.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

#[test]
fn it_answers_initialize_on_stdio() {
    let mut server = Command::new(env!("CARGO_BIN_EXE_dsh-mcp-test-server"))
        .arg("prompts")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the server starts");
    let mut stdin = server.stdin.take().expect("its stdin");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"test","version":"0"}}}}}}"#
    )
    .expect("written");
    let mut line = String::new();
    let mut stdout = BufReader::new(server.stdout.take().expect("its stdout"));
    stdout.read_line(&mut line).expect("an answer");
    let answer: serde_json::Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(
        answer["result"]["capabilities"]["prompts"].is_object(),
        "{answer}"
    );
    drop(stdin);
    server.wait().expect("it ends when its stdin closes");
}
