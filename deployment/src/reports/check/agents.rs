//! `dsh check`'s findings, as data: every agent, every child it spawns
//! and every preset rendered, each problem located in the file, and the
//! warnings that do not fail a check.

use std::collections::HashSet;
use std::path::Path;

use dsh_system_prompt::inspect::{RenderedPrompt, render_prompt_with_spans};
use dsh_system_prompt::{PromptAssembly, render_context};
use toml::Spanned;

use super::{duplicate_sentences, instruction_report, tools, window};
use crate::adapter::{self, Purpose};
use crate::file::{AgentSpec, Deployment, LayerSpec, prompt_problems};
use crate::measure::tokens::{Part, PromptTokens};
use crate::problem::Problem;
use crate::runtime::mcp::{Which, start_for_command};
use crate::runtime::{Runtime, StartedSession};

/// How many of the largest parts an over-budget agent's problem names.
const LARGEST_PARTS: usize = 5;

/// What a check of a deployment found.
#[derive(Debug, Default)]
pub struct Findings {
    /// What fails the check: an agent whose prompt does not render, an
    /// adapter that cannot be built, a server that fails, a prompt over
    /// its budget.
    pub problems: Vec<Problem>,
    /// What is said and does not fail it: cut instruction files,
    /// sentences two owners state.
    pub warnings: Vec<Problem>,
    /// The agents checked.
    pub agents: usize,
    /// The children checked beside them.
    pub children: usize,
    /// The deployment's presets.
    pub presets: usize,
    /// Each MCP server of the deployment, started or not, in the
    /// deployment's order (its tables by name); none with `--no-mcp`.
    pub servers: Vec<super::ServerReport>,
}

impl Findings {
    /// What `dsh check --format json` prints: whether the check passed,
    /// the counts, and each MCP server's report.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "ok": self.problems.is_empty(),
            "agents": self.agents,
            "children": self.children,
            "presets": self.presets,
            "problems": self.problems.len(),
            "warnings": self.warnings.len(),
            "mcp_servers": self.servers,
        })
    }

    /// What was checked, in words: `2 agents and 1 child (1 preset)`.
    pub fn checked(&self) -> String {
        let plural = |count: usize, one: &str, many: &str| {
            format!("{count} {}", if count == 1 { one } else { many })
        };
        let agents = plural(self.agents, "agent", "agents");
        let checked = match self.children {
            0 => agents,
            children => format!("{agents} and {}", plural(children, "child", "children")),
        };
        match self.presets {
            0 => checked,
            presets => format!("{checked} ({})", plural(presets, "preset", "presets")),
        }
    }
}

/// Whether a check starts the deployment's MCP servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WithServers {
    /// Start every server: their tools and instructions are checked too,
    /// and each that fails is a problem.
    Yes,
    /// Leave them unstarted (`--no-mcp`).
    No,
}

/// Checks `deployment` for a session in `cwd`: its adapter (without
/// reading the API key), its servers, and the prompt of every agent,
/// child and preset.
pub fn check_deployment(
    deployment: &Deployment,
    runtime: &Runtime,
    cwd: Option<&Path>,
    servers: WithServers,
) -> Result<Findings, Vec<Problem>> {
    let started = runtime.start_session(cwd)?;
    let found = started.instructions.found();
    let mut findings = Findings {
        warnings: instruction_report::warnings(found, &runtime.instructions),
        presets: deployment.presets.len(),
        agents: deployment.agents.len(),
        ..Findings::default()
    };
    if let Err(problem) = adapter::build(deployment, Purpose::Check) {
        findings.problems.push(problem);
    }
    // The servers' tools and instructions are part of what is checked
    // (and of `max_prompt_tokens`); they run until the check ends.
    let _servers = if servers == WithServers::Yes && !deployment.mcp.is_empty() {
        let (servers, started) = start_for_command(deployment, runtime, Which::All)?;
        findings.servers = server_reports(deployment, runtime, &started);
        findings
            .warnings
            .extend(tool_order_warnings(deployment, &servers));
        findings.problems.extend(started.required_failures);
        findings.problems.extend(started.optional_failures);
        Some(servers)
    } else {
        None
    };
    let mut agents = agents_to_check(deployment);
    findings.children = agents.len() - deployment.agents.len();
    agents.extend(preset_checks(deployment, &agents));
    let mut said = Said::default();
    for agent in &agents {
        check_agent(
            deployment,
            runtime,
            &started,
            agent,
            &mut findings,
            &mut said,
        );
    }
    Ok(findings)
}

