//! Approval in `dsh run`: a call the host's policy says asks first is put
//! to the person at the terminal — `y`es, `n`o, or `a`lways for this
//! session — and refused, naming the key that would allow it, where no
//! one can answer (input that is not a terminal). An MCP server's
//! sampling and elicitation are asked the same way (`super::questions`).

use std::collections::HashSet;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use dsh_agent_loop::{Approval, SessionFacts, ToolApproval, ToolCall, async_trait};
use dsh_deployment::policy::approval::ApprovalPolicy;
use dsh_deployment::policy::modes::Asking;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::console::{Console, one_line, out};
use super::tty::{Waiting, read_line};

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
    /// The session's model, which answers sampling; `/model` changes it.
    pub(super) model: Mutex<Option<String>>,
    /// Whether someone can answer: stdin and stderr are a terminal.
    pub(super) terminal: bool,
    console: Arc<Console>,
    /// Answers MCP servers' sampling requests, once allowed.
    pub(super) sampler: Option<dsh_deployment::policy::sampling::Sampler>,
    /// The tools answered "always" in this session.
    always: Mutex<HashSet<String>>,
    /// Held for the whole of a question (a form's every field): tool
    /// approvals and servers' questions, asked at once, take turns.
    turn: tokio::sync::Mutex<()>,
    /// Held by the one reader of the terminal until it stops, which may
    /// be after its question was withdrawn.
    reader: Arc<tokio::sync::Mutex<()>>,
    /// The terminal read (`/dev/tty`).
    tty: PathBuf,
}

/// The question a caller of [`AskOnTheTerminal::question`] asks: the
/// terminal is its own, and the spinner stays stopped, until it drops.
pub(super) struct Question<'a> {
    _turn: tokio::sync::MutexGuard<'a, ()>,
    console: &'a Console,
}

impl Drop for Question<'_> {
    fn drop(&mut self) {
        self.console.hold_spinner(false);
    }
}

impl AskOnTheTerminal {
    pub(crate) fn new(policy: ApprovalPolicy, console: Arc<Console>) -> Self {
        Self {
            policy,
            asking: Mutex::new(Asking::Policy),
            terminal: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
            model: Mutex::new(None),
            console,
            always: Mutex::new(HashSet::new()),
            sampler: None,
            turn: tokio::sync::Mutex::new(()),
            reader: Arc::new(tokio::sync::Mutex::new(())),
            tty: PathBuf::from("/dev/tty"),
        }
    }

    /// Answers MCP servers' sampling requests with `sampler`, once the
    /// person allows each.
    pub(crate) fn answering(mut self, sampler: dsh_deployment::policy::sampling::Sampler) -> Self {
        self.sampler = Some(sampler);
        self
    }

    /// Asks as a mode that asks `asking` does, and answers sampling with
    /// `model`, from now on.
    pub(crate) fn steer(&self, asking: Asking, model: &str) {
        *self.asking.lock() = asking;
        *self.model.lock() = Some(model.to_owned());
    }

    /// Waits for the terminal to be free of other questions, then holds
    /// it (and the spinner stopped) until the question drops.
    pub(super) async fn question(&self) -> Question<'_> {
        let turn = self.turn.lock().await;
        self.console.hold_spinner(true);
        self.console.idle();
        Question {
            _turn: turn,
            console: &self.console,
        }
    }

    /// Puts `call` to the person, reading the answer from the terminal.
    async fn ask(&self, call: &ToolCall, cancel: &CancellationToken) -> Answer {
        let _question = self.question().await;
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
    /// `None` when it cannot be read, or `cancel` fires first. Withdrawn
    /// (`cancel`, or the future dropped), it says so and leaves the
    /// person's next line unread. Callers hold a [`Question`].
    pub(super) async fn read_answer(
        &self,
        question: &str,
        cancel: &CancellationToken,
    ) -> Option<String> {
        self.say(question);
        let reader = Arc::clone(&self.reader).lock_owned().await;
        let waiting = Waiting::new();
        let (withdrawn, tty) = (waiting.flag(), self.tty.clone());
        // The terminal itself, not stdin: the chat reads its lines from
        // stdin, through a buffer of its own.
        let read = tokio::task::spawn_blocking(move || {
            let _reader = reader;
            read_line(&std::fs::File::open(tty)?, &withdrawn)
        });
        let answer = tokio::select! {
            answer = read => answer.ok().and_then(Result::ok).flatten(),
            () = cancel.cancelled() => return None,
        };
        waiting.answered();
        answer
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
    use std::io::Write;
    use std::time::Duration;

    /// An asker reading a FIFO instead of the terminal, and the FIFO's
    /// writing end (opened read-write, so neither end waits for the
    /// other).
    fn at_a_fifo(dir: &std::path::Path) -> (Arc<AskOnTheTerminal>, std::fs::File) {
        let fifo = dir.join("tty");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("a FIFO");
        let writer = (std::fs::OpenOptions::new().read(true).write(true))
            .open(&fifo)
            .expect("opened");
        let policy = ApprovalPolicy::new(
            Vec::new(),
            dsh_tool_mcp::McpServers::default(),
            dsh_tools::ToolRegistry::default(),
        );
        let mut asker = AskOnTheTerminal::new(policy, Arc::new(Console::new()));
        asker.tty = fifo;
        (Arc::new(asker), writer)
    }

    #[tokio::test]
    async fn questions_take_turns_and_a_withdrawn_one_leaves_the_next_line() {
        let dir = tempfile::tempdir().expect("a directory");
        let (asker, mut tty) = at_a_fifo(dir.path());
        let never = CancellationToken::new();
        // Withdrawn before an answer: its reader stops without reading.
        let withdrawn = tokio::time::timeout(Duration::from_millis(150), async {
            let _question = asker.question().await;
            asker.read_answer("first? ", &never).await
        });
        assert!(withdrawn.await.is_err(), "no line yet");
        // Two questions at once: the first asked has the terminal until
        // it is done, the second waits its turn.
        let said = Arc::new(Mutex::new(Vec::new()));
        let ask = |name: &'static str| {
            let (asker, said) = (Arc::clone(&asker), Arc::clone(&said));
            tokio::spawn(async move {
                let question = asker.question().await;
                said.lock().push(format!("{name} asked"));
                let line = asker.read_answer(name, &CancellationToken::new()).await;
                said.lock().push(format!("{name} answered {line:?}"));
                drop(question);
            })
        };
        let first = ask("second?");
        tokio::time::sleep(Duration::from_millis(50)).await;
        let second = ask("third?");
        tokio::time::sleep(Duration::from_millis(50)).await;
        tty.write_all(b"y\nn\n").expect("written");
        let both = async {
            first.await.expect("no panic");
            second.await.expect("no panic");
        };
        (tokio::time::timeout(Duration::from_secs(5), both).await).expect("both answered");
        assert_eq!(
            *said.lock(),
            [
                "second? asked",
                "second? answered Some(\"y\\n\")",
                "third? asked",
                "third? answered Some(\"n\\n\")",
            ]
        );
    }

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
