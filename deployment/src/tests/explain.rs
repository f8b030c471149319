//! `explain` through its public API: an explanation's parts add up to
//! the prompt it explains, say why a section is not in it and which
//! layer gave each one, and agree with the dump on every fact both say.

use std::path::Path;

use crate::reports::agent_prompt::{AgentPrompt, ServerStart};
use crate::reports::diff::write_dump;
use crate::reports::explain::{Explanation, Share, WhyNot};

/// The agent `agent` of the example `examples/<name>`, in `/`.
fn example(name: &str, agent: &str) -> AgentPrompt {
    let config = super::workspace().join("examples").join(name);
    AgentPrompt::load(
        Some(&config),
        Some(agent),
        Some(Path::new("/")),
        ServerStart::Leave,
    )
    .unwrap_or_else(|problems| panic!("{name}: {}", problems[0].message()))
}

fn explained<'a>(shown: &'a AgentPrompt) -> Explanation<'a> {
    Explanation::new(shown, &shown.assemble())
        .unwrap_or_else(|problems| panic!("{}", problems[0].message()))
}

#[test]
fn the_parts_add_up_to_the_prompt() {
    let shown = example("review-team/dsh.toml", "reviewer");
    let explained = explained(&shown);
    let prompt = shown.render().expect("the prompt renders");
    let rendered: Vec<_> = (explained.sections.iter())
        .filter_map(|section| section.rendered.as_ref().ok())
        .collect();
    assert_eq!(rendered.len(), explained.rendered_sections());
    let bytes: usize = rendered.iter().map(|part| part.size.bytes).sum();
    let tokens: usize = rendered.iter().map(|part| part.size.tokens).sum();
    assert_eq!(explained.prompt.size.bytes, prompt.len());
    assert_eq!(
        bytes + explained.separators.rendered.size.bytes,
        prompt.len()
    );
    assert_eq!(
        tokens + explained.separators.rendered.size.tokens,
        explained.prompt.size.tokens
    );
    assert_eq!(explained.prompt.share, Share::of(1, 1));
    assert_eq!(
        explained.before_any_message().tokens,
        explained.prompt.size.tokens + explained.tools_size().tokens
    );
}

#[test]
fn a_section_not_rendered_says_why() {
    let shown = example("review-team/dsh.toml", "reviewer");
    let explained = explained(&shown);
    let why = |name: &str| {
        (explained.sections.iter())
            .find(|section| section.name == name)
            .unwrap_or_else(|| panic!("no section `{name}`"))
            .rendered
            .clone()
            .err()
    };
    assert_eq!(
        why("tool:write"),
        Some(WhyNot::ToolMissing {
            tool: "write".to_owned()
        })
    );
    assert_eq!(
        why("compaction:instruction"),
        Some(WhyNot::CompactionPrompt)
    );
    assert_eq!(why("tool:read"), None);
}

#[test]
fn each_section_a_layer_gives_names_the_layer_and_what_it_shadows() {
    let shown = example("review-team/dsh.toml", "reviewer");
    let layers = explained(&shown).layers;
    assert_eq!(layers.chain, "global → preset:review → agent:reviewer");
    let bash = (layers.sections.iter())
        .find(|row| row.section == "tool:bash")
        .expect("the reviewer's own `tool:bash`");
    assert_eq!(bash.layer, "agent:reviewer");
    assert_eq!(bash.owner.krate, "deployment");
    let shadowed: Vec<(&str, &str)> = (bash.shadows.iter())
        .map(|(layer, owner)| (layer.as_str(), owner.krate.as_str()))
        .collect();
    assert_eq!(shadowed, [("global", "dsh-tool-bash")]);
}

/// One owner per fact: what the dump and the explanation both say, they
/// say alike.
#[test]
fn the_explanation_and_the_dump_agree() {
    let shown = example("coding-agent/dsh.toml", "coder");
    let explained = explained(&shown);
    let dump = write_dump(&shown, &shown.assemble())
        .unwrap_or_else(|problems| panic!("{}", problems[0].message()));
    let dump: serde_json::Value = serde_json::from_str(&dump).expect("the dump is JSON");
    let tokens = &dump["tokens"];
    let origin = &explained.agent.tokenizer;
    assert_eq!(tokens["tokenizer"], origin.encoding.name());
    assert_eq!(tokens["tokenizer_choice"], origin.choice_name());
    assert_eq!(tokens["system_prompt"], explained.prompt.size.tokens);
    assert_eq!(
        tokens["separators"],
        explained.separators.rendered.size.tokens
    );
    assert_eq!(tokens["total"], explained.before_any_message().tokens);
    let sections: Vec<serde_json::Value> = (explained.sections.iter())
        .filter_map(|section| {
            let rendered = section.rendered.as_ref().ok()?;
            Some(serde_json::json!({"name": section.name, "tokens": rendered.size.tokens}))
        })
        .collect();
    assert_eq!(tokens["sections"], serde_json::Value::Array(sections));
    let files = dump["instructions"]["files"].as_array().expect("files");
    assert_eq!(files.len(), explained.instructions.files.len());
}