/// A report of each server of `deployment`, in its order: those
/// that started as they run in `runtime`, the others with why not.
fn server_reports(
    deployment: &Deployment,
    runtime: &Runtime,
    started: &crate::runtime::mcp::Started,
) -> Vec<super::ServerReport> {
    let running = runtime.mcp.deployment_servers();
    (deployment.mcp.iter())
        .filter_map(|spec| {
            let name = &spec.config.name;
            let tokenizer = super::servers::tokenizer_for_server(deployment, name);
            if let Some(server) = running.iter().find(|server| server.name() == name) {
                return Some(super::ServerReport::started(server, tokenizer));
            }
            let failed = started
                .not_started
                .iter()
                .find(|failed| &failed.name == name)?;
            let (origin, message) = (failed.origin.clone(), failed.message.clone());
            Some(super::ServerReport::failed(
                name, origin, message, tokenizer,
            ))
        })
        .collect()
}

/// A warning for each server of `deployment` that lists its tools in a
/// different order on two calls.
fn tool_order_warnings(
    deployment: &Deployment,
    servers: &crate::runtime::mcp::Servers,
) -> Vec<Problem> {
    (servers.listed_twice().into_iter())
        .filter_map(|(name, first, again)| {
            let spec = (deployment.mcp.iter()).find(|spec| spec.config.name == name)?;
            super::servers::tool_order_warning(
                deployment,
                (&name, spec.span.clone()),
                &first,
                &again,
            )
        })
        .collect()
}

/// What was said for an agent checked before, and is not said again for
/// the next: a repeated sentence (with its owners), a tool's own problem,
/// an instance that hides an MCP tool.
#[derive(Debug, Default)]
struct Said {
    sentences: HashSet<(String, String, String)>,
    tools: HashSet<String>,
    hidden: HashSet<String>,
}

/// Renders one agent's prompt and contexts (a failed render reports every
/// problem of every section; the contexts' come after the prompt's), its
/// budget, whether its window holds the prompt with room for a turn, its
/// tools, and the sentences it states twice.
fn check_agent(
    deployment: &Deployment,
    runtime: &Runtime,
    started: &StartedSession,
    agent: &AgentSpec,
    findings: &mut Findings,
    said: &mut Said,
) {
    let assembly = runtime.assemble(agent, started);
    findings.problems.extend(tools::tool_problems(
        deployment,
        runtime,
        agent,
        &assembly,
        &mut said.tools,
    ));
    findings.problems.extend(tools::hidden_mcp_tools(
        deployment,
        runtime,
        agent,
        &mut said.hidden,
    ));
    let context = render_context(&assembly).err().into_iter().flatten();
    match render_prompt_with_spans(&assembly) {
        Ok(prompt) => {
            let context: Vec<_> = context.collect();
            findings
                .problems
                .extend(prompt_problems(deployment, agent, &context));
            if context.is_empty() {
                findings
                    .problems
                    .extend(over_budget(deployment, agent, &assembly, &prompt));
                findings.problems.extend(window::no_room_for_a_turn(
                    deployment,
                    agent,
                    &assembly,
                    &prompt.text,
                ));
            }
        }
        Err(mut errors) => {
            errors.extend(context);
            findings
                .problems
                .extend(prompt_problems(deployment, agent, &errors));
        }
    }
    findings.warnings.extend(duplicate_sentences::warnings(
        deployment,
        agent,
        &assembly,
        started.instructions.found(),
        &mut said.sentences,
    ));
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
