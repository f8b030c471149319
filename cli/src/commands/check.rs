//! `dsh check`: load the deployment, render every agent's prompt, and
//! report every problem found.

use std::collections::HashSet;

use dsh_system_prompt::render_prompt;

use crate::adapter::{self, Purpose};
use crate::args::CheckArgs;
use crate::commands::{Outcome, print, session_cwd};
use crate::deployment::{self, Runtime};
use crate::diagnostics::render_problems;

pub(crate) fn run(args: &CheckArgs) -> Outcome {
    let deployment = deployment::load(args.deployment.config.as_deref())?;
    let runtime = Runtime::new(&deployment)?;
    let cwd = session_cwd(&args.cwd)?;
    let mut problems = Vec::new();
    if let Err(problem) = adapter::build(&deployment, Purpose::Check) {
        problems.push(problem);
    }
    // Every agent, and every child with a persona of its own, once (for
    // the first agent that starts it): a child that keeps its parent's
    // persona renders what the parent's check renders.
    let mut agents = deployment.agents.clone();
    let mut child_personas = HashSet::new();
    for agent in &deployment.agents {
        agents.extend(deployment.children_of(agent).into_iter().filter(|child| {
            child.persona.span() != agent.persona.span()
                && child_personas.insert(child.persona.span().start)
        }));
    }
    for agent in &agents {
        let mut assembly = runtime.assemble(agent, cwd.as_deref());
        // A render stops at its first failing section; drop that section
        // and render again, so the problems of every section are found.
        for _ in 0..=assembly.sections.len() {
            match render_prompt(&assembly) {
                Ok(_) => break,
                Err(error) => {
                    problems.extend(render_problems(&deployment, agent, &assembly, &error));
                    if assembly.sections.remove(error.section()).is_none() {
                        break;
                    }
                }
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let agents = deployment.agents.len();
    print(&format!(
        "{}: {agents} agent{} checked, every prompt renders\n",
        deployment.file.name(),
        if agents == 1 { "" } else { "s" }
    ))
}
