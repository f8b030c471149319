//! `assemble` + `render_prompt` of deployments as they are shipped, not
//! synthetic workloads: what a user's agent pays per step.
//!
//! ```text
//! cargo bench -p dsh-benches --bench deployments -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! - `coding_agent`: the example deployment (`examples/coding-agent`): the
//!   statics of the agent loop and the tools (persona, `<<model>>`,
//!   `<<cwd>>`, the guidance of `read` and `bash`), the todo context, and
//!   the tools `read`, `bash` and `todo_write`, assembled through the loop
//!   for the `coder` agent in a session with a working directory.
//! - `instructions_30k_50_tools`: the same, plus a project-instructions
//!   section of 30 KB (fixed text, no references) and 50 more tools.
//!
//! Both are measured in one group, `deployment`, by the loop's own
//! `AgentLoop::assemble` then `render_prompt`.

use std::sync::Arc;
use std::time::Duration;

use dsh_agent_loop::{Agent, AgentLoop, AgentOptions, ScriptedAdapter, Session};
use dsh_system_prompt::{PromptSection, Registration, SystemPrompt, ToolSchema, render_prompt};
use dsh_tools::ToolRegistry;

/// The coding agent's persona, as the example deployment writes it.
fn persona() -> String {
    let file = include_str!("../../examples/coding-agent/dsh.toml");
    let start = file.find("persona = '''").expect("a persona") + "persona = '''".len();
    let end = start + file[start..].find("'''").expect("the persona's end");
    file[start..end].trim_start_matches('\n').to_owned()
}

/// 30 KB of project instructions without references, in paragraphs.
fn instructions() -> String {
    let paragraph = "Run the formatter and the linter before every commit, keep each \
                     commit to one change with a message that says what and why, and \
                     never push to the main branch without a review from the code's owner.";
    let mut text = String::from("# Project instructions\n\n");
    let mut at = 0;
    while text.len() < 30_000 {
        at += 1;
        text.push_str(&format!("{at}. {paragraph}\n\n"));
    }
    text.truncate(text.trim_end().len());
    text
}

/// One deployment, ready to assemble.
struct Deployment {
    agent_loop: AgentLoop,
    agent: Agent,
    session: Session,
    _registrations: Vec<Registration>,
}

impl Deployment {
    fn coding_agent() -> Self {
        let prompt = SystemPrompt::new().expect("the statics install");
        let tools = ToolRegistry::new();
        let todo = Arc::new(dsh_tool_todo::TodoWriteTool::new());
        for tool in [
            Arc::new(dsh_tool_fs::ReadTool::new()) as Arc<dyn dsh_tools::Tool>,
            Arc::new(dsh_tool_bash::BashTool::new()),
            todo.clone(),
        ] {
            tools.register(tool).expect("a tool registers");
        }
        let registrations = vec![
            tools.install(&prompt).expect("the tools install"),
            todo.install_context(&prompt)
                .expect("the todo context installs"),
        ];
        let adapter = Arc::new(ScriptedAdapter::new([]));
        Self {
            agent_loop: AgentLoop::new(prompt, tools, adapter),
            agent: Agent::new("coder", AgentOptions::new("gpt-5").with_persona(persona())),
            session: Session::new().with_cwd("/home/dev/project"),
            _registrations: registrations,
        }
    }

    fn with_instructions_and_tools(mut self) -> Self {
        let prompt = self.agent_loop.prompt().clone();
        let section = PromptSection::new("project:AGENTS.md", 50, instructions());
        self._registrations
            .push(prompt.section(section).expect("the instructions register"));
        let extra: Vec<Arc<ToolSchema>> = (0..50)
            .map(|at| {
                Arc::new(ToolSchema::new(
                    format!("tool_{at:02}"),
                    format!("Does the {at}th thing a project needs."),
                    serde_json::json!({
                        "type": "object",
                        "properties": {"path": {"type": "string", "description": "The file."}},
                        "required": ["path"],
                    }),
                ))
            })
            .collect();
        self._registrations.push(
            prompt
                .tools("extra", move |_| extra.clone())
                .expect("the extra tools register"),
        );
        self
    }

    fn run(&self) -> String {
        render_prompt(&self.agent_loop.assemble(&self.agent, &self.session)).expect("renders")
    }
}

#[allow(clippy::print_stdout, reason = "the bench reports what it measures")]
fn main() {
    let deployments = [
        ("coding_agent", Deployment::coding_agent()),
        (
            "instructions_30k_50_tools",
            Deployment::coding_agent().with_instructions_and_tools(),
        ),
    ];
    let mut c = dsh_benches::criterion(30, Duration::from_secs(3)).configure_from_args();
    let mut group = c.benchmark_group("deployment");
    for (name, deployment) in &deployments {
        let assembly = deployment
            .agent_loop
            .assemble(&deployment.agent, &deployment.session);
        println!(
            "{name}: {} sections, {} tools -> {} bytes of prompt",
            assembly.sections.len(),
            assembly.tools.len(),
            deployment.run().len()
        );
        group.bench_function(*name, |b| b.iter(|| deployment.run()));
    }
    group.finish();
    c.final_summary();
}
