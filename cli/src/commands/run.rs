//! `dsh run`: run an agent of the deployment through the agent loop.
//!
//! The model's answers go to stdout; tool calls, their results, the spinner
//! and errors go to stderr, so `dsh run -p … > answer.txt` keeps only what
//! the model said. A session that got an answer ends with one line on
//! stderr: its requests, the mean share of each that repeated the one
//! before (what a prompt cache can serve), and where that first broke
//! (the host's trace); `--trace FILE` writes the same per request, with
//! tokens.

use std::sync::Arc;

use dsh_agent_loop::Session;
use dsh_deployment::Problem;
use dsh_deployment::host::Host;
use dsh_deployment::host::store::Recorded;
use dsh_tools::{CommandOutput, CommandReport};

use crate::args::RunArgs;
use crate::commands::{Outcome, command_line_cwd};
use crate::diagnostics::Reporter;
use crate::terminal::{AskOnTheTerminal, Chat, Console, out};
use dsh_deployment::facts::attach;
use dsh_deployment::policy::modes;
use dsh_deployment::session::{OpenedSession, Resume};

pub(crate) fn run(args: &RunArgs) -> Outcome {
    let cwd = command_line_cwd(args.cwd.as_deref())?;
    let options = args.host.options();
    let host = Host::load(&options, &cwd)?;
    let resume = match (&args.resume.resume, args.resume.continue_latest) {
        (Some(id), _) => Resume::Id(id.clone()),
        (None, true) => Resume::Latest,
        (None, false) => Resume::New,
    };
    let OpenedSession {
        session,
        recorded,
        history,
        prefix,
        notes,
    } = host.open_session(&cwd, resume)?;
    for note in &notes {
        out(&mut std::io::stderr(), &format!("note: {note}\n"));
    }
    host.trace_session(&session, recorded.as_ref(), prefix.as_ref(), |warning| {
        out(&mut std::io::stderr(), &format!("warning: {warning}\n"));
    });
    // The instruction files stay registered while the session runs.
    let _instructions = host.instructions_of(&session)?;
    let attached = (args.attach.iter())
        .map(|path| {
            let path = cwd.join(path);
            attach::attach(&path, std::slice::from_ref(&cwd))
                .map_err(|error| vec![Problem::new(error.to_string())])
        })
        .collect::<Result<Vec<_>, _>>()?;
    let console = Arc::new(Console::new());
    console.replay(&history);
    let approval = Arc::new(
        AskOnTheTerminal::new(host.approval_policy(), Arc::clone(&console))
            .answering(host.sampler()),
    );
    // The servers' sampling and elicitation are asked on the terminal too.
    (host.runtime).answer_servers_with(dsh_tool_mcp::SharedAsker(approval.clone()));
    let agent_loop = on_the_console(&host, &console, &session).with_approval(approval.clone());
    let outcome = host.serve(async |started, ending| {
        if !started.required_failures.is_empty() {
            return Err(started.required_failures);
        }
        Reporter::for_stderr().report(&started.optional_failures);
        let mut chat = Chat {
            host: &host,
            agent_loop,
            agent: host.loop_agent().clone(),
            mode: host.start_mode(),
            model: host.loop_agent().model().to_owned(),
            approval,
            attached,
            session,
            console,
            ending,
            ended: None,
        };
        let mode = match &args.mode {
            Some(id) => modes::mode(id).map_err(|message| vec![Problem::new(message)])?,
            None => chat.mode,
        };
        let model = args.model.clone().unwrap_or_else(|| chat.model.clone());
        chat.steer(mode, &model).map_err(|problem| vec![problem])?;
        let outcome = match &args.prompt {
            Some(prompt) => chat.one_turn(prompt).await,
            None => chat.lines().await,
        };
        match chat.ended {
            Some(signal) => Err(vec![Problem::new(format!(
                "stopped by {signal}: the running turn was cancelled"
            ))]),
            None => outcome,
        }
    });
    finish(&host, outcome, recorded.as_ref())
}

/// The host's loop, showing what it does on the console.
fn on_the_console(
    host: &Host,
    console: &Arc<Console>,
    session: &Session,
) -> dsh_agent_loop::AgentLoop {
    let (events, text, thought, progress, output) = (
        Arc::clone(console),
        Arc::clone(console),
        Arc::clone(console),
        Arc::clone(console),
        Arc::clone(console),
    );
    let (id, output_id) = (session.id().clone(), session.id().clone());
    host.agent_loop()
        .on_event(move |_, event| events.event(event))
        .on_text(move |_, piece| text.text(piece))
        .on_thought(move |_, piece| thought.thought(piece))
        .on_tool_progress(move |session, call, text| {
            if *session == id {
                progress.progress(&call.name, text);
            }
        })
        .on_tool_call_context(move |session, call, cx| {
            if session.id == output_id && output.shows_output() {
                let (console, tool) = (Arc::clone(&output), call.name.clone());
                cx.extensions.insert(CommandOutput::new(move |report| {
                    if let CommandReport::Output(text) = report {
                        console.output(&tool, text);
                    }
                }));
            }
        })
}

/// The session's outcome, with the trace's summary said on stderr and a
/// trace or store that failed to write added to it.
fn finish(host: &Host, outcome: Outcome, recorded: Option<&Recorded>) -> Outcome {
    let (summary, outcome) = host.finish(outcome, recorded.and_then(Recorded::failure));
    // A session whose requests all failed has nothing to say of caching;
    // its error is the one line to read.
    if summary.answered > 0 {
        out(&mut std::io::stderr(), &format!("{summary}\n"));
    }
    outcome
}
