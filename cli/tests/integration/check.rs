//! `dsh check`: every problem of a deployment, each pointing at its place
//! in the file.

use crate::common;

use common::{assert_status, dsh, stderr, stdout};

/// `dsh check` on a fixture: fails unless it exits 1 with each of
/// `needles` in stderr; returns stderr.
#[track_caller]
fn check_fails(fixture: &str, needles: &[&str]) -> String {
    let path = format!("cli/tests/fixtures/{fixture}");
    failed_with(&dsh(&["check", "--config", path.as_str()]), needles)
}

/// `dsh check` on a deployment of this `text`: fails unless it exits 1
/// with each of `needles` in stderr; returns stderr.
#[track_caller]
fn check_text_fails(text: &str, needles: &[&str]) -> String {
    failed_with(&check_text(text), needles)
}

#[track_caller]
fn failed_with(output: &std::process::Output, needles: &[&str]) -> String {
    assert_status(output, 1);
    let stderr = stderr(output);
    assert_contains(&stderr, needles);
    stderr
}

/// The text of a fixture of `cli/tests/fixtures`.
fn fixture_text(fixture: &str) -> String {
    std::fs::read_to_string(common::workspace().join("cli/tests/fixtures").join(fixture))
        .expect("the fixture")
}

#[track_caller]
fn assert_contains(haystack: &str, needles: &[&str]) {
    for needle in needles {
        assert!(
            haystack.contains(needle),
            "expected `{needle}` in:\n{haystack}"
        );
    }
}

#[test]
fn good_deployments_pass() {
    for config in [
        "cli/tests/fixtures/good.toml",
        "examples/coding-agent/dsh.toml",
        "examples/acp-agent/dsh.toml",
        "examples/review-team/dsh.toml",
        "examples/anthropic/dsh.toml",
        "cli/tests/fixtures/layers-hidden-tool.toml",
    ] {
        let output = dsh(&["check", "--config", config, "--cwd", common::snapshot_cwd()]);
        assert_status(&output, 0);
        assert!(stdout(&output).contains("every prompt renders"));
    }
    // The embedded deployment, by default.
    assert_status(&dsh(&["check"]), 0);
}

/// A fixture of `cli/tests/fixtures` that `dsh check` refuses.
struct Refused {
    /// The case; a case with a snapshot names it so.
    name: &'static str,
    fixture: &'static str,
    /// What stderr says.
    says: &'static [&'static str],
    /// What stderr does not say.
    not: &'static [&'static str],
    /// How many problems stderr reports, where the case counts them.
    problems: Option<usize>,
    /// Whether stderr is also held to the snapshot named `name`.
    snapshot: bool,
}

