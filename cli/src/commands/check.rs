//! `dsh check`: load the deployment, render the prompt of every agent, of
//! every child it spawns and of every preset, and report every problem found — also an
//! agent whose prompt and tools take more tokens than its
//! `max_prompt_tokens`.

use std::collections::HashSet;

use dsh_system_prompt::inspect::{RenderedPrompt, render_prompt_with_spans};
use dsh_system_prompt::{PromptAssembly, render_context};
use toml::Spanned;

use crate::args::CheckArgs;
use crate::commands::{Outcome, print, session_cwd};
use dsh_deployment::adapter::{self, Purpose};
use dsh_deployment::check::duplicate_sentences;
use dsh_deployment::check::instruction_report;
use dsh_deployment::check::prompt_problems::prompt_problems;
use dsh_deployment::file::{AgentSpec, Deployment, LayerSpec};
use dsh_deployment::measure::tokens::{Part, PromptTokens};
use dsh_deployment::runtime::{self, Runtime};
use {crate::diagnostics::Reporter, dsh_deployment::Problem};

/// How many of the largest parts an over-budget agent's problem names.
const LARGEST_PARTS: usize = 5;

pub(crate) fn run(args: &CheckArgs) -> Outcome {
    let deployment = runtime::load(args.deployment.config.as_deref())?;
    let runtime = Runtime::new(&deployment)?;
    let cwd = session_cwd(&args.cwd)?;
    let started = runtime.start_session(cwd.as_deref())?;
    let found = started.instructions.found();
    // Warnings are reported and do not fail the check.
    let mut warnings = instruction_report::cut_warnings(found, &runtime.instructions);
    let mut repeated = HashSet::new();
    let mut problems = Vec::new();
    if let Err(problem) = adapter::build(&deployment, Purpose::Check) {
        problems.push(problem);
    }
    // The servers' tools and instructions are part of what is checked
    // (and of `max_prompt_tokens`); they run until the check ends.
    let mcp = (!args.no_mcp && !deployment.mcp.is_empty())
        .then(|| super::check_mcp::start(&deployment, &runtime, &mut problems))
        .transpose()?;
    let mut agents = agents_to_check(&deployment);
    let children = agents.len() - deployment.agents.len();
    agents.extend(preset_checks(&deployment, &agents));
    for agent in &agents {
        let assembly = runtime.assemble(agent, &started);
        // A failed render reports every problem of every section; the
        // contexts' come after the prompt's.
        let context = render_context(&assembly).err().into_iter().flatten();
        match render_prompt_with_spans(&assembly) {
            Ok(prompt) => {
                let context: Vec<_> = context.collect();
                problems.extend(prompt_problems(&deployment, agent, &context));
                if context.is_empty()
                    && let Some(problem) = over_budget(&deployment, agent, &assembly, &prompt)
                {
                    problems.push(problem);
                }
            }
            Err(mut errors) => {
                errors.extend(context);
                problems.extend(prompt_problems(&deployment, agent, &errors));
            }
        }
        warnings.extend(duplicate_sentences::warnings(
            &deployment,
            agent,
            &assembly,
            found,
            &mut repeated,
        ));
    }
    if !warnings.is_empty() {
        Reporter::for_stderr().report(&warnings);
    }
    if let Some(tokio) = mcp {
        tokio.block_on(runtime.mcp.shutdown());
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let presets = deployment.presets.len();
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
/// parts; `None` within the budget, or without one.
fn over_budget(
    deployment: &Deployment,
    agent: &AgentSpec,
    assembly: &PromptAssembly,
    prompt: &RenderedPrompt,
) -> Option<Problem> {
    let budget = agent.max_prompt_tokens.as_ref()?;
    let tokenizer = deployment.tokenizer_for(agent);
    let tokens = PromptTokens::count(tokenizer, prompt, &assembly.tools);
    let limit = *budget.get_ref();
    let total = tokens.total();
    if u64::try_from(total).is_ok_and(|total| total <= limit) {
        return None;
    }
    let largest: Vec<String> = tokens
        .largest(prompt, &assembly.tools, LARGEST_PARTS)
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
/// (a persona or tools of its own, or a parent whose own layer shadows
/// what the child sees from the preset and the global layer), once: as
/// each agent that lists its instance starts it, and a child table that no
/// agent lists as the first agent would start it, so that no child persona
/// goes unchecked.
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
        let differs = !parent.layer.is_empty()
            || child.persona.span() != parent.persona.span()
            || names(&child) != names(parent);
        let key = (
            child.persona.span().start,
            names(&child),
            child.preset.as_ref().map(|preset| preset.get_ref().clone()),
        );
        if differs && seen.insert(key) {
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
    }
    agents
}

/// The agents that check what `checked` leaves out of each preset: a
/// preset no checked agent sees without a layer of its own in front (no
/// agent joins it, or each that does shadows some of its sections) is
/// checked once as the first agent's persona and tools would see it,
/// without that agent's layer, so that none of its sections goes unchecked.
fn preset_checks(deployment: &Deployment, checked: &[AgentSpec]) -> Vec<AgentSpec> {
    let Some(first) = deployment.agents.first() else {
        return Vec::new();
    };
    let seen_whole = |preset: &str| {
        checked.iter().any(|agent| {
            agent.layer.is_empty()
                && agent
                    .preset
                    .as_ref()
                    .is_some_and(|own| own.get_ref() == preset)
        })
    };
    deployment
        .presets
        .keys()
        .filter(|preset| !seen_whole(preset))
        .map(|preset| AgentSpec {
            // An id no agent has (ids have no `/`), so no agent's layer is
            // in front of the preset's.
            id: Spanned::new(
                first.id.span(),
                format!("{}/preset:{preset}", first.id.get_ref()),
            ),
            preset: Some(Spanned::new(first.id.span(), preset.clone())),
            layer: LayerSpec::default(),
            max_prompt_tokens: None,
            ..first.clone()
        })
        .collect()
}
