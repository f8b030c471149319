//! Compaction through the real `dsh run`: `/compact` on its input line,
//! and a tiny `context_window` that makes the loop elide an old result on
//! its own — one line on stderr, and a mark in the trace.

use crate::common;

use common::{assert_status, stderr, stdout};
use serde_json::Value;

/// The runner with bash, whose model answers `answers`; `adapter_keys`
/// go into its `[adapter.scripted]` table.
fn deployment(dir: &std::path::Path, answers: &str, adapter_keys: &str) -> String {
    common::scripted_config(
        dir,
        answers,
        &format!("{adapter_keys}{}", common::runner("", &["bash"])),
    )
}

fn tool_texts(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn compact_on_the_input_line_summarizes_the_session() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = deployment(
        dir.path(),
        "[[answers]]\ntext = \"one\"\n\
         [[answers]]\ntext = \"SUMMARY: the user said first.\"\n\
         [[answers]]\ntext = \"two\"\n",
        "",
    );
    let recorded = dir.path().join("requests.jsonl");
    let output = common::with_stdin(
        &[
            "run",
            "--config",
            &config,
            "--record-requests",
            &recorded.display().to_string(),
        ],
        "first\n/compact\nsecond\n",
    );
    assert_status(&output, 0);
    assert_eq!(stdout(&output), "one\ntwo\n", "the summary is not printed");
    let stderr = stderr(&output);
    assert!(
        stderr.contains("compacted the conversation: ")
            && stderr.contains("(earlier turns summarized, on request)"),
        "{stderr}"
    );
    let requests = common::recorded_requests(&recorded);
    assert_eq!(requests.len(), 3, "{requests:#?}");
    // The summary request: the compaction instruction, no tools, the
    // transcript of the first turn.
    let summary = &requests[1];
    assert_eq!(
        summary["system"].as_str(),
        Some(dsh_agent_loop::compaction::COMPACTION_INSTRUCTION)
    );
    assert_eq!(summary["tools"], Value::Array(Vec::new()));
    let transcript = summary["messages"][0]["text"].as_str().unwrap_or_default();
    assert!(transcript.contains("[user]\nfirst"), "{transcript}");
    assert!(transcript.contains("[assistant]\none"), "{transcript}");
    // The next turn reads the summary, then its own message; the system
    // prompt and the tools are the first request's, byte for byte.
    let after = &requests[2];
    let first = after["messages"][0]["text"].as_str().unwrap_or_default();
    assert!(
        first.starts_with(dsh_agent_loop::compaction::SUMMARY_HEADER)
            && first.ends_with("SUMMARY: the user said first."),
        "{first}"
    );
    assert_eq!(after["messages"][1]["text"], "second");
    assert_eq!(after["messages"].as_array().map(Vec::len), Some(2));
    assert_eq!(after["system"], requests[0]["system"]);
    assert_eq!(after["tools"], requests[0]["tools"]);
}

#[test]
fn a_tiny_window_elides_an_old_result_and_says_so() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = deployment(
        dir.path(),
        "[[answers]]\n[[answers.tool_calls]]\nname = \"bash\"\narguments = { command = \"seq 1 1000\" }\n\
         [[answers]]\n[[answers.tool_calls]]\nname = \"bash\"\narguments = { command = \"seq 2001 3000\" }\n\
         [[answers]]\ntext = \"done\"\n",
        "context_window = 5000\n",
    );
    let trace = dir.path().join("trace.jsonl");
    let trace_arg = trace.display().to_string();
    let (output, requests) =
        common::run_recorded(dir.path(), &config, &["--trace", &trace_arg, "-p", "count"]);
    let stderr = stderr(&output);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("compacted the conversation: "))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("of a 5000-token window (1 tool result elided)"),
        "{stderr}"
    );

    // The third request reads the first result as a marker, the second
    // whole.
    assert_eq!(requests.len(), 3);
    let texts = tool_texts(&requests[2]);
    assert!(
        texts[0].starts_with("[elided by compaction: the `bash` result of"),
        "{}",
        texts[0]
    );
    assert!(texts[1].starts_with("2001\n"), "{}", texts[1]);

    // The trace marks that request, and only it.
    let trace = common::json_lines(&trace);
    assert_eq!(trace.len(), 3);
    assert!(trace[0].get("compacted").is_none() && trace[1].get("compacted").is_none());
    let mark = &trace[2]["compacted"];
    assert_eq!(mark["trigger"], "budget");
    assert_eq!(mark["elided"], 1);
    assert_eq!(mark["summarized"], false);
    assert!(mark["after_tokens"].as_u64() < mark["before_tokens"].as_u64());
    assert_eq!(trace[2]["prefix_broke_in"], "messages");
    assert_eq!(
        trace[2]["system_prompt_sha256"], trace[1]["system_prompt_sha256"],
        "the system prompt is untouched"
    );
    assert_eq!(trace[2]["tools_sha256"], trace[1]["tools_sha256"]);
}