const REFUSED: &[Refused] = &[
    Refused {
        name: "unknown_variable",
        fixture: "unknown-variable.toml",
        says: &[
            "unknown variable `<<modle>>` in the persona of agent `typo`",
            "[cli/tests/fixtures/unknown-variable.toml:9:20]",
            "did you mean `<<model>>`?",
        ],
        not: &[],
        problems: None,
        snapshot: true,
    },
    // Column 41 is `<<` in the raw file: the `\t` and `\u00e9` escapes
    // before it are longer in the file than in the persona.
    Refused {
        name: "malformed_reference_behind_escapes",
        fixture: "malformed-reference.toml",
        says: &[
            "malformed reference `<< model >>`",
            "[cli/tests/fixtures/malformed-reference.toml:9:41]",
            "did you mean `<<model>>`?",
            "\\<<",
        ],
        not: &[],
        problems: None,
        snapshot: true,
    },
    // Columns count characters, as an editor does: `’`, `«`, `ê` and `à`
    // before the references are one column each, though several bytes.
    Refused {
        name: "a_non_ascii_persona_points_at_the_right_columns",
        fixture: "non-ascii-persona.toml",
        says: &[
            "malformed reference `<<Cwd>>` in the persona of agent `français`",
            "[cli/tests/fixtures/non-ascii-persona.toml:8:48]",
            "did you mean `<<cwd>>`?",
            "unknown variable `<<modle>>` in the persona of agent `français`",
            "[cli/tests/fixtures/non-ascii-persona.toml:8:28]",
            "did you mean `<<model>>`?",
        ],
        not: &[],
        problems: Some(2),
        snapshot: true,
    },
    Refused {
        name: "unknown_key",
        fixture: "unknown-key.toml",
        says: &[
            "unknown field `temperature`",
            "[cli/tests/fixtures/unknown-key.toml:8:1]",
        ],
        not: &[],
        problems: None,
        snapshot: false,
    },
    Refused {
        name: "type_error",
        fixture: "type-error.toml",
        says: &[
            "invalid type: string \"bash\", expected a sequence",
            "[cli/tests/fixtures/type-error.toml:8:9]",
        ],
        not: &[],
        problems: None,
        snapshot: false,
    },
    Refused {
        name: "unknown_tool",
        fixture: "unknown-tool.toml",
        says: &[
            "unknown tool `bsah`",
            "[cli/tests/fixtures/unknown-tool.toml:8:18]",
            "did you mean `bash`?",
        ],
        not: &[],
        problems: None,
        snapshot: false,
    },
    Refused {
        name: "every_problem_is_reported",
        fixture: "several-problems.toml",
        says: &[
            "malformed reference `<<Model>>` in the persona of agent `one`",
            "[cli/tests/fixtures/several-problems.toml:8:20]",
            "unknown variable `<<cwdir>>` in the persona of agent `one`",
            "[cli/tests/fixtures/several-problems.toml:8:33]",
            "did you mean `<<cwd>>`?",
            "malformed reference `<<EOF >>` in the persona of agent `two`",
            "[cli/tests/fixtures/several-problems.toml:13:31]",
        ],
        not: &[],
        problems: Some(3),
        snapshot: false,
    },
    Refused {
        name: "unknown_subagent_provider",
        fixture: "unknown-provider.toml",
        says: &[
            "subagent tool `delegate` is bound to provider `remote`, which is not registered",
            "[cli/tests/fixtures/unknown-provider.toml:7:12]",
            "`spawn`, `fork`",
            "may also use `acp` with a `command`",
        ],
        not: &[],
        problems: None,
        snapshot: false,
    },
    Refused {
        name: "a_child_table_needs_the_spawn_provider",
        fixture: "child-on-fork.toml",
        says: &[
            "tool instance `fork` has a `child` table, but its provider is `fork`",
            "[cli/tests/fixtures/child-on-fork.toml:9:1]",
            "╰── provider",
            "it needs `provider = \"spawn\"`",
        ],
        not: &[],
        problems: None,
        snapshot: false,
    },
    // A child's own persona is checked like an agent's, pointing into it.
    // The parents' personas are fine, and the child is checked once,
    // though two agents start it: one problem.
    Refused {
        name: "a_childs_persona_is_checked",
        fixture: "child-persona.toml",
        says: &[
            "unknown variable `<<modle>>` in the persona of agent `boss/review`",
            "[cli/tests/fixtures/child-persona.toml:10:26]",
            "did you mean `<<model>>`?",
        ],
        not: &[],
        problems: Some(1),
        snapshot: false,
    },
    // An agent over its `max_prompt_tokens` fails at that key, with the
    // largest parts named (an agent within its budget passes: below).
    Refused {
        name: "an_agent_over_its_token_budget",
        fixture: "over-token-budget.toml",
        says: &[
            "agent `small` sends 1394 tokens before any message, over its `max_prompt_tokens` of 1000",
            "1143 in the tools' schemas (counted with cl100k_base)",
            "[cli/tests/fixtures/over-token-budget.toml:12:21]",
            "1000 tokens at most",
            "tool schema `bash` 432",
            "raise `max_prompt_tokens`",
        ],
        not: &["`roomy`"],
        problems: Some(1),
        snapshot: true,
    },
    Refused {
        name: "an_unknown_tokenizer_points_at_its_key",
        fixture: "unknown-tokenizer.toml",
        says: &[
            "unknown tokenizer `o200k` (did you mean `o200k_base`?)",
            "`o200k_base`, `cl100k_base`",
            "[cli/tests/fixtures/unknown-tokenizer.toml:5:13]",
        ],
        not: &[],
        problems: None,
        snapshot: false,
    },
];

