//! `dsh check`: load the deployment, render every agent's prompt, and
//! report every problem found.

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
    for agent in &deployment.agents {
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
