//! The chat of `dsh run`: one prompt for `-p`, or one per line of stdin,
//! each run by the session (a command, a server's prompt, or a turn),
//! with Ctrl-C and the ending signals cancelling what runs.

use std::io::IsTerminal;
use std::sync::Arc;

use dsh_agent_loop::{FinishReason, TurnError};
use dsh_deployment::Problem;
use dsh_deployment::host::signals::EndingSignals;
use dsh_deployment::session::{Attachments, HostedSession, PromptError, Prompted};
use tokio::io::AsyncBufReadExt;
use tokio_util::sync::CancellationToken;

use super::console::{Console, out};
use crate::commands::Outcome;

/// A session of `dsh run`, talking with the person at the terminal.
pub(crate) struct Chat {
    pub(crate) session: Arc<HostedSession>,
    pub(crate) console: Arc<Console>,
    /// Files attached to the first turn (`--attach`): text inline,
    /// images as image parts.
    pub(crate) attached: Attachments,
    /// `SIGTERM` and `SIGHUP`: cancel what runs, then end.
    pub(crate) ending: EndingSignals,
    /// The ending signal received, if any.
    pub(crate) ended: Option<&'static str>,
}

impl Chat {
    /// `-p`: one prompt; its failure, or its cancellation, is the
    /// command's.
    pub(crate) async fn one_turn(&mut self, prompt: &str) -> Outcome {
        match self.prompt(prompt).await {
            Ok(Prompted::Refused) => Err(vec![Problem::new("the prompt ran nothing; see above")]),
            Ok(_) => Ok(()),
            Err(error) => Err(vec![Problem::new(error.to_string())]),
        }
    }

    /// One prompt per line of stdin, until it ends. A failed turn is
    /// reported and the session goes on; the command fails if any turn
    /// failed. Ctrl-C cancels what runs; between prompts, it ends the
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
            if line.trim().is_empty() {
                continue;
            }
            let outcome = self.prompt(&line).await.map(drop);
            if self.ended.is_some() {
                break;
            }
            match outcome {
                Ok(()) => {}
                // Cancelling is what the user asked for, not a failure.
                Err(PromptError::Turn(TurnError::Cancelled)) => {
                    out(&mut std::io::stderr(), "turn cancelled\n");
                }
                Err(error) => {
                    self.console.problem(&Problem::new(error.to_string()));
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

    /// Runs what the person typed; Ctrl-C cancels it, and it then ends
    /// itself. The first turn carries the attached files, after the
    /// prompt.
    async fn prompt(&mut self, input: &str) -> Result<Prompted, PromptError> {
        let cancel = CancellationToken::new();
        let prompted = self.session.prompt(input, &mut self.attached, &cancel);
        let result = until_cancelled(prompted, &cancel, &mut self.ending, &mut self.ended).await;
        self.console.idle();
        let prompted = result?;
        let why = match prompted {
            Prompted::Turn(FinishReason::MaxTokens) => {
                "the answer stopped at the model's output limit"
            }
            Prompted::Turn(FinishReason::Refusal) => "the model refused",
            _ => return Ok(prompted),
        };
        out(&mut std::io::stderr(), &format!("\n[{why}]\n"));
        Ok(prompted)
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
