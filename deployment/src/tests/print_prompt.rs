//! The library boundary, as a program that embeds dsh uses it: the
//! `print_prompt` example prints what the library renders (and `dsh
//! prompt` prints the same, through the same `AgentPrompt::render`).

use std::process::Command;

use crate::reports::agent_prompt::{AgentPrompt, ServerStart};

#[test]
fn the_example_prints_each_example_agents_prompt_byte_for_byte() {
    let cwd = tempfile::tempdir().expect("a working directory");
    let cwd = std::fs::canonicalize(cwd.path()).expect("canonical");
    let examples = [
        ("coding-agent", None),
        ("acp-agent", None),
        ("review-team", Some("reviewer")),
        ("anthropic", None),
    ];
    for (example_dir, agent) in examples {
        let config = super::workspace()
            .join("examples")
            .join(example_dir)
            .join("dsh.toml");
        let mut command = Command::new(super::example("print_prompt"));
        command.current_dir(&cwd).arg("--config").arg(&config);
        if let Some(agent) = agent {
            command.args(["--agent", agent]);
        }
        let output = command.output().expect("the example runs");
        assert!(
            output.status.success(),
            "{example_dir}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let rendered = AgentPrompt::load(
            Some(&config),
            agent,
            Some(&cwd),
            ServerStart::Start(dsh_tool_mcp::ServerOutput::discarded()),
        )
        .and_then(|shown| shown.render())
        .unwrap_or_else(|problems| panic!("{example_dir}: {}", problems[0].message()));
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            rendered,
            "{example_dir}"
        );
    }
}

#[test]
fn the_example_says_what_is_wrong_with_a_bad_deployment() {
    let dir = tempfile::tempdir().expect("a directory");
    let config = dir.path().join("dsh.toml");
    std::fs::write(
        &config,
        "[adapter.scripted]\nanswers = \"answers.toml\"\nmodel = \"m\"\n[[agents]]\nid = \"a\"\npersona = \"<<nope>>\"\n",
    )
    .expect("write");
    let output = Command::new(super::example("print_prompt"))
        .current_dir(dir.path())
        .arg("--config")
        .arg(&config)
        .output()
        .expect("the example runs");
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("nope"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
