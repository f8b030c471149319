//! The person of `dsh run` is at the terminal: the session's events on
//! the console, its questions asked on `/dev/tty` — a call as `[y]es,
//! [n]o, [a]lways` (what "always" covers said exactly), a server's
//! sampling as `[y]es, [n]o`, a form one field a line (the host's
//! [`Form`]), a URL to visit as `[a]ccept, [d]ecline`. Where no one can
//! answer (input that is not a terminal), each question says so.
//!
//! One question at a time: each holds [`TerminalPerson::question`] while
//! it is asked (a form, all its fields).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use dsh_agent_loop::async_trait;
use dsh_deployment::policy::sampling::describe_elicitation;
use dsh_deployment::session::{Answer, Form, Lines, Person, Question, SessionEvent};
use dsh_tool_mcp::{ElicitAnswer, ElicitKind, Elicitation, Elicits};
use tokio_util::sync::CancellationToken;

use super::console::{Console, one_line, out};
use super::tty::{Waiting, read_line};

/// The person at the terminal.
pub(crate) struct TerminalPerson {
    /// Whether someone can answer: stdin and stderr are a terminal.
    terminal: bool,
    console: Arc<Console>,
    /// Held for the whole of a question (a form's every field): tool
    /// approvals and servers' questions, asked at once, take turns.
    turn: tokio::sync::Mutex<()>,
    /// Held by the one reader of the terminal until it stops, which may
    /// be after its question was withdrawn.
    reader: Arc<tokio::sync::Mutex<()>>,
    /// The terminal read (`/dev/tty`).
    tty: PathBuf,
}

/// The question a caller of [`TerminalPerson::question`] asks: the
/// terminal is its own, and the spinner stays stopped, until it drops.
struct Asked<'a> {
    _turn: tokio::sync::MutexGuard<'a, ()>,
    console: &'a Console,
}

impl Drop for Asked<'_> {
    fn drop(&mut self) {
        self.console.hold_spinner(false);
    }
}

impl TerminalPerson {
    pub(crate) fn new(console: Arc<Console>) -> Self {
        Self {
            terminal: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
            console,
            turn: tokio::sync::Mutex::new(()),
            reader: Arc::new(tokio::sync::Mutex::new(())),
            tty: PathBuf::from("/dev/tty"),
        }
    }

    /// Whether someone can answer.
    pub(crate) fn at_a_terminal(&self) -> bool {
        self.terminal
    }

    /// Waits for the terminal to be free of other questions, then holds
    /// it (and the spinner stopped) until the question drops.
    async fn question(&self) -> Asked<'_> {
        let turn = self.turn.lock().await;
        self.console.hold_spinner(true);
        self.console.idle();
        Asked {
            _turn: turn,
            console: &self.console,
        }
    }

    /// Says `text` on stderr, the spinner stopped.
    fn say(&self, text: &str) {
        self.console.idle();
        out(&mut std::io::stderr(), text);
    }

    /// Says `question` on stderr and reads one line from the terminal;
    /// `None` when it cannot be read, or `cancel` fires first. Withdrawn
    /// (`cancel`, or the future dropped), it leaves the person's next
    /// line unread. Callers hold a question.
    async fn read_answer(&self, question: &str, cancel: &CancellationToken) -> Option<String> {
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

    /// One question, one line: its answer.
    async fn ask_line(&self, question: &str, cancel: &CancellationToken) -> Answer {
        let _asked = self.question().await;
        match self.read_answer(question, cancel).await {
            Some(line) => Answer::of_line(&line),
            None => Answer::No,
        }
    }

    /// A form, one field a line, by the host's rules.
    async fn fill(&self, schema: &serde_json::Value, cancel: &CancellationToken) -> ElicitAnswer {
        let form = match Form::of(schema) {
            Ok(form) => form,
            Err(error) => {
                self.say(&format!("{}\n", error.refused()));
                return ElicitAnswer::Decline;
            }
        };
        form.fill(&mut AtTheTerminal(self, cancel)).await
    }
}

/// A form's lines, at the terminal, until its question is withdrawn.
struct AtTheTerminal<'a>(&'a TerminalPerson, &'a CancellationToken);

#[async_trait]
impl Lines for AtTheTerminal<'_> {
    async fn ask(&mut self, question: String) -> Option<String> {
        self.0.read_answer(&question, self.1).await
    }

    fn say(&mut self, text: String) {
        self.0.say(&format!("{text}\n"));
    }
}

#[async_trait]
impl Person for TerminalPerson {
    fn show(&self, event: SessionEvent) {
        self.console.show(event);
    }

