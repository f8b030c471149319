//! The deployment loader against random input: bytes, and TOML built from
//! the deployment's own keys with hostile values. Whatever comes in,
//! loading returns a deployment or problems, and every problem renders
//! (`Reporter`), bounded; nothing panics.
//!
//! CI runs a few hundred cases; `PROPTEST_CASES=20000 cargo test -p
//! dsh-cli --bin dsh property_tests` runs many more.

use proptest::prelude::*;

use dsh_deployment::SourceFile;
use dsh_deployment::file::Deployment;

use crate::diagnostics::{MAX_REPORTED, Reporter};

const BUILTINS: &[&str] = &["bash", "read", "todo_write"];

fn config() -> ProptestConfig {
    ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|cases| cases.parse().ok())
            .unwrap_or(128),
    )
}

/// Loads `text` and renders every problem; the rendered report.
fn load_and_report(text: &str) -> String {
    let reporter = Reporter::plain();
    match Deployment::parse(SourceFile::new("dsh.toml", text), None, BUILTINS) {
        Ok(_) => String::new(),
        Err(problems) => problems
            .iter()
            .take(MAX_REPORTED)
            .map(|problem| reporter.render(problem))
            .collect(),
    }
}

/// A value a key may be given: well-formed or not.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("\"answers.toml\"".to_owned()),
        Just("\"You are <<model>> in <<cwd>>.\"".to_owned()),
        Just("\"<<\"".to_owned()),
        Just("\"<<bad name>> >> <<\\\\<<x>>\"".to_owned()),
        Just("-1".to_owned()),
        Just("0".to_owned()),
        Just("99999999999".to_owned()),
        Just("[\"bash\", \"bash\", \"nope\"]".to_owned()),
        Just("[]".to_owned()),
        Just("{ prompt = 1 }".to_owned()),
        Just("\"\\u001b[2J\"".to_owned()),
        (1usize..70_000).prop_map(|n| format!("\"{} <<x>>\"", "y".repeat(n))),
        "[a-z<>\\\\\" ]{0,40}".prop_map(|text| format!("\"{}\"", text.replace('"', "'"))),
    ]
}

/// One line of a deployment: a table header or a key.
fn line() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("id"),
        Just("persona"),
        Just("tools"),
        Just("model"),
        Just("answers"),
        Just("base_url"),
        Just("api_key_env"),
        Just("kind"),
        Just("provider"),
        Just("command"),
        Just("child"),
        Just("permission"),
        Just("env_remove"),
        Just("timeout_secs"),
        Just("max_subagent_depth"),
        Just("max_prompt_tokens"),
        Just("preset"),
        Just("name"),
        Just("order"),
        Just("text"),
        Just("tool_order"),
    ];
    prop_oneof![
        Just("[adapter.scripted]".to_owned()),
        Just("[adapter.openai]".to_owned()),
        Just("[[agents]]".to_owned()),
        Just("[[agents.sections]]".to_owned()),
        Just("[tools.task]".to_owned()),
        Just("[tools.task.child]".to_owned()),
        Just("[tools.bash]".to_owned()),
        Just("[presets.p]".to_owned()),
        Just("[[presets.p.sections]]".to_owned()),
        (key, value()).prop_map(|(key, value)| format!("{key} = {value}")),
    ]
}

proptest! {
    #![proptest_config(config())]

    /// Any bytes, read as the file would be (lossily here, since the
    /// loader takes text).
    #[test]
    fn any_bytes_load_or_report(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = load_and_report(&text);
    }

    /// Deployments built from the real keys, in any order, with hostile
    /// values: problems render, and a report stays bounded.
    #[test]
    fn any_structure_loads_or_reports(lines in proptest::collection::vec(line(), 0..30)) {
        let text = lines.join("\n");
        let report = load_and_report(&text);
        // Snippets are clipped: a report is far smaller than 50 times the
        // longest line.
        prop_assert!(report.len() <= MAX_REPORTED * 4_000, "{} bytes", report.len());
    }
}
