//! Whether an agent's context window holds its fixed prompt with room
//! for a turn. The loop compacts a conversation when a request reaches
//! `compact_at` of the window, towards a target of 60% of that; the
//! system prompt and the tools' schemas are never compacted. When they
//! alone reach the target, every compaction falls short, and a session
//! would pay for a summary request on every turn that cannot get under
//! the budget (`context_window = 10`, or `compact_at = 1e-300`). `dsh
//! check` refuses such a window, naming the numbers.

use std::ops::Range;

use dsh_agent_loop::{ContextBudget, WindowSource};
use dsh_system_prompt::PromptAssembly;
use toml::de::{DeTable, DeValue};

use crate::file::{AgentSpec, Deployment};
use crate::problem::{Problem, SourceFile};

/// The problem of an agent whose system prompt `system` and tools take
/// the compaction's target of its window or more; `None` when they leave
/// room for a turn, or when the agent has no window.
pub(super) fn no_room_for_a_turn(
    deployment: &Deployment,
    agent: &AgentSpec,
    assembly: &PromptAssembly,
    system: &str,
) -> Option<Problem> {
    let budget = deployment.budget_for(agent);
    let (threshold, target) = (budget.threshold()?, budget.target()?);
    // A token is at least one byte: count only when the bytes could reach.
    let bytes = system.len()
        + assembly
            .tools
            .iter()
            .map(|tool| serde_json::to_string(&**tool).map_or(0, |json| json.len()))
            .sum::<usize>();
    if u64::try_from(bytes).is_ok_and(|bytes| bytes < target) {
        return None;
    }
    let tokens = budget.count_prefix(system, &assembly.tools);
    if tokens < target {
        return None;
    }
    let message = format!(
        "agent `{}` sends {tokens} tokens of system prompt and tools before any message, but \
         {budget} compacts a conversation at {threshold} tokens, down to {target}: the prompt \
         and tools, which compaction never shortens, leave no room for a turn",
        agent.id.get_ref(),
    );
    let mut problem = deployment.file.problem(message);
    let file = &deployment.file;
    let labels = match budget.source() {
        WindowSource::Configured => vec![
            ("context_window", "the window"),
            ("compact_at", "where it compacts"),
        ],
        _ => vec![("compact_at", "where it compacts")],
    };
    let mut labelled = false;
    for (key, label) in labels {
        if let Some(span) = adapter_key(file, key) {
            problem = problem.label(span, label);
            labelled = true;
        }
    }
    if !labelled {
        problem = problem.label(agent.model.span(), "the model whose window this is");
    }
    Some(problem.help(fix(deployment, budget, tokens)))
}

/// What to do: the smallest window that leaves room, when there is one
/// worth naming, and the other ways.
fn fix(deployment: &Deployment, budget: ContextBudget, tokens: u64) -> String {
    let table = deployment.adapter_table();
    let others = "or shorten the persona and sections, or give the agent fewer tools";
    // The target is `threshold / 10 * 6`: it exceeds `tokens` from this
    // threshold on.
    let threshold = (tokens / 6 + 1).saturating_mul(10);
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "a window in tokens, from a count of tokens and a fraction in (0, 1]"
    )]
    let window = (threshold as f64 / budget.compact_at().get()).ceil() as u64;
    if window < u64::MAX / 2 && budget.compact_at().get() >= 0.1 {
        format!(
            "set `context_window` in {table} to at least {window} (if the model has that many), \
             {others}"
        )
    } else {
        format!(
            "raise `compact_at` in {table} (0.85 unless set: the fraction of the window at which \
             the loop compacts), {others}"
        )
    }
}

/// Where the value of `key` of the adapter's table is in `file`, if the
/// table writes it.
fn adapter_key(file: &SourceFile, key: &str) -> Option<Range<usize>> {
    let root = DeTable::parse(file.text()).ok()?;
    let adapter = root
        .get_ref()
        .iter()
        .find(|(name, _)| name.get_ref() == "adapter")?
        .1;
    let DeValue::Table(kinds) = adapter.get_ref() else {
        return None;
    };
    kinds.iter().find_map(|(_, table)| match table.get_ref() {
        DeValue::Table(keys) => keys
            .iter()
            .find(|(name, _)| name.get_ref() == key)
            .map(|(_, value)| value.span()),
        _ => None,
    })
}
