//! `dsh check`: load the deployment, render the prompt of every agent, of
//! every child it spawns and of every preset, and report every problem found — also an
//! agent whose prompt and tools take more tokens than its
//! `max_prompt_tokens`.

use std::collections::HashSet;

use dsh_system_prompt::{PromptAssembly, check_prompt, render_prompt_with_spans};
use toml::Spanned;

use crate::adapter::{self, Purpose};
use crate::args::CheckArgs;
use crate::commands::{Outcome, print, session_cwd};
use crate::config::{AgentSpec, Deployment};
use crate::diagnostics::Problem;
use crate::prompt_problems::prompt_problems;
use crate::prompt_tokens::{Part, PromptTokens};
use crate::runtime::{self, Runtime};

/// How many of the largest parts an over-budget agent's problem names.
const LARGEST_PARTS: usize = 5;

pub(crate) fn run(args: &CheckArgs) -> Outcome {
    let deployment = runtime::load(args.deployment.config.as_deref())?;
    let runtime = Runtime::new(&deployment)?;
    let cwd = session_cwd(&args.cwd)?;
    let mut problems = Vec::new();
    if let Err(problem) = adapter::build(&deployment, Purpose::Check) {
        problems.push(problem);
    }
    let agents = agents_to_check(&deployment);
    for agent in &agents {
        let assembly = runtime.assemble(agent, cwd.as_deref());
        // One pass finds every problem of every section; it fails exactly
        // when the render would.
        if let Err(errors) = check_prompt(&assembly) {
            problems.extend(prompt_problems(&deployment, agent, &errors));
        } else if let Some(problem) = over_budget(&deployment, agent, &assembly) {
            problems.push(problem);
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let presets = deployment.presets.len();
    let children = agents.len() - deployment.agents.len() - unjoined_presets(&deployment).count();
    let agents = deployment.agents.len();
    let plural = |count: usize, one: &str, many: &str| {
        format!("{count} {}", if count == 1 { one } else { many })
    };
    let checked = match children {
        0 => plural(agents, "agent", "agents"),
        _ => format!(
            "{} and {}",
            plural(agents, "agent", "agents"),
            plural(children, "child", "children")
        ),
    };
    let checked = match presets {
        0 => checked,
        _ => format!("{checked} ({})", plural(presets, "preset", "presets")),
    };
    print(&format!(
        "{}: {checked} checked, every prompt renders\n",
        deployment.file.name(),
    ))
}

/// The problem of an agent whose system prompt and tool schemas take more
/// tokens than its `max_prompt_tokens`, at that key, naming the largest
/// parts; `None` within the budget, or without one. Only a prompt that
/// renders is counted.
fn over_budget(
    deployment: &Deployment,
    agent: &AgentSpec,
    assembly: &PromptAssembly,
) -> Option<Problem> {
    let budget = agent.max_prompt_tokens.as_ref()?;
    let prompt = render_prompt_with_spans(assembly).ok()?;
    let tokenizer = deployment.tokenizer_for(agent);
    let tokens = PromptTokens::count(tokenizer, &prompt, &assembly.tools);
    let limit = *budget.get_ref();
    let total = tokens.total();
    if u64::try_from(total).is_ok_and(|total| total <= limit) {
        return None;
    }
    let largest: Vec<String> = tokens
        .largest(&prompt, &assembly.tools, LARGEST_PARTS)
        .into_iter()
        .map(|(part, tokens)| match part {
            Part::Section(name) => format!("section `{name}` {tokens}"),
            Part::ToolSchema(name) => format!("tool schema `{name}` {tokens}"),
        })
        .collect();
    Some(
        deployment
            .file
            .problem(format!(
                "agent `{}` sends {total} tokens before any message, over its `max_prompt_tokens` \
                 of {limit}: {} in the system prompt and {} in the tools' schemas (counted with {})",
                agent.id.get_ref(),
                tokens.system,
                tokens.tools_total(),
                tokenizer.encoding(),
            ))
            .label(budget.span(), format!("{limit} tokens at most"))
            .help(format!(
                "the largest parts, in tokens: {}; shorten them, give the agent fewer tools, \
                 or raise `max_prompt_tokens`",
                largest.join(", ")
            )),
    )
}

/// Every agent, then every child whose prompt can differ from its parent's
/// (a persona or tools of its own), once: as each agent that lists its
/// instance starts it, and a child table that no agent lists as the first
/// agent would start it, so that no child persona goes unchecked.
fn agents_to_check(deployment: &Deployment) -> Vec<AgentSpec> {
    let mut agents = deployment.agents.clone();
    let mut seen = HashSet::new();
    let mut add = |parent: &AgentSpec, child: AgentSpec| {
        let names = |agent: &AgentSpec| -> Vec<String> {
            agent
                .tools
                .iter()
                .map(|tool| tool.get_ref().clone())
                .collect()
        };
        let differs =
            child.persona.span() != parent.persona.span() || names(&child) != names(parent);
        if differs && seen.insert((child.persona.span().start, names(&child))) {
            agents.push(child);
        }
    };
    for parent in &deployment.agents {
        for child in deployment.children_of(parent) {
            add(parent, child);
        }
    }
    if let Some(first) = deployment.agents.first() {
        let listed: HashSet<&str> = deployment
            .agents
            .iter()
            .flat_map(|agent| agent.tools.iter().map(|tool| tool.get_ref().as_str()))
            .collect();
        for name in deployment.tools.keys() {
            if !listed.contains(name.as_str())
                && let Some(child) = deployment.child(first, name)
            {
                add(first, child);
            }
        }
        // A preset no agent joins is checked as the first agent would run
        // if it joined it, so that none of its sections goes unchecked.
        for preset in unjoined_presets(deployment) {
            let mut joined = first.clone();
            joined.preset = Some(Spanned::new(first.id.span(), preset.to_owned()));
            agents.push(joined);
        }
    }
    agents
}

/// The presets that no agent joins.
fn unjoined_presets(deployment: &Deployment) -> impl Iterator<Item = &str> + '_ {
    deployment
        .presets
        .keys()
        .map(String::as_str)
        .filter(|preset| {
            !deployment.agents.iter().any(|agent| {
                agent
                    .preset
                    .as_ref()
                    .is_some_and(|own| own.get_ref() == preset)
            })
        })
}
