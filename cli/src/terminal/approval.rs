//! Approval in `dsh run`: a call the host's policy says asks first is put
//! to the person at the terminal — `y`es, `n`o, or `a`lways for this
//! session — and refused, naming the key that would allow it, where no
//! one can answer (input that is not a terminal). An MCP server's
//! sampling and elicitation are asked the same way (`super::questions`).

use std::collections::HashSet;
use std::io::{BufRead, IsTerminal};
use std::sync::Arc;

use dsh_agent_loop::{Approval, SessionFacts, ToolApproval, ToolCall, async_trait};
use dsh_deployment::host::ApprovalPolicy;
use dsh_deployment::host::modes::Asking;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::console::{Console, one_line, out};

/// What the person answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Answer {
    Yes,
    No,
    Always,
}

impl Answer {
    /// The answer a line says: `y`/`yes`, `a`/`always`; anything else is
    /// no.
    pub(super) fn of(line: &str) -> Self {
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => Self::Yes,
            "a" | "always" => Self::Always,
            _ => Self::No,
        }
    }
}

/// Asks the person at the terminal before each call that asks first.
pub(crate) struct AskOnTheTerminal {
    policy: ApprovalPolicy,
    /// Which calls the session's mode asks about; `/mode` changes it.
    pub(super) asking: Mutex<Asking>,
    /// Whether someone can answer: stdin and stderr are a terminal.
    pub(super) terminal: bool,
    console: Arc<Console>,
    /// Answers MCP servers' sampling requests, once allowed.
    pub(super) sampler: Option<dsh_deployment::host::sampling::Sampler>,
    /// The tools answered "always" in this session.
    always: Mutex<HashSet<String>>,
}

impl AskOnTheTerminal {
    pub(crate) fn new(policy: ApprovalPolicy, console: Arc<Console>) -> Self {
        Self {
            policy,
            asking: Mutex::new(Asking::Policy),
            terminal: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
            console,
            always: Mutex::new(HashSet::new()),
            sampler: None,
        }
    }

    /// Answers MCP servers' sampling requests with `sampler`, once the
    /// person allows each.
    pub(crate) fn answering(mut self, sampler: dsh_deployment::host::sampling::Sampler) -> Self {
        self.sampler = Some(sampler);
        self
    }

    /// Asks as a mode that asks `asking` does, from now on.
    pub(crate) fn set_asking(&self, asking: Asking) {
        *self.asking.lock() = asking;
    }

    /// Puts `call` to the person, reading the answer from the terminal.
    async fn ask(&self, call: &ToolCall, cancel: &CancellationToken) -> Answer {
        let question = format!(
            "Allow `{}` {}? [y]es, [n]o, [a]lways for this session: ",
            call.name,
            one_line(&call.arguments, 160)
        );
        match self.read_answer(&question, cancel).await {
            Some(line) => Answer::of(&line),
            None => Answer::No,
        }
    }

    /// Says `text` on stderr, the spinner stopped.
    pub(super) fn say(&self, text: &str) {
        self.console.idle();
        out(&mut std::io::stderr(), text);
    }

    /// Says `question` on stderr and reads one line from the terminal;
    /// `None` when it cannot be read, or `cancel` fires first.
    pub(super) async fn read_answer(
        &self,
        question: &str,
        cancel: &CancellationToken,
    ) -> Option<String> {
        self.say(question);
        // The terminal itself, not stdin: the chat reads its lines from
        // stdin, through a buffer of its own.
        let read = tokio::task::spawn_blocking(|| {
            let tty = std::fs::File::open("/dev/tty")?;
            let mut line = String::new();
            let read = std::io::BufReader::new(tty).read_line(&mut line)?;
            Ok::<_, std::io::Error>((read > 0).then_some(line))
        });
        tokio::select! {
            answer = read => answer.ok()?.ok()?,
            () = cancel.cancelled() => None,
        }
    }
}

#[async_trait]
impl ToolApproval for AskOnTheTerminal {
    async fn approve(
        &self,
        call: &ToolCall,
        session: &SessionFacts,
        cancel: &CancellationToken,
    ) -> Approval {
        let asking = *self.asking.lock();
        if !(self.policy).asks_in(asking, &call.name, session.id.as_str())
            || self.always.lock().contains(&call.name)
        {
            return Approval::Allow;
        }
        if !self.terminal {
            return Approval::Deny {
                reason: format!(
                    "`{name}` runs only with the user's permission, and `dsh run` cannot ask for \
                     it: its input is not a terminal. Run it at a terminal, or from an editor \
                     with `dsh acp`, or {how}",
                    name = call.name,
                    how = self.policy.how_to_allow(&call.name, session.id.as_str()),
                ),
            };
        }
        match self.ask(call, cancel).await {
            Answer::Yes => Approval::Allow,
            Answer::Always => {
                self.always.lock().insert(call.name.clone());
                Approval::Allow
            }
            Answer::No => Approval::Deny {
                reason: format!("the user declined to run `{}`", call.name),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_leniently_and_default_to_no() {
        assert_eq!(Answer::of("y\n"), Answer::Yes);
        assert_eq!(Answer::of(" YES "), Answer::Yes);
        assert_eq!(Answer::of("a\n"), Answer::Always);
        assert_eq!(Answer::of("always"), Answer::Always);
        for no in ["n\n", "", "\n", "maybe", "yy"] {
            assert_eq!(Answer::of(no), Answer::No, "{no:?}");
        }
    }
}
