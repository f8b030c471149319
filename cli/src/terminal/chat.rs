//! The chat of `dsh run`: one turn for `-p`, or one per line of stdin,
//! with Ctrl-C and the ending signals cancelling the running turn.

use std::io::IsTerminal;
use std::sync::Arc;

use dsh_agent_loop::{AgentLoop, FinishReason, TurnError};
use dsh_deployment::Problem;
use dsh_deployment::facts::attach::Attached;
use dsh_deployment::host::Host;
use dsh_deployment::host::signals::EndingSignals;
use dsh_deployment::policy::modes::{self, MODES, Mode};
use dsh_deployment::session::{Commands, Input, PromptCall, SlashCommand};
use tokio::io::AsyncBufReadExt;
use tokio_util::sync::CancellationToken;

use super::approval::AskOnTheTerminal;
use super::console::{Console, out};
use crate::commands::Outcome;

/// A session of `dsh run`, talking with the person at the terminal.
pub(crate) struct Chat<'h> {
    pub(crate) host: &'h Host,
    pub(crate) agent_loop: AgentLoop,
    pub(crate) agent: dsh_agent_loop::Agent,
    /// The session's mode and model, which `/mode` and `/model` switch.
    pub(crate) mode: &'static Mode,
    pub(crate) model: String,
    /// The loop's approval, which asks as the mode says.
    pub(crate) approval: Arc<AskOnTheTerminal>,
    /// Files attached to the first prompt (`--attach`): text inline,
    /// images as image parts.
    pub(crate) attached: Vec<Attached>,
    pub(crate) session: dsh_agent_loop::Session,
    pub(crate) console: Arc<Console>,
    /// `SIGTERM` and `SIGHUP`: cancel the running turn, then end.
    pub(crate) ending: EndingSignals,
    /// The ending signal received, if any.
    pub(crate) ended: Option<&'static str>,
}