    async fn ask(&self, question: Question<'_>, cancel: &CancellationToken) -> Answer {
        match question {
            Question::Call { call, always, .. } => {
                if !self.terminal {
                    return Answer::Unanswerable(
                        "`dsh run` cannot ask for it: its input is not a terminal. Run it at \
                         a terminal, or from an editor with `dsh acp`"
                            .to_owned(),
                    );
                }
                // "Always allow `ls` (any arguments)": what `a` covers.
                let always = always.replacen("Always", "always", 1);
                let question = format!(
                    "Allow `{}` {}? [y]es, [n]o, [a] {always}: ",
                    call.tool,
                    one_line(&call.input.to_string(), 160)
                );
                self.ask_line(&question, cancel).await
            }
            // Not asked: `dsh run` does not say it can be
            // (`Reach::outside`), so such a change is refused.
            Question::Outside { .. } => Answer::Unanswerable("`dsh run` cannot ask it".into()),
            Question::Sampling {
                title, described, ..
            } => {
                if !self.terminal {
                    return Answer::Unanswerable("`dsh run`'s input is not a terminal".to_owned());
                }
                let question = format!("{title}:\n{}\nAllow? [y]es, [n]o: ", indented(described));
                match self.ask_line(&question, cancel).await {
                    Answer::Once => Answer::Once,
                    _ => Answer::No,
                }
            }
        }
    }

    /// Forms and URLs, at a terminal.
    fn elicits(&self) -> Elicits {
        Elicits {
            form: self.terminal,
            url: self.terminal,
        }
    }

    async fn elicit(&self, request: &Elicitation, cancel: &CancellationToken) -> ElicitAnswer {
        let _asked = self.question().await;
        self.say(&format!("{}\n", describe_elicitation(request)));
        match &request.kind {
            ElicitKind::Url { .. } => {
                let question = "Open the URL, then [a]ccept or [d]ecline: ";
                match self.read_answer(question, cancel).await {
                    None => ElicitAnswer::Cancel,
                    Some(line) if matches!(line.trim(), "a" | "accept" | "y" | "yes") => {
                        ElicitAnswer::Accept(None)
                    }
                    Some(_) => ElicitAnswer::Decline,
                }
            }
            ElicitKind::Form { schema } => self.fill(schema, cancel).await,
        }
    }
}

/// Every line of `text`, indented two spaces.
fn indented(text: &str) -> String {
    let lines: Vec<String> = text.lines().map(|line| format!("  {line}")).collect();
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::Duration;

    use parking_lot::Mutex;

    /// A person reading a FIFO instead of the terminal, and the FIFO's
    /// writing end (opened read-write, so neither end waits for the
    /// other).
    fn at_a_fifo(dir: &std::path::Path) -> (Arc<TerminalPerson>, std::fs::File) {
        let fifo = dir.join("tty");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("a FIFO");
        let writer = (std::fs::OpenOptions::new().read(true).write(true))
            .open(&fifo)
            .expect("opened");
        let mut person = TerminalPerson::new(Arc::new(Console::new()));
        person.tty = fifo;
        (Arc::new(person), writer)
    }

    #[tokio::test]
    async fn questions_take_turns_and_a_withdrawn_one_leaves_the_next_line() {
        let dir = tempfile::tempdir().expect("a directory");
        let (person, mut tty) = at_a_fifo(dir.path());
        let never = CancellationToken::new();
        // Withdrawn before an answer: its reader stops without reading.
        let withdrawn = tokio::time::timeout(Duration::from_millis(150), async {
            let _question = person.question().await;
            person.read_answer("first? ", &never).await
        });
        assert!(withdrawn.await.is_err(), "no line yet");
        // Two questions at once: the first asked has the terminal until
        // it is done, the second waits its turn.
        let said = Arc::new(Mutex::new(Vec::new()));
        let ask = |name: &'static str| {
            let (person, said) = (Arc::clone(&person), Arc::clone(&said));
            tokio::spawn(async move {
                let question = person.question().await;
                said.lock().push(format!("{name} asked"));
                let line = person.read_answer(name, &CancellationToken::new()).await;
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

    #[tokio::test]
    async fn a_form_is_asked_field_by_field_and_a_wrong_answer_again() {
        let dir = tempfile::tempdir().expect("a directory");
        let (person, mut tty) = at_a_fifo(dir.path());
        tty.write_all(b"Ada\nthirty\n36\n").expect("written");
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
            "required": ["name"]
        });
        let filled = tokio::time::timeout(
            Duration::from_secs(5),
            person.fill(&schema, &CancellationToken::new()),
        )
        .await
        .expect("filled");
        let ElicitAnswer::Accept(Some(content)) = filled else {
            panic!("accepted: {filled:?}");
        };
        assert_eq!(content["name"], "Ada");
        assert_eq!(content["age"], 36);
    }
}
