//! What a server says for the person, handed to the host: this crate
//! prints nothing.
//!
//! A stdio server's stderr, a server's log messages, a question declined
//! unasked and what failed with a server on the way each become one
//! [`ServerLine`], already as a person is shown it (escaped, cut), and go
//! to the [`ServerOutput`] of the server's [`ServerConfig`]
//! (`with_output`). A front end shows them — dsh's writes each on its
//! stderr, `[mcp <name>] …`, the line's [`Display`](std::fmt::Display);
//! without one, they are discarded.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//!
//! use dsh_tool_mcp::{ServerConfig, ServerLine, ServerOutput, ServerSaid};
//!
//! let heard = Arc::new(Mutex::new(Vec::new()));
//! let output = ServerOutput::new({
//!     let heard = Arc::clone(&heard);
//!     move |line: ServerLine| heard.lock().unwrap().push(line.to_string())
//! });
//! let docs = ServerConfig::stdio("docs", ["docs-server"]).with_output(output.clone());
//! # let _ = docs;
//! output.say(ServerLine::declined("docs", "no one here answers it", "Sign in,\nplease."));
//! output.say(ServerLine::new("docs", ServerSaid::Stderr("up".to_owned())));
//! assert_eq!(
//!     *heard.lock().unwrap(),
//!     [
//!         "[mcp docs] asked for input, declined (no one here answers it): Sign in,\\nplease.",
//!         "[mcp docs] up",
//!     ]
//! );
//! ```
//!
//! [`ServerConfig`]: crate::ServerConfig

use std::fmt;
use std::sync::Arc;

use crate::McpLogLevel;

/// The most characters of a server's question (escaped) a declined line
/// shows.
const MAX_ASKED_CHARS: usize = 500;

/// One thing a server said for the person, by server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLine {
    /// The server's name.
    pub server: String,
    /// What it said.
    pub said: ServerSaid,
}

/// What a server said, as a person is shown it: every text here is
/// already one line, escaped and cut by this crate's rules.
///
/// Closed on purpose: a front end that shows each kind its own way is
/// told by the compiler when a kind is added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerSaid {
    /// A line of a stdio server's stderr: its bytes as UTF-8 (`�` for
    /// what is not), cut at [`MAX_STDERR_LINE`](crate::MAX_STDERR_LINE)
    /// bytes with a marker saying how much was dropped.
    Stderr(String),
    /// A log message (`notifications/message`) at or above the server's
    /// [`McpLogLevel`]: its logger's name, if any, and its text (a text
    /// message as it is, other data as JSON), both
    /// [`shown`](crate::shown).
    Log {
        /// The message's level.
        level: McpLogLevel,
        /// The logger's name.
        logger: Option<String>,
        /// The message.
        message: String,
    },
    /// A question for the person (elicitation) declined unasked: why,
    /// and the server's message ([`shown`](crate::shown), cut), so the
    /// person learns what the server wanted.
    Declined {
        /// Why no one was asked.
        why: String,
        /// The server's message.
        message: String,
    },
    /// What failed with the server while it ran, in dsh's words: a list
    /// that could not be read again, a request it refused, its stderr
    /// unreadable. The server goes on.
    Failure(String),
}

impl ServerLine {
    /// `said` by `server`.
    pub fn new(server: impl Into<String>, said: ServerSaid) -> Self {
        Self {
            server: server.into(),
            said,
        }
    }

    /// Server `server`'s question for the person, whose message is
    /// `message` (escaped and cut here), declined unasked for `why`: the
    /// line a host's front end says for every question it declines
    /// itself.
    pub fn declined(server: impl Into<String>, why: impl Into<String>, message: &str) -> Self {
        Self::new(
            server,
            ServerSaid::Declined {
                why: why.into(),
                message: crate::shown(message, MAX_ASKED_CHARS),
            },
        )
    }
}

/// The line as dsh writes it: `[mcp <name>] ` and what was said.
impl fmt::Display for ServerLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[mcp {}] {}", self.server, self.said)
    }
}

