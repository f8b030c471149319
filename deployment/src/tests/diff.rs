//! `diff` through its public API: the prefix of a real deployment, read
//! back from its JSON as a dump is, and the comparison's rules on prefixes
//! that differ in one fact each.

use std::path::Path;

use dsh_agent_loop::{Encoding, Tokenizer};

use crate::reports::agent_prompt::{AgentPrompt, ServerStart};
use crate::reports::diff::{
    Change, DUMP_FORMAT_VERSION, Prefix, PrefixSection, SessionDirectory, Side, SideOptions,
    SourceKind, Threshold, compare, read_sides, write_dump,
};

/// The prefix of the example `examples/<name>`'s first agent, in `/`.
fn example(name: &str) -> (AgentPrompt, Prefix) {
    let config = super::workspace().join("examples").join(name);
    let shown = AgentPrompt::load(
        Some(&config),
        None,
        Some(Path::new("/")),
        ServerStart::Leave,
    )
    .unwrap_or_else(|problems| panic!("{name}: {}", problems[0].message()));
    let prefix = Prefix::of(&shown, None)
        .unwrap_or_else(|problems| panic!("{name}: {}", problems[0].message()));
    (shown, prefix)
}

fn side(prefix: &Prefix) -> Side {
    Side {
        path: "side".to_owned(),
        kind: SourceKind::Dump,
        prefix: prefix.clone(),
        server_failures: Vec::new(),
    }
}

#[test]
fn a_prefix_reads_back_from_its_json_whole() {
    let (_, prefix) = example("coding-agent/dsh.toml");
    let json = serde_json::to_string_pretty(&prefix).expect("JSON");
    let read: Prefix = serde_json::from_str(&json).expect("it reads back");
    assert_eq!(read, prefix);
    // Its places are the system prompt's, and its parts add up.
    let texts: Vec<&str> = prefix.sections.iter().map(|s| prefix.text_of(s)).collect();
    assert_eq!(texts.join("\n\n"), prefix.system_prompt);
    let tokens: usize = prefix.sections.iter().map(|section| section.tokens).sum();
    assert!(tokens <= prefix.system_tokens);
}