impl Chat<'_> {
    /// Switches the session to `mode` and `model`: its agent, and which
    /// calls ask first. `Err` says why not.
    pub(crate) fn steer(&mut self, mode: &'static Mode, model: &str) -> Result<(), Problem> {
        let effort = self.host.efforts().into_iter().next();
        self.agent = (self.host)
            .agent_for(mode, model, effort.as_deref())
            .map_err(Problem::new)?;
        self.approval.steer(mode.asking, model);
        (self.mode, self.model) = (mode, model.to_owned());
        Ok(())
    }

    /// `/mode ID` and `/model ID`; without an id, what there is to choose.
    fn command(&mut self, command: SlashCommand, argument: &str) {
        let choices = |current: &str, all: Vec<String>| {
            let marked: Vec<String> = (all.into_iter())
                .map(|one| {
                    if one == current {
                        format!("{one} (now)")
                    } else {
                        one
                    }
                })
                .collect();
            marked.join(", ")
        };
        let said = match (command, argument) {
            (SlashCommand::Mode, "") => {
                let ids = MODES.iter().map(|mode| mode.id.to_owned()).collect();
                Ok(format!("modes: {}", choices(self.mode.id, ids)))
            }
            (SlashCommand::Model, "") => Ok(format!(
                "models: {}",
                choices(&self.model, self.host.models())
            )),
            (SlashCommand::Mode, id) => modes::mode(id)
                .map_err(Problem::new)
                .and_then(|mode| self.steer(mode, &self.model.clone()))
                .map(|()| format!("mode: {} — {}", self.mode.id, self.mode.description)),
            (SlashCommand::Model, model) => {
                (self.steer(self.mode, model)).map(|()| format!("model: {}", self.model))
            }
            (SlashCommand::Compact, _) => return,
        };
        match said {
            Ok(line) => out(&mut std::io::stderr(), &format!("{line}\n")),
            Err(problem) => self.console.problem(&problem),
        }
    }

    /// `-p`: one turn; its failure, or its cancellation, is the command's.
    pub(crate) async fn one_turn(&mut self, prompt: &str) -> Outcome {
        match self.turn(prompt).await {
            Ok(()) => Ok(()),
            Err(error) => Err(vec![turn_problem(&error)]),
        }
    }

    /// One turn per line of stdin, until it ends. A failed turn is
    /// reported and the session goes on; the command fails if any turn
    /// failed. Ctrl-C cancels the running turn; between turns, it ends the
    /// session.
    pub(crate) async fn lines(&mut self) -> Outcome {
        let interactive = std::io::stdin().is_terminal();
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        let mut failed = false;
        loop {
            if interactive {
                self.console.ask();
            }
            let line = tokio::select! {
                line = lines.next_line() => line,
                _ = tokio::signal::ctrl_c() => Ok(None),
                signal = self.ending.recv() => {
                    self.ended = Some(signal);
                    Ok(None)
                }
            };
            let line = match line {
                Ok(Some(line)) => line,
                Ok(None) => {
                    if interactive {
                        // Leave the shell's prompt a line of its own.
                        out(&mut std::io::stderr(), "\n");
                    }
                    break;
                }
                Err(error) => {
                    return Err(vec![Problem::new(format!("cannot read stdin: {error}"))]);
                }
            };
            let commands = Commands::of(&self.host.runtime.mcp, self.session.id().as_str());
            let outcome = match commands.parse(&line) {
                Input::Empty => continue,
                Input::Command(SlashCommand::Compact, _) => self.compact().await,
                Input::Command(command @ (SlashCommand::Mode | SlashCommand::Model), argument) => {
                    self.command(command, argument);
                    continue;
                }
                Input::ServerPrompt(call) => match self.prompt_text(&call).await {
                    Ok(text) => self.turn(&text).await,
                    // Said; the session goes on (or ends, on a signal).
                    Err(problem) => {
                        self.console.problem(&problem);
                        Ok(())
                    }
                },
                Input::Invalid(error) => {
                    self.console.problem(&Problem::new(error.to_string()));
                    continue;
                }
                Input::Prompt(prompt) => self.turn(prompt).await,
            };
            if self.ended.is_some() {
                break;
            }
            match outcome {
                Ok(()) => {}
                // Cancelling is what the user asked for, not a failure.
                Err(TurnError::Cancelled) => out(&mut std::io::stderr(), "turn cancelled\n"),
                Err(error) => {
                    self.console.problem(&turn_problem(&error));
                    failed = true;
                }
            }
        }
        if failed {
            Err(vec![Problem::new(
                "some turns of this session failed; see above",
            )])
        } else {
            Ok(())
        }
    }

    /// `/compact`: compacts the session now; Ctrl-C or an ending signal
    /// cancels it. The event's line says what it did; nothing to compact
    /// says so.
    async fn compact(&mut self) -> Result<(), TurnError> {
        let cancel = CancellationToken::new();
        self.console.spin("compacting…".to_owned());
        let compact = self
            .agent_loop
            .compact(&self.agent, &mut self.session, &cancel);
        let result = until_cancelled(compact, &cancel, &mut self.ending, &mut self.ended).await;
        self.console.idle();
        if let Ok(None) = result {
            out(&mut std::io::stderr(), "nothing to compact\n");
        }
        result.map(|_| ())
    }

    /// The text of a server's prompt (`call`), from its server; Ctrl-C
    /// or an ending signal cancels the request.
    async fn prompt_text(&mut self, call: &PromptCall) -> Result<String, Problem> {
        let cancel = CancellationToken::new();
        let session = self.session.id().as_str().to_owned();
        let text = call.text(&self.host.runtime.mcp, &session, &cancel);
        let text = until_cancelled(text, &cancel, &mut self.ending, &mut self.ended).await;
        text.map_err(|error| Problem::new(error.to_string()))
    }

    /// Runs one turn; Ctrl-C cancels it, and the turn then ends itself.
    /// The first carries the attached files, after the prompt.
    async fn turn(&mut self, input: &str) -> Result<(), TurnError> {
        let (mut text, mut images) = (vec![input.to_owned()], Vec::new());
        for attached in std::mem::take(&mut self.attached) {
            match attached {
                Attached::Text(inline) => text.push(inline),
                Attached::Image(image) => images.push(image),
            }
        }
        let cancel = CancellationToken::new();
        let turn = self.agent_loop.run_turn_with(
            &self.agent,
            &mut self.session,
            (text.join("\n\n"), images),
            &cancel,
        );
        let result = until_cancelled(turn, &cancel, &mut self.ending, &mut self.ended).await;
        self.console.idle();
        let summary = result?;
        let why = match summary.finish {
            FinishReason::MaxTokens => "the answer stopped at the model's output limit",
            FinishReason::Refusal => "the model refused",
            _ => return Ok(()),
        };
        out(&mut std::io::stderr(), &format!("\n[{why}]\n"));
        Ok(())
    }
}

/// Runs `work` to its end: Ctrl-C and the first ending signal (kept in
/// `ended`) cancel it through `cancel`, and it then ends itself.
async fn until_cancelled<T>(
    work: impl Future<Output = T>,
    cancel: &CancellationToken,
    ending: &mut EndingSignals,
    ended: &mut Option<&'static str>,
) -> T {
    tokio::pin!(work);
    loop {
        tokio::select! {
            result = &mut work => break result,
            _ = tokio::signal::ctrl_c() => cancel.cancel(),
            signal = ending.recv(), if ended.is_none() => {
                *ended = Some(signal);
                cancel.cancel();
            }
        }
    }
}

pub(crate) fn turn_problem(error: &TurnError) -> Problem {
    Problem::new(error.to_string())
}