/// `dsh check` exits 1 on each refused fixture, and its stderr says what
/// the case says, at the place it says.
#[test]
fn refused_fixtures_say_what_is_wrong_and_where() {
    for case in REFUSED {
        let name = case.name;
        let path = format!("cli/tests/fixtures/{}", case.fixture);
        let output = dsh(&["check", "--config", path.as_str()]);
        let stderr = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{name}: {stderr}");
        for needle in case.says {
            assert!(
                stderr.contains(needle),
                "{name}: expected `{needle}` in:\n{stderr}"
            );
        }
        for needle in case.not {
            assert!(
                !stderr.contains(needle),
                "{name}: `{needle}` not expected in:\n{stderr}"
            );
        }
        if let Some(count) = case.problems {
            assert_eq!(stderr.matches("  × ").count(), count, "{name}: {stderr}");
        }
        if case.snapshot {
            insta::assert_snapshot!(name, stderr);
        }
    }
}

#[test]
fn cwd_without_a_working_directory() {
    let output = dsh(&[
        "check",
        "--config",
        "examples/acp-agent/dsh.toml",
        "--no-cwd",
    ]);
    failed_with(
        &output,
        &[
            "`<<cwd>>` has no value in the persona of agent `editor`",
            "[examples/acp-agent/dsh.toml:22:27]",
            "--cwd DIR",
        ],
    );
}

