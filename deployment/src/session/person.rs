//! The one trait a front end implements to talk to a person: show what a
//! session does, ask a question (a tool call, a server's sampling), fill
//! in a form (a server's elicitation). Everything else about a session —
//! what the question is, what "always" remembers, what an answer means —
//! is the session's.

use dsh_agent_loop::{ToolCall, async_trait};
use dsh_tool_mcp::{ElicitAnswer, Elicitation, Elicits, SamplingRequest};
use dsh_tools::ToolCallContext;
use tokio_util::sync::CancellationToken;

use super::events::{CallView, SessionEvent};

/// The person at the other end of a session, as a front end reaches
/// them: a terminal, an editor, a script.
#[async_trait]
pub trait Person: Send + Sync + 'static {
    /// Shows `event`. It runs inline, on the task that made it (a
    /// command's output is shown as it is written): keep it quick.
    fn show(&self, event: SessionEvent);

    /// Asks `question`, until the answer or `cancel`. A person who cannot
    /// be asked (no terminal, no editor) answers
    /// [`Answer::Unanswerable`] with why.
    async fn ask(&self, question: Question<'_>, cancel: &CancellationToken) -> Answer;

    /// Which of a server's elicitations this person can answer.
    fn elicits(&self) -> Elicits {
        Elicits::default()
    }

    /// The person's answer to a server's elicitation (a form, or a URL
    /// to visit). A front end that asks a form field by field asks it
    /// with [`Form`](super::form::Form), whose rules are the session's.
    async fn elicit(&self, elicitation: &Elicitation, cancel: &CancellationToken) -> ElicitAnswer {
        let _ = (elicitation, cancel);
        ElicitAnswer::Decline
    }

    /// Lends what this front end offers a tool call of the session (an
    /// editor's buffers). Nothing, by default. It runs for every call the
    /// session's turns make, an in-process child's too.
    fn lend(&self, call: &ToolCall, cx: &mut ToolCallContext) {
        let _ = (call, cx);
    }
}

/// A question a session puts to a person.
#[derive(Debug, Clone, Copy)]
pub enum Question<'a> {
    /// May this tool call run? Answered [`Answer::Once`],
    /// [`Answer::Always`] (what `always` says, exactly), or no.
    Call {
        /// The call.
        call: &'a CallView,
        /// The answer "always" and what it would cover, in the person's
        /// words (``Always allow `cargo test` (any arguments)``).
        always: &'a str,
        /// The answer "never" and what it would cover
        /// (``Always reject `rm` ``).
        never: &'a str,
    },
    /// May a call change a file outside the session's workspace (its
    /// working directory and other directories)? Answered
    /// [`Answer::Once`] or no. Asked only of a front end that says it
    /// can be ([`Reach::outside`](super::Reach::outside)).
    Outside {
        /// The call that would change it.
        call_id: &'a str,
        /// Its tool.
        tool: &'a str,
        /// The file, where it really is.
        path: &'a std::path::Path,
    },
    /// May a server's sampling request use the model? Answered
    /// [`Answer::Once`] or no.
    Sampling {
        /// The id of the call that shows the question, where a front end
        /// shows it as one (`sampling-1`).
        call_id: &'a str,
        /// Its title: the server that asks.
        title: &'a str,
        /// What it sends the model (escaped, cut).
        described: &'a str,
        /// The request.
        request: &'a SamplingRequest,
    },
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Yes, this once.
    Once,
    /// Yes, and for what the question said "always" covers, for the rest
    /// of the session.
    Always,
    /// No.
    No,
    /// No, and for what the question said "always reject" covers.
    Never,
    /// The question was withdrawn before an answer (an editor cancelled
    /// its permission request).
    Withdrawn,
    /// No one could answer: why (no terminal, the request failed).
    Unanswerable(String),
}

impl Answer {
    /// The answer a typed line says: `y`/`yes`, `a`/`always`; anything
    /// else is no.
    pub fn of_line(line: &str) -> Self {
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => Self::Once,
            "a" | "always" => Self::Always,
            _ => Self::No,
        }
    }

    /// Whether it allows.
    pub fn allows(&self) -> bool {
        matches!(self, Self::Once | Self::Always)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_answers_are_read_leniently_and_default_to_no() {
        assert_eq!(Answer::of_line("y\n"), Answer::Once);
        assert_eq!(Answer::of_line(" YES "), Answer::Once);
        assert_eq!(Answer::of_line("a\n"), Answer::Always);
        assert_eq!(Answer::of_line("always"), Answer::Always);
        for no in ["n\n", "", "\n", "maybe", "yy"] {
            assert_eq!(Answer::of_line(no), Answer::No, "{no:?}");
        }
    }
}
