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

use dsh_deployment::Problem;
use dsh_deployment::host::Host;
use dsh_deployment::session::{
    Attachments, HostedSession, Knob, OpenError, Opening, Person, Reach, Sessions,
};

use crate::args::RunArgs;
use crate::commands::{Outcome, command_line_cwd, server_output};
use crate::diagnostics::Reporter;
use crate::terminal::{Chat, Console, TerminalPerson, out};

pub(crate) fn run(args: &RunArgs) -> Outcome {
    let cwd = command_line_cwd(args.cwd.as_deref())?;
    let options = args.host.options();
    let host = Arc::new(Host::load(&options, &cwd)?);
    let resume = &args.resume;
    let opening = match (&resume.resume, &resume.fork, resume.continue_latest) {
        (Some(id), _, _) => Opening::recorded(id, None),
        (_, Some(parent), _) => Opening::fork(parent, args.cwd.as_ref().map(|_| cwd.as_path())),
        (None, None, true) => Opening::latest(&cwd),
        (None, None, false) => Opening::new(&cwd),
    };
    let resumed = resume.resume.is_some() || resume.fork.is_some() || resume.continue_latest;
    let console = Arc::new(Console::new());
    let person = Arc::new(TerminalPerson::new(Arc::clone(&console)));
    // The servers' sampling and elicitation are asked on the terminal.
    let sessions = Sessions::new(
        Arc::clone(&host),
        Reach {
            samples: person.at_a_terminal(),
            elicits: person.elicits(),
            only_session: true,
            outside: false,
        },
    );
    sessions.show_servers_with(server_output());
    let (session, notes) = sessions
        .open(opening, person)
        .map_err(OpenError::problems)?;
    for note in &notes {
        out(&mut std::io::stderr(), &format!("note: {note}\n"));
    }
    let mut attached = Attachments::default();
    for path in &args.attach {
        (attached.file(&cwd.join(path), std::slice::from_ref(&cwd)))
            .map_err(|error| vec![Problem::new(error.to_string())])?;
    }
    if resumed {
        // What was said and done before, so the user knows where the
        // conversation stands.
        (console.history(|| session.replay()))
            .map_err(|error| vec![Problem::new(error.to_string())])?;
    }
    let outcome = host.serve(async |started, ending| {
        if !started.required_failures.is_empty() {
            return Err(started.required_failures);
        }
        Reporter::for_stderr().report(&started.optional_failures);
        // The command line's choices, over a resumed session's own.
        let steered = [(Knob::Mode, &args.mode), (Knob::Model, &args.model)];
        for (knob, value) in steered {
            if let Some(value) = value {
                session
                    .steer(knob, value)
                    .map_err(|why| vec![Problem::new(why)])?;
            }
        }
        let mut chat = Chat {
            session: Arc::clone(&session),
            console,
            attached,
            ending,
            ended: None,
        };
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
    finish(&host, outcome, &session)
}

/// The session's outcome, with the trace's summary said on stderr and a
/// trace or store that failed to write added to it.
fn finish(host: &Host, outcome: Outcome, session: &HostedSession) -> Outcome {
    let (summary, outcome) = host.finish(outcome, session.unrecorded());
    // A session whose requests all failed has nothing to say of caching;
    // its error is the one line to read.
    if summary.answered > 0 {
        out(&mut std::io::stderr(), &format!("{summary}\n"));
    }
    outcome
}
