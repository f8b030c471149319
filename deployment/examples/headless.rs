//! A third front end of dsh's session API, in one file: prompts as JSON
//! lines on stdin (`{"prompt": "…"}`), the session's events as JSON lines
//! on stdout, and every question answered by a flag:
//!
//! ```text
//! cargo run -p dsh-deployment --example headless -- --config dsh.toml \
//!     [--agent ID] [--approve never|once] < prompts.jsonl
//! ```
//!
//! Each prompt ends with a line `{"type": "prompted", …}`: how it ended,
//! or its error. A question is said (`{"type": "question", …}`) with its
//! answer.

#![allow(
    clippy::print_stderr,
    reason = "a command line program: it says what is wrong on stderr"
)]

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::Arc;

use dsh_agent_loop::async_trait;
use dsh_deployment::host::{Host, HostOptions};
use dsh_deployment::session::{
    Answer, Attachments, OpenError, Opening, Person, Prompted, Question, Reach, SessionEvent,
    Sessions,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Writes what the session shows as JSON lines, and answers each question
/// the same way.
struct Headless {
    approve: bool,
}

impl Headless {
    fn write(&self, value: &impl serde::Serialize) {
        let mut stdout = std::io::stdout().lock();
        // A closed stdout leaves no one to show anything to.
        let _ = serde_json::to_writer(&mut stdout, value).map(|()| writeln!(stdout));
    }
}

#[async_trait]
impl Person for Headless {
    fn show(&self, event: SessionEvent) {
        self.write(&event);
    }

    async fn ask(&self, question: Question<'_>, _cancel: &CancellationToken) -> Answer {
        let asked = match question {
            Question::Call { call, .. } => json!({ "call": call.id, "tool": call.tool }),
            Question::Sampling { title, .. } => json!({ "sampling": title }),
            Question::Outside { path, .. } => json!({ "outside": path }),
        };
        let (said, answer) = match self.approve {
            true => ("once", Answer::Once),
            false => ("no", Answer::No),
        };
        self.write(&json!({ "type": "question", "asked": asked, "answer": said }));
        answer
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let (mut options, mut approve) = (HostOptions::default(), false);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("`{flag}` takes a value"));
        match flag.as_str() {
            "--config" => options.config = Some(value()?.into()),
            "--agent" => options.agent = Some(value()?),
            "--approve" => approve = value()? == "once",
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let said = |problems: Vec<dsh_deployment::Problem>| {
        let said: Vec<&str> = problems.iter().map(|problem| problem.message()).collect();
        said.join("; ")
    };
    let cwd = std::env::current_dir().map_err(|error| error.to_string())?;
    let host = Arc::new(Host::load(&options, &cwd).map_err(said)?);
    let person = Arc::new(Headless { approve });
    let reach = Reach {
        samples: approve,
        elicits: person.elicits(),
        only_session: true,
        outside: approve,
    };
    let opened = Sessions::new(host.clone(), reach).open(Opening::new(&cwd), person.clone());
    let (session, _notes) = opened.map_err(|error| said(OpenError::problems(error)))?;
    let served = host.serve(async |started, _ending| {
        if !started.required_failures.is_empty() {
            return Err(started.required_failures);
        }
        for line in std::io::stdin().lock().lines() {
            let line =
                line.map_err(|error| vec![dsh_deployment::Problem::new(error.to_string())])?;
            let prompt: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            let Some(text) = prompt["prompt"].as_str() else {
                person
                    .write(&json!({ "type": "prompted", "error": "expected {\"prompt\": \"…\"}" }));
                continue;
            };
            let (mut attached, cancel) = (Attachments::default(), CancellationToken::new());
            let ended = match session.prompt(text, &mut attached, &cancel).await {
                Ok(Prompted::Turn(finish)) => json!({ "finish": format!("{finish:?}") }),
                Ok(Prompted::NoTurn) => json!({ "finish": null }),
                Ok(Prompted::Refused) => json!({ "refused": true }),
                Err(error) => json!({ "error": error.to_string() }),
            };
            person.write(&json!({ "type": "prompted", "result": ended }));
        }
        Ok(())
    });
    host.finish(served, session.unrecorded()).1.map_err(said)
}