#[test]
fn a_missing_file_is_one_line() {
    let output = dsh(&["check", "--config", "cli/tests/fixtures/absent.toml"]);
    assert_status(&output, 1);
    let stderr = stderr(&output);
    assert!(
        stderr.starts_with("error: cannot read deployment"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

/// `dsh check` on a deployment written to a temp dir: the status, stdout
/// and stderr.
fn check_text(text: &str) -> std::process::Output {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("dsh.toml");
    std::fs::write(&path, text).expect("write the deployment");
    dsh(&["check", "--config", &path.display().to_string()])
}

const CHILD_HEAD: &str = "[adapter.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n\
     [tools.review]\nkind = \"subagent\"\nprovider = \"spawn\"\n\
     [tools.review.child]\npersona = \"You review on <<modle>>.\"\n";

/// A preset section with a bad reference, and an agent that joins the
/// preset and shadows that section with text of its own.
const SHADOWED_PRESET: &str = "[adapter.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n\
     [[presets.review.sections]]\nname = \"review:report\"\norder = 40\ntext = \"Report on <<modle>>.\"\n\
     [[agents]]\nid = \"reviewer\"\npreset = \"review\"\npersona = \"You review.\"\ntools = [\"read\"]\n\
     [[agents.sections]]\nname = \"review:report\"\ntext = \"Report on <<model>>.\"\n";

/// An agent whose own `agent:persona` section shadows its persona, with a
/// bad reference in the section.
const SHADOWING_PERSONA: &str = "[adapter.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n\
     [[agents]]\nid = \"solo\"\npersona = \"You work.\"\n\
     [[agents.sections]]\nname = \"agent:persona\"\ntext = \"You work on <<modle>>.\"\n";

/// An agent with a section whose name the registry rejects.
const BAD_SECTION_NAME: &str = "[adapter.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n\
     [[agents]]\nid = \"boss\"\npersona = \"You lead.\"\n\
     [[agents.sections]]\nname = \"Bad Name\"\norder = 5\ntext = \"Rules.\"\n";

/// Deployments written in the test that `dsh check` refuses: what stderr
/// says, and how many problems it reports where the case counts them.
#[test]
fn refused_texts_say_what_is_wrong_and_where() {
    let in_preset = "unknown variable `<<modle>>` in section `review:report` of preset `review`";
    let unjoined = SHADOWED_PRESET
        .split("[[agents.sections]]")
        .next()
        .expect("the agent")
        .replace("preset = \"review\"\n", "");
    let cases: [(&str, String, &[&str], Option<usize>); 7] = [
        // A child table that no agent lists is checked too, as the first
        // agent would start it.
        (
            "an unlisted child's persona is checked",
            format!(
                "{CHILD_HEAD}[[agents]]\nid = \"boss\"\npersona = \"You lead.\"\ntools = [\"bash\"]\n"
            ),
            &["unknown variable `<<modle>>` in the persona of agent `boss/review`"],
            None,
        ),
        // A child's provider is the instance's own: no other instance can
        // bind to it, and it is never listed among the providers.
        (
            "a child's provider is private to its instance",
            format!(
                "{}[tools.other]\nkind = \"subagent\"\nprovider = \"review\"\n\
                 [[agents]]\nid = \"boss\"\npersona = \"You lead.\"\ntools = [\"review\", \"other\"]\n",
                CHILD_HEAD.replace("<<modle>>", "<<model>>")
            ),
            &[
                "subagent tool `other` is bound to provider `review`, which is not registered",
                "(registered providers: `spawn`, `fork`)",
            ],
            None,
        ),
        // A child sees its parent's preset without the parent's own layer,
        // so a preset section every agent shadows still reaches a child's
        // prompt, and is checked there.
        (
            "a child sees what its parent's layer shadows",
            SHADOWED_PRESET.replace("tools = [\"read\"]", "tools = [\"read\", \"task\"]")
                + "[tools.task]\nkind = \"subagent\"\nprovider = \"spawn\"\n[tools.task.child]\n",
            &[in_preset],
            Some(1),
        ),
        // A preset no agent sees whole — one each agent that joins shadows
        // in part, or one no agent joins — is checked without an agent's
        // layer.
        (
            "a preset shadowed in part is checked whole",
            SHADOWED_PRESET.to_owned(),
            &[in_preset],
            Some(1),
        ),
        (
            "a preset no agent joins is checked whole",
            unjoined,
            &[in_preset],
            Some(1),
        ),
        // A layer's `agent:persona` renders in place of the persona, so its
        // problems are placed in it, not in the persona it shadows.
        (
            "a shadowed persona is not blamed",
            SHADOWING_PERSONA.to_owned(),
            &[
                "unknown variable `<<modle>>` in section `agent:persona` of agent `solo`",
                "dsh.toml:9:21]",
            ],
            None,
        ),
        // A section name the registry rejects is underlined at the name,
        // not at the text.
        (
            "an invalid section name points at the name",
            BAD_SECTION_NAME.to_owned(),
            &[
                "invalid section name `Bad Name`",
                "dsh.toml:8:8]",
                "this name",
            ],
            None,
        ),
    ];
    for (name, text, says, problems) in cases {
        let output = check_text(&text);
        let stderr = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{name}: {stderr}");
        for needle in says {
            assert!(
                stderr.contains(needle),
                "{name}: expected `{needle}` in:\n{stderr}"
            );
        }
        if let Some(count) = problems {
            assert_eq!(stderr.matches("  × ").count(), count, "{name}: {stderr}");
        }
    }
}

/// Deployments that pass once their problem is fixed, each with the end
/// of the summary `dsh check` prints.
#[test]
fn fixed_deployments_pass_with_their_summary() {
    let cases = [
        (
            "a child's persona that renders passes",
            fixture_text("child-persona.toml").replace("<<modle>>", "<<model>>"),
            "every prompt renders\n",
        ),
        (
            "the summary counts the children checked",
            format!(
                "{}[[agents]]\nid = \"boss\"\npersona = \"You lead.\"\ntools = [\"review\"]\n",
                CHILD_HEAD.replace("<<modle>>", "<<model>>")
            ),
            ": 1 agent and 1 child checked, every prompt renders\n",
        ),
        (
            "a preset checked whole passes once its section renders",
            SHADOWED_PRESET.replace("<<modle>>", "<<model>>"),
            ": 1 agent (1 preset) checked, every prompt renders\n",
        ),
        (
            "an agent within its token budget passes",
            fixture_text("over-token-budget.toml")
                .replace("max_prompt_tokens = 1000", "max_prompt_tokens = 1394"),
            "2 agents checked, every prompt renders\n",
        ),
    ];
    for (name, text, summary) in cases {
        let output = check_text(&text);
        assert_eq!(output.status.code(), Some(0), "{name}: {}", stderr(&output));
        let stdout = stdout(&output);
        let mut lines = stdout.lines();
        let (checked, sandbox) = (
            lines.next().expect("a summary"),
            lines.next().expect("a sandbox"),
        );
        assert!(
            format!("{checked}\n").ends_with(summary),
            "{name}: {stdout}"
        );
        assert!(
            sandbox.starts_with(
                "sandbox: workspace-write, network off (every socket but a local Unix pair \
                 refused); this kernel: enforced: "
            ),
            "{name}: {stdout}"
        );
        assert!(
            lines
                .next()
                .is_some_and(|line| line.starts_with("environment: ")),
            "{name}: {stdout}"
        );
    }
}

/// A deployment's layers: an unknown preset, a malformed tool order, a
/// shadow with nothing to shadow and no `order`, an unknown tool in a tool
/// order, and a bad reference in a deployment section — every one reported,
/// each at its key.
#[test]
fn layer_problems_point_at_their_keys() {
    check_fails(
        "layer-problems.toml",
        &[
            "tool `bash` is listed twice in the tool order (entries 1",
            "[cli/tests/fixtures/layer-problems.toml:9:43]",
            "agent `reviewer` joins preset `reveiw`, which the deployment does",
            "did you mean `review`? the presets are `review`",
            "the `tool_order` of agent `reviewer`: the tool order does not say",
        ],
    );
    // The checks that need the registry come once the file itself is good.
    let fixed = fixture_text("layer-problems.toml")
        .replace(
            "\"bash\", \"<unlisted-tools>\", \"bash\"",
            "\"bash\", \"<unlisted-tools>\"",
        )
        .replace("preset = \"reveiw\"", "preset = \"review\"")
        .replace(
            "tool_order = [\"read\"]",
            "tool_order = [\"read\", \"<unlisted-tools>\"]",
        );
    check_text_fails(
        &fixed,
        &[
            "the `tool_order` of the deployment: the tool order lists `raed` (entry",
            "did you mean `read`? the tools are `bash`, `edit`, `read`, `todo_write`, `write`",
            "section `review:report` of preset `review` shadows no section and",
            "section `tool:bsh` of agent `reviewer` shadows no section and",
            "did you mean `tool:bash`?",
        ],
    );
    // With those fixed too, the reference in the agent's own section is
    // found, at its place in the file.
    let fixed = fixed
        .replace("\"raed\"", "\"bash\"")
        .replace("name = \"tool:bsh\"", "name = \"tool:bash\"")
        .replace(
            "text = \"Report problems.\"",
            "order = 40\ntext = \"Report problems.\"",
        );
    check_text_fails(
        &fixed,
        &[
            "unknown variable `<<modle>>` in section `review:rules` of agent",
            "dsh.toml:30:14]",
            "did you mean `<<model>>`?",
        ],
    );
}

/// A help listing names wraps between them, never inside one: tool names
/// with hyphens were cut at a hyphen (`search-` / `the-project-docs-1`).
#[test]
fn a_help_listing_tool_names_never_cuts_one() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let instances: String = (0..8)
        .map(|at| {
            format!(
                "[tools.search-the-project-docs-{at}]\nkind = \"subagent\"\nprovider = \"spawn\"\n"
            )
        })
        .collect();
    let config = common::config(
        dir.path(),
        &format!(
            "[adapter.scripted]\nanswers = \"a.toml\"\nmodel = \"m\"\n{instances}\
             [[agents]]\nid = \"a\"\ntools = [\"search-the-project-docs-9\"]\npersona = \"Hi.\"\n"
        ),
    );
    common::write(&dir.path().join("a.toml"), "answers = []\n");
    let output = common::dsh(&["check", "--config", &config]);
    let stderr = common::assert_fails_saying(&output, "unknown tool");
    for at in 0..8 {
        let name = format!("`search-the-project-docs-{at}`");
        assert!(stderr.contains(&name), "{name} cut in:\n{stderr}");
    }
}
