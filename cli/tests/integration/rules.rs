//! Rules that own paths, through the real `dsh`: one rule in each format
//! in a real project, a scripted turn that touches the files they cover,
//! and what each model request carried.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common;

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("create a directory");
    std::fs::write(path, text).expect("write");
}

/// A project with one rule in each format, a rule whose glob matches
/// nothing and one with a misspelled key; and a deployment beside it
/// whose scripted model reads `src/lib.rs`, reads `src/other.rs`, creates
/// `tests/test_new.py`, reads `pkg/sub/x.txt`, then reads and edits
/// `docs/guide.md`.
struct Project {
    dir: tempfile::TempDir,
    config: String,
}

impl Project {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let root = dir.path().join("project");
        std::fs::create_dir_all(root.join(".git")).expect("create .git");
        for (path, text) in [
            (
                ".cursor/rules/rust.mdc",
                "---\ndescription: Rust code\nglobs: \"**/*.rs\"\nalwaysApply: false\n---\n\
                 RUST RULE: errors are typed.\n",
            ),
            (
                ".claude/rules/always.md",
                "ALWAYS RULE. Say what you ran.\n",
            ),
            (
                ".github/instructions/tests.instructions.md",
                "---\napplyTo: \"tests/**/*.py\"\n---\nTESTS RULE: use pytest fixtures.\n",
            ),
            (
                ".claude/rules/docs.md",
                "---\npaths:\n  - \"docs/**\"\n---\nDOCS RULE: plain words. Say what you ran.\n",
            ),
            (
                "pkg/sub/AGENTS.md",
                "NESTED RULE: this package is frozen.\n",
            ),
            (
                ".cursor/rules/zig.mdc",
                "---\nglobs: \"**/*.zig\"\n---\nZIG RULE: never sent.\n",
            ),
            (
                ".claude/rules/typo.md",
                "---\npath: \"src/**\"\n---\nTYPO RULE: meant for src.\n",
            ),
            ("src/lib.rs", "pub fn lib() {}\n"),
            ("src/other.rs", "pub fn other() {}\n"),
            ("pkg/sub/x.txt", "x\n"),
            ("docs/guide.md", "# Guide\nold words\n"),
            ("tests/.keep", ""),
        ] {
            write(&root, path, text);
        }
        let read = |path: &str| {
            format!(
                "[[answers]]\n[[answers.tool_calls]]\nname = \"read\"\n\
                 arguments = {{ file_path = {path:?} }}\n"
            )
        };
        let answers = [
            read("src/lib.rs"),
            read("src/other.rs"),
            "[[answers]]\n[[answers.tool_calls]]\nname = \"write\"\n\
             arguments = { file_path = \"tests/test_new.py\", content = \"def test(): pass\\n\" }\n"
                .to_owned(),
            read("pkg/sub/x.txt"),
            read("docs/guide.md"),
            "[[answers]]\n[[answers.tool_calls]]\nname = \"edit\"\n\
             arguments = { file_path = \"docs/guide.md\", old_string = \"old\", new_string = \"new\" }\n"
                .to_owned(),
            "[[answers]]\ntext = \"Done.\"\n".to_owned(),
        ]
        .concat();
        let config = common::scripted_config(
            dir.path(),
            &answers,
            "[[agents]]\nid = \"editor\"\ntools = [\"read\", \"write\", \"edit\"]\n\
             persona = \"You edit files in <<cwd>>.\"\n",
        );
        Self { dir, config }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("project")
    }
}