/// What was said, without the server's name: a stderr line or a failure
/// as it is, `<level>: <logger>: <message>` (`<level>: <message>` without
/// a logger), `asked for input, declined (<why>): <message>`.
impl fmt::Display for ServerSaid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stderr(line) | Self::Failure(line) => f.write_str(line),
            Self::Log {
                level,
                logger: Some(logger),
                message,
            } => write!(f, "{level}: {logger}: {message}"),
            Self::Log {
                level,
                logger: None,
                message,
            } => write!(f, "{level}: {message}"),
            Self::Declined { why, message } => {
                write!(f, "asked for input, declined ({why}): {message}")
            }
        }
    }
}

/// Where the [`ServerLine`]s of a server go: the host's to show, a
/// cheap handle to clone. The default discards them; a front end gives
/// its own ([`new`](Self::new)) to every server it starts
/// ([`ServerConfig::with_output`](crate::ServerConfig::with_output)).
///
/// It is called on the tasks that read the server (its stderr, its
/// messages), one line at a time: it should not wait long.
#[derive(Clone, Default)]
pub struct ServerOutput(Option<Arc<dyn Fn(ServerLine) + Send + Sync>>);

impl ServerOutput {
    /// Hands each line to `show`.
    pub fn new(show: impl Fn(ServerLine) + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(show)))
    }

    /// Discards every line (the default).
    pub fn discarded() -> Self {
        Self(None)
    }

    /// Whether lines are discarded.
    pub fn is_discarded(&self) -> bool {
        self.0.is_none()
    }

    /// Hands `line` to the host.
    pub fn say(&self, line: ServerLine) {
        if let Some(show) = &self.0 {
            show(line);
        }
    }

    /// Hands what `server` said to the host.
    pub(crate) fn said(&self, server: &str, said: ServerSaid) {
        if !self.is_discarded() {
            self.say(ServerLine::new(server, said));
        }
    }

    /// Hands what failed with `server` to the host.
    pub(crate) fn failed(&self, server: &str, what: impl Into<String>) {
        self.said(server, ServerSaid::Failure(what.into()));
    }
}

impl fmt::Debug for ServerOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let to = if self.is_discarded() {
            "discarded"
        } else {
            "the host"
        };
        f.debug_tuple("ServerOutput").field(&to).finish()
    }
}

/// The same sink: both discard, or both are one handle's clones.
impl PartialEq for ServerOutput {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(one), Some(other)) => Arc::ptr_eq(one, other),
            _ => false,
        }
    }
}

impl Eq for ServerOutput {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_written_as_dsh_writes_it() {
        let line = |said| ServerLine::new("docs", said).to_string();
        assert_eq!(line(ServerSaid::Stderr("up".to_owned())), "[mcp docs] up");
        let log = |logger: Option<&str>| ServerSaid::Log {
            level: McpLogLevel::Warning,
            logger: logger.map(str::to_owned),
            message: "disk low".to_owned(),
        };
        assert_eq!(line(log(Some("fs"))), "[mcp docs] warning: fs: disk low");
        assert_eq!(line(log(None)), "[mcp docs] warning: disk low");
        assert_eq!(
            line(ServerSaid::Failure(
                "its prompts could not be listed".to_owned()
            )),
            "[mcp docs] its prompts could not be listed"
        );
    }

    #[test]
    fn a_declined_question_is_escaped_and_cut() {
        let long = format!("\u{1b}[2J{}", "x".repeat(MAX_ASKED_CHARS));
        // `\u{1b}[2J` is shown in 9 characters: 491 `x` fill the rest.
        let shown = format!("\\u{{1b}}[2J{}…", "x".repeat(MAX_ASKED_CHARS - 9));
        assert_eq!(
            ServerLine::declined("docs", "why", &long).said,
            ServerSaid::Declined {
                why: "why".to_owned(),
                message: shown,
            }
        );
    }

    #[test]
    fn the_default_discards_and_equals_only_itself_or_a_clone() {
        let discarded = ServerOutput::default();
        assert!(discarded.is_discarded());
        discarded.say(ServerLine::declined("docs", "why", "ask"));
        assert_eq!(discarded, ServerOutput::discarded());
        let shown = ServerOutput::new(|_| {});
        assert!(!shown.is_discarded());
        assert_eq!(shown, shown.clone());
        assert_ne!(shown, ServerOutput::new(|_| {}));
        assert_ne!(shown, discarded);
    }
}
