//! One fact, one owner — checked by `dsh check`: a warning for each pair
//! of owners of an agent's prompt that state the same sentences, however
//! many. Core finds the
//! sentences (`repeated_sentences`); this module says who the owners are
//! — the persona, every section, every instruction file, every tool's
//! description — and points into the deployment file where an owner is
//! written there.

use std::collections::HashSet;
use std::ops::Range;

use dsh_system_prompt::{PromptAssembly, RepeatedSentence, repeated_sentences};
use toml::Spanned;

use crate::facts::instructions::Instructions;
use crate::facts::rules::Applies;
use crate::file::{AgentSpec, Deployment};
use crate::problem::Problem;

/// Who states a text, as the warning names it, and where the deployment
/// writes it (when it does).
#[derive(Clone)]
struct Stated<'d> {
    /// "the persona of agent `coder`", "instruction file `/p/AGENTS.md`".
    who: String,
    /// The deployment's string that holds the text, when it does.
    written: Option<&'d Spanned<String>>,
    /// Whether it is a tool's description.
    tool: bool,
}

/// Whether two texts have the same owner. Tool descriptions are compared
/// with every other owner, not with each other: instances of one tool
/// crate (`task` and `fork`, both the subagent tool) describe themselves
/// from the same sentences, one owner speaking for each instance, and a
/// tool's schema does not say which crate it is from.
impl PartialEq for Stated<'_> {
    fn eq(&self, other: &Self) -> bool {
        (self.tool && other.tool) || self.who == other.who
    }
}

/// Every owner's text in the prompt of `agent`: the sections (an
/// instruction file's as the file says it; the deployment's as written),
/// then the tools' descriptions, then the path rules (which reach the
/// model after a call's result, in the same conversation). A new kind of owner whose text is not a
/// section joins the check with one more `extend` here.
fn stated<'d>(
    deployment: &'d Deployment,
    agent: &'d AgentSpec,
    assembly: &'d PromptAssembly,
    instructions: &'d Instructions,
) -> Vec<(Stated<'d>, &'d str)> {
    let mut texts = Vec::new();
    texts.extend(assembly.sections.iter().map(|section| {
        let name = section.name().as_str();
        if let Some(file) = instructions.file(name) {
            let who = format!("instruction file `{}`", file.path.display());
            let stated = Stated {
                who,
                written: None,
                tool: false,
            };
            return (stated, file.text.as_str());
        }
        match agent.deployment_text(deployment, name) {
            Some((who, text)) => (
                Stated {
                    who,
                    written: Some(text),
                    tool: false,
                },
                text.get_ref().as_str(),
            ),
            None => {
                let owner = section.owner();
                let who = format!("section `{name}` of {}", owner.krate);
                let stated = Stated {
                    who,
                    written: None,
                    tool: false,
                };
                (stated, section.text().as_ref())
            }
        }
    }));
    texts.extend(assembly.tools.iter().map(|tool| {
        let who = format!("the description of tool `{}`", tool.name);
        let stated = Stated {
            who,
            written: None,
            tool: true,
        };
        (stated, tool.description.as_str())
    }));
    let path_rules = (instructions.rules().all().iter())
        .filter(|rule| matches!(rule.applies, Applies::Paths(_) | Applies::Under(_)));
    texts.extend(path_rules.map(|rule| {
        let who = format!("path rule `{}`", rule.path.display());
        let stated = Stated {
            who,
            written: None,
            tool: false,
        };
        (stated, rule.text.as_str())
    }));
    texts
}

/// How many repeated sentences a warning quotes.
const EXAMPLES: usize = 2;

/// A warning for each pair of owners of `agent`'s prompt that state the
/// same sentences (one for the pair, however many: a file repeated whole
/// in another is one finding, not one per sentence), quoting the first
/// one or two; except the sentences in `seen` (reported already for
/// another agent), which it extends.
pub(crate) fn warnings(
    deployment: &Deployment,
    agent: &AgentSpec,
    assembly: &PromptAssembly,
    instructions: &Instructions,
    seen: &mut HashSet<(String, String, String)>,
) -> Vec<Problem> {
    let texts = stated(deployment, agent, assembly, instructions);
    let mut pairs: Vec<Vec<RepeatedSentence<Stated<'_>>>> = Vec::new();
    for repeated in repeated_sentences(texts.iter().map(|(who, text)| (who.clone(), *text))) {
        let key = (
            repeated.normalized.clone(),
            repeated.first.0.who.clone(),
            repeated.second.0.who.clone(),
        );
        if !seen.insert(key) {
            continue;
        }
        let same_pair = |group: &&mut Vec<RepeatedSentence<Stated<'_>>>| {
            group[0].first.0.who == repeated.first.0.who
                && group[0].second.0.who == repeated.second.0.who
        };
        match pairs.iter_mut().find(same_pair) {
            Some(group) => group.push(repeated),
            None => pairs.push(vec![repeated]),
        }
    }
    pairs
        .iter()
        .map(|group| pair_warning(deployment, &texts, group))
        .collect()
}

/// The warning of one pair of owners that state the sentences of `group`
/// (never empty), pointing into the deployment file at the examples it
/// quotes, where an owner is written there.
fn pair_warning(
    deployment: &Deployment,
    texts: &[(Stated<'_>, &str)],
    group: &[RepeatedSentence<Stated<'_>>],
) -> Problem {
    let quote = |stated: &Stated<'_>, at: &Range<usize>, normalized: &str| -> String {
        let text = texts
            .iter()
            .find(|(who, _)| who.who == stated.who)
            .map_or("", |(_, text)| text);
        text.get(at.clone())
            .unwrap_or(normalized)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (first, second) = (&group[0].first.0, &group[0].second.0);
    let examples: Vec<String> = group
        .iter()
        .take(EXAMPLES)
        .map(|repeated| {
            let (stated, at) = &repeated.first;
            format!("\"{}\"", quote(stated, at, &repeated.normalized))
        })
        .collect();
    let message = match group.len() {
        1 => format!(
            "the same sentence is stated by {} and by {}: {}",
            first.who, second.who, examples[0]
        ),
        count => format!(
            "{count} sentences of {} are repeated in {}, such as {}",
            first.who,
            second.who,
            examples.join(" and ")
        ),
    };
    let mut problem = Problem::new(message.clone());
    let mut labelled = false;
    for repeated in group.iter().take(EXAMPLES) {
        for (stated, at) in [&repeated.first, &repeated.second] {
            if let Some(text) = stated.written {
                let span = crate::file::string_file_range(&deployment.file, text, at.clone());
                problem = if labelled {
                    problem.label(span, "and here")
                } else {
                    deployment
                        .file
                        .problem(message.clone())
                        .label(span, "stated here")
                };
                labelled = true;
            }
        }
    }
    problem
        .help(
            "one fact, one owner: keep the sentence where it belongs (what a tool does in its \
             description, a habit with its tool, a project's convention in its AGENTS.md, the \
             agent's identity in its persona) and remove the other",
        )
        .warning()
}