/// The dump this dsh writes is the one it reads: a deployment's dump
/// reads back as a side whose prefix is the deployment's, its version
/// first, and a dump of another version is refused at its version.
#[test]
fn a_dump_reads_back_as_the_prefix_it_was_written_from() {
    let (shown, prefix) = example("coding-agent/dsh.toml");
    let dump = write_dump(&shown, &shown.assemble())
        .unwrap_or_else(|problems| panic!("{}", problems[0].message()));
    assert!(
        dump.starts_with(&format!(
            "{{\n  \"format_version\": {DUMP_FORMAT_VERSION},\n"
        )),
        "{dump}"
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("dump.json");
    std::fs::write(&path, &dump).expect("the dump written");
    let options = SideOptions {
        agent: None,
        cwd: SessionDirectory::Else(dir.path().to_owned()),
        mcp: ServerStart::Leave,
    };
    let (old, new) = read_sides(&path, &path, &options)
        .unwrap_or_else(|problems| panic!("{}", problems[0].message()));
    assert_eq!((old.kind, new.kind), (SourceKind::Dump, SourceKind::Dump));
    assert_eq!(new.prefix, prefix);

    let older = dump.replacen(
        &format!("\"format_version\": {DUMP_FORMAT_VERSION}"),
        "\"format_version\": 0",
        1,
    );
    std::fs::write(&path, older).expect("the dump written");
    let problems = read_sides(&path, &path, &options).expect_err("another version");
    assert!(
        problems[0].message().ends_with(&format!(
            "is a dump of format version 0; this dsh reads version {DUMP_FORMAT_VERSION}"
        )),
        "{}",
        problems[0].message()
    );
}

/// The persona's text is the deployment's fact: its owner is the file
/// and the line the persona is written at, not the agent loop's function.
#[test]
fn the_persona_is_owned_by_its_place_in_the_file() {
    let (shown, prefix) = example("prompt-change/old.toml");
    let persona = &prefix.sections[0];
    assert_eq!(persona.name, "agent:persona");
    assert_eq!(persona.owner.krate, "deployment");
    assert_eq!(persona.owner.file, shown.deployment.file.name());
    let (line, _) = shown
        .deployment
        .file
        .position(shown.agent.persona.span().start);
    assert_eq!(persona.owner.line as usize, line);
    assert_eq!(persona.variables, ["model"]);
    let task = prefix
        .tools
        .iter()
        .find(|tool| tool.name == "task")
        .expect("task");
    assert_eq!(
        task.owner.as_ref().map(|owner| owner.item.as_str()),
        Some("tools.task")
    );
    let read = prefix
        .tools
        .iter()
        .find(|tool| tool.name == "read")
        .expect("read");
    assert_eq!(read.owner, None, "a built-in tool");
}

/// Counted again with another encoding, a prefix's counts are that
/// encoding's, as `explain` would count them.
#[test]
fn a_prefix_counted_with_another_tokenizer() {
    let (_, prefix) = example("coding-agent/dsh.toml");
    assert_eq!(prefix.tokenizer, "o200k_base");
    let cl100k = Tokenizer::configured(Encoding::Cl100kBase);
    let recounted = prefix.clone().counted_with(cl100k);
    assert_eq!(recounted.tokenizer, "cl100k_base");
    assert_eq!(recounted.system_tokens, cl100k.count(&prefix.system_prompt));
    assert_ne!(recounted.tools_size().tokens, prefix.tools_size().tokens);
    assert_eq!(recounted.system_prompt, prefix.system_prompt);
}

/// A prefix of sections `(name, order, text)`, joined as a render joins
/// them, without tools.
fn prefix_of(sections: &[(&str, i32, &str)]) -> Prefix {
    let (_, mut prefix) = example("coding-agent/dsh.toml");
    prefix.tools.clear();
    prefix.sections.clear();
    prefix.system_prompt.clear();
    for (name, order, text) in sections {
        if !prefix.system_prompt.is_empty() {
            prefix.system_prompt.push_str("\n\n");
        }
        let start = prefix.system_prompt.len();
        prefix.system_prompt.push_str(text);
        prefix.sections.push(PrefixSection {
            name: (*name).to_owned(),
            order: *order,
            owner: prefix_owner(),
            tool: None,
            template: (*text).to_owned(),
            variables: Vec::new(),
            start,
            end: prefix.system_prompt.len(),
            tokens: 0,
        });
    }
    prefix.tokenizer = "none yet".to_owned();
    prefix.counted_with(Tokenizer::configured(Encoding::O200kBase))
}

fn prefix_owner() -> crate::reports::diff::PartOwner {
    crate::reports::diff::PartOwner {
        krate: "deployment".to_owned(),
        item: "a section".to_owned(),
        file: "dsh.toml".to_owned(),
        line: 1,
    }
}

/// A section whose order changed moved; the sections it passed, whose
/// order did not, did not move.
#[test]
fn only_a_section_whose_order_changed_moves() {
    let old = prefix_of(&[
        ("a", 0, "You are A."),
        ("x", 50, "Say X."),
        ("r", 100, "Read."),
    ]);
    let new = prefix_of(&[
        ("a", 0, "You are A."),
        ("r", 100, "Read."),
        ("x", 150, "Say X."),
    ]);
    let diff = compare(&side(&old), &side(&new), 10);
    let changes: Vec<(&str, Change)> = (diff.sections.changes.iter())
        .map(|change| (change.name.as_str(), change.change))
        .collect();
    assert_eq!(changes, [("x", Change::Moved)]);
    assert_eq!(diff.sections.unchanged, 2);
    let cache = diff.cache.expect("a break");
    assert_eq!(cache.byte, "You are A.\n\n".len());
    assert_eq!(cache.section.as_deref(), Some("r"));
}

/// The tokens before the break are those of the prefix before its first
/// differing byte; the rest of the new prefix is lost; the estimate
/// prices both.
#[test]
fn a_break_keeps_the_tokens_before_it_and_prices_the_rest() {
    let old = prefix_of(&[
        ("a", 0, "You are A, a careful reviewer."),
        ("b", 1, "Be brief."),
    ]);
    let new = prefix_of(&[
        ("a", 0, "You are A, a careful reviewer."),
        ("b", 1, "Be very brief."),
    ]);
    let diff = compare(&side(&old), &side(&new), 10);
    let cache = diff.cache.as_ref().expect("a break");
    let kept_text = "You are A, a careful reviewer.\n\nBe ";
    assert_eq!(cache.byte, kept_text.len());
    assert_eq!(cache.section.as_deref(), Some("b"));
    let o200k = Tokenizer::configured(Encoding::O200kBase);
    assert_eq!(cache.kept.tokens, o200k.count(kept_text));
    assert_eq!(cache.kept.tokens + cache.lost.tokens, new.system_tokens);
    let anthropic = &cache.estimate.pricings[0];
    let (kept, lost) = (cache.kept.tokens as u64, cache.lost.tokens as u64);
    assert_eq!(anthropic.first_request.new.0, kept * 10 + lost * 125);
    assert_eq!(
        anthropic.session.new.0,
        kept * 10 + lost * 125 + 9 * (kept + lost) * 10
    );
    assert_eq!(anthropic.session.old.0, 10 * old.system_tokens as u64 * 10);
    // Before the section that changed: not before `b`, but before 100
    // tokens; an unknown section is a problem that names the known ones.
    let before = |threshold: &str| {
        let threshold: Threshold = threshold.parse().expect("any text");
        threshold.is_crossed(Some(cache), &new)
    };
    assert_eq!(before("b").ok(), Some(false));
    assert_eq!(before("100").ok(), Some(true));
    assert_eq!(before("2").ok(), Some(false));
    let unknown = before("c").expect_err("no section `c`");
    assert!(unknown.message().contains("no section `c`"), "{unknown}");
}

#[test]
fn the_same_prefix_is_the_same() {
    let (_, prefix) = example("coding-agent/dsh.toml");
    let diff = compare(&side(&prefix), &side(&prefix), 10);
    assert!(diff.same);
    assert_eq!(diff.cache, None);
    assert!(diff.sections.changes.is_empty() && diff.tools.changes.is_empty());
}
