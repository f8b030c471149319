//! `dsh check`'s findings on deployments written here, without MCP
//! servers: what a session would pay for, found before it starts.

use crate::SourceFile;
use crate::file::Deployment;
use crate::reports::check::{Findings, WithServers, check_deployment};
use crate::runtime::Runtime;

/// A deployment of one agent with the read and bash tools on an
/// OpenAI-compatible adapter, with `adapter_keys` added to its table.
fn deployment(adapter_keys: &str) -> String {
    format!(
        "[adapter.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n{adapter_keys}\n\
         [[agents]]\nid = \"coder\"\npersona = \"You are a careful coding agent.\"\n\
         tools = [\"read\", \"bash\"]\n"
    )
}

/// What `dsh check --no-mcp` finds in `text`, with no working directory.
fn check(text: &str) -> Findings {
    let names = crate::runtime::builtin_tool_names();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let deployment = Deployment::parse(SourceFile::new("dsh.toml", text), None, &names)
        .unwrap_or_else(|problems| panic!("{}", problems[0].message()));
    let runtime = Runtime::new(&deployment).unwrap_or_else(|problems| panic!("{problems:?}"));
    check_deployment(&deployment, &runtime, None, WithServers::No)
        .unwrap_or_else(|problems| panic!("{problems:?}"))
}

fn messages(findings: &Findings) -> Vec<String> {
    findings
        .problems
        .iter()
        .map(|problem| problem.message().to_owned())
        .collect()
}

#[test]
fn a_window_the_fixed_prompt_fills_is_refused_naming_the_numbers() {
    let findings = check(&deployment("context_window = 10\n"));
    let [problem] = findings.problems.as_slice() else {
        panic!("{:?}", messages(&findings));
    };
    let message = problem.message();
    assert!(
        message.starts_with("agent `coder` sends ")
            && message.contains(
                "tokens of system prompt and tools before any message, but the configured \
                 10-token context window (compacting at 85%) compacts a conversation at 8 \
                 tokens, down to 0"
            ),
        "{message}"
    );
    let help = problem.help_text().unwrap_or_default().to_owned();
    let window: u64 = help
        .strip_prefix("set `context_window` in [adapter.openai] to at least ")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("{help}"));
    // The window it names is enough, and one token less is not.
    let enough = check(&deployment(&format!("context_window = {window}\n")));
    assert!(enough.problems.is_empty(), "{:?}", messages(&enough));
    let short = check(&deployment(&format!("context_window = {}\n", window - 1)));
    assert_eq!(short.problems.len(), 1, "{:?}", messages(&short));
}

#[test]
fn a_compact_at_that_leaves_no_room_names_compact_at() {
    let findings = check(&deployment(
        "context_window = 200000\ncompact_at = 1e-300\n",
    ));
    let [problem] = findings.problems.as_slice() else {
        panic!("{:?}", messages(&findings));
    };
    assert!(
        problem
            .message()
            .contains("compacts a conversation at 0 tokens"),
        "{}",
        problem.message()
    );
    assert!(
        problem
            .help_text()
            .is_some_and(|help| help.starts_with("raise `compact_at` in [adapter.openai]")),
        "{:?}",
        problem.help_text()
    );
    // A model without a window, and a window with room, pass.
    assert!(check(&deployment("")).problems.is_empty());
    assert!(
        check(&deployment("context_window = 200000\n"))
            .problems
            .is_empty()
    );
}

#[test]
fn a_tool_schema_over_the_limit_is_a_problem_at_the_key() {
    let text = format!("max_tool_schema_bytes = 200\n{}", deployment(""));
    let findings = check(&text);
    let said = messages(&findings);
    assert!(
        said.iter().any(
            |message| message.starts_with("the schema of tool `bash` is ")
                && message.ends_with(
                    "bytes, over the 200 of `max_tool_schema_bytes`: every request would carry it"
                )
        ),
        "{said:?}"
    );
    // Each tool is said once, at the key.
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(
        findings
            .problems
            .iter()
            .all(|problem| problem.source().is_some())
    );
    assert!(check(&deployment("")).problems.is_empty());
}

#[test]
fn a_thinking_budget_the_api_refuses_is_a_problem_at_its_value() {
    let text = |budget: u32| {
        format!(
            "[adapter.anthropic]\nmodel = \"claude-x\"\nmax_tokens = 4096\n\
             thinking_budget = {budget}\n[[agents]]\nid = \"coder\"\npersona = \"You code.\"\n\
             tools = [\"read\"]\n"
        )
    };
    let bad = text(4096);
    let findings = check(&bad);
    let [problem] = findings.problems.as_slice() else {
        panic!("{:?}", messages(&findings));
    };
    assert!(
        problem
            .message()
            .contains("`thinking_budget` = 4096 is not a budget the API takes"),
        "{}",
        problem.message()
    );
    let labels: Vec<_> = miette::Diagnostic::labels(problem)
        .into_iter()
        .flatten()
        .collect();
    let value = bad.find("= 4096\n[[").map(|at| at + 2);
    assert_eq!(
        labels
            .iter()
            .map(|label| label.offset())
            .collect::<Vec<_>>(),
        value.into_iter().collect::<Vec<_>>(),
        "the label is at the value"
    );
    assert!(check(&text(2048)).problems.is_empty());
}