/// The text of every message of `request`, joined.
fn messages(request: &Value) -> String {
    (request["messages"].as_array().expect("messages").iter())
        .map(|message| message["text"].as_str().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_path_rule_reaches_the_model_once_after_the_first_file_it_covers_and_never_the_prompt() {
    let project = Project::new();
    let cwd = project.root().display().to_string();
    let trace = project.dir.path().join("trace.jsonl");
    let (output, requests) = common::run_recorded(
        project.dir.path(),
        &project.config,
        &[
            "--cwd",
            &cwd,
            "--trace",
            &trace.display().to_string(),
            "-p",
            "Work.",
        ],
    );
    assert_eq!(requests.len(), 7, "one request a step");
    // The always rules are the system prompt's; no path rule ever is.
    for request in &requests {
        let system = request["system"].as_str().expect("a system prompt");
        assert!(system.contains("ALWAYS RULE"), "{system}");
        for path_rule in ["RUST", "TESTS", "NESTED", "DOCS", "ZIG"] {
            assert!(!system.contains(&format!("{path_rule} RULE")), "{system}");
        }
        // Byte for byte the same prompt and tools for the whole turn.
        assert_eq!(request["system"], requests[0]["system"]);
        assert_eq!(request["tools"], requests[0]["tools"]);
    }
    // Which request first carries each rule, and how often the last one
    // carries it: once, after the call that fired it.
    let first = |rule: &str| {
        requests
            .iter()
            .position(|request| messages(request).contains(rule))
    };
    let last = messages(requests.last().expect("requests"));
    let fired = [
        ("RUST RULE", 1),   // after the read of src/lib.rs, not src/other.rs
        ("TESTS RULE", 3),  // after the write that created tests/test_new.py
        ("NESTED RULE", 4), // after the read of pkg/sub/x.txt
        ("DOCS RULE", 5),   // after the read of docs/guide.md
    ];
    for (rule, at) in fired {
        assert_eq!(first(rule), Some(at), "{rule}");
        assert_eq!(last.matches(rule).count(), 1, "{rule} once: {last}");
    }
    assert_eq!(first("ZIG RULE"), None);
    // The rule's note follows the result of the call that fired it.
    let tool_texts: Vec<&str> = (requests[1]["messages"].as_array().expect("messages").iter())
        .filter(|message| message["role"] == "tool")
        .map(|message| message["text"].as_str().unwrap_or_default())
        .collect();
    let [read] = tool_texts.as_slice() else {
        panic!("{tool_texts:?}");
    };
    assert!(
        read.contains("pub fn lib()")
            && read.contains(
                "Project rule `.cursor/rules/rust.mdc` applies from here on to the files it \
                 covers (`src/lib.rs` matches `**/*.rs`)"
            ),
        "{read}"
    );
    // The trace names each rule on the request that first carries it.
    let lines = common::json_lines(&trace);
    let rules: Vec<(usize, &Value)> = (lines.iter().enumerate())
        .flat_map(|(at, line)| {
            (line["rules"].as_array().into_iter().flatten()).map(move |rule| (at, rule))
        })
        .collect();
    let named: Vec<(usize, &str, &str)> = (rules.iter())
        .map(|(at, rule)| {
            (
                *at,
                rule["rule"].as_str().unwrap(),
                rule["file"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        named,
        [
            (1, ".cursor/rules/rust.mdc", "src/lib.rs"),
            (
                3,
                ".github/instructions/tests.instructions.md",
                "tests/test_new.py"
            ),
            (4, "pkg/sub/AGENTS.md", "pkg/sub/x.txt"),
            (5, ".claude/rules/docs.md", "docs/guide.md"),
        ]
    );
    assert!(
        rules
            .iter()
            .all(|(_, rule)| rule["tokens"].as_u64() > Some(5))
    );
    // The person sees each rule that fired, once.
    let stderr = common::stderr(&output);
    assert_eq!(
        stderr
            .matches("rule `.cursor/rules/rust.mdc` applied: `src/lib.rs` matches `**/*.rs`")
            .count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("rule `pkg/sub/AGENTS.md` applied: `pkg/sub/x.txt` is under `pkg/sub/`"),
        "{stderr}"
    );
}

#[test]
fn prompt_json_lists_every_rule_and_check_names_the_dead_glob_and_the_wrong_key() {
    let project = Project::new();
    let root = project.root();
    let output = common::command(&["prompt", "--format", "json", "--config", &project.config])
        .current_dir(&root)
        .output()
        .expect("dsh runs");
    common::assert_status(&output, 0);
    let json: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let rules = json["instructions"]["rules"]
        .as_array()
        .unwrap_or_else(|| panic!("rules in {json:#}"));
    let listed: Vec<(&str, &str)> = rules
        .iter()
        .map(|rule| {
            (
                rule["name"].as_str().expect("a name"),
                rule["applies"]["kind"].as_str().expect("a kind"),
            )
        })
        .collect();
    for expected in [
        (".cursor/rules/rust.mdc", "paths"),
        (".cursor/rules/zig.mdc", "paths"),
        (".github/instructions/tests.instructions.md", "paths"),
        (".claude/rules/always.md", "always"),
        (".claude/rules/docs.md", "paths"),
        (".claude/rules/typo.md", "always"),
        ("pkg/sub/AGENTS.md", "under"),
    ] {
        assert!(listed.contains(&expected), "{expected:?} in {listed:?}");
    }
    let rust = rules
        .iter()
        .find(|rule| rule["name"] == ".cursor/rules/rust.mdc")
        .expect("the Rust rule");
    assert_eq!(rust["applies"]["selector"], serde_json::json!(["**/*.rs"]));
    assert_eq!(rust["format"], "cursor");

    let output = common::command(&["check", "--config", &project.config])
        .current_dir(&root)
        .output()
        .expect("dsh runs");
    let said = format!("{}{}", common::stdout(&output), common::stderr(&output));
    assert!(
        said.contains(".cursor/rules/zig.mdc:2")
            && said.contains("the glob `**/*.zig` matches no file of the project"),
        "{said}"
    );
    assert!(
        said.contains(".claude/rules/typo.md:2")
            && said.contains("unknown frontmatter key `path`")
            && said.contains("did you mean `paths`?"),
        "{said}"
    );
    // A path rule that repeats a sentence of an always rule is said too.
    assert!(
        said.contains("path rule `") && said.contains("Say what you ran."),
        "{said}"
    );
}
