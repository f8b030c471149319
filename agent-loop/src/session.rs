//! Sessions: an id, an optional working directory, and an append-only log.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::budget::KnownSize;
use crate::compaction::{elided_result, summary_message};
use crate::id::string_id;
use crate::{Message, ToolCall};

string_id! {
    /// The id of a session: unique across processes when generated.
    pub struct SessionId;
}

impl SessionId {
    /// A fresh id, a random (v4) UUID: no other process's session has it,
    /// so what an API keys by it (OpenAI's `prompt_cache_key`) is this
    /// session's alone, and a store can keep it.
    pub fn generate() -> Self {
        Self::new(uuid::Uuid::new_v4().to_string())
    }
}

/// Why a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TurnEndReason {
    /// The model answered without calling tools.
    Completed,
    /// The turn failed: the prompt did not render, the model adapter
    /// failed, something panicked, or the step limit was reached.
    Error,
    /// The turn was cancelled.
    Cancelled,
}

impl fmt::Display for TurnEndReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Completed => "completed",
            Self::Error => "error",
            Self::Cancelled => "cancelled",
        })
    }
}

/// One entry of a session's log.
///
/// A turn is a [`UserMessage`](Self::UserMessage), then for each step a
/// [`StepStart`](Self::StepStart), the model's
/// [`AssistantMessage`](Self::AssistantMessage), its
/// [`ToolCall`](Self::ToolCall)s and their [`ToolResult`](Self::ToolResult)s,
/// and finally one [`TurnEnd`](Self::TurnEnd). Every tool call gets a
/// result, also when the turn is cancelled or fails.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// The user's input that starts a turn.
    UserMessage {
        /// The text.
        text: String,
    },
    /// A step begins: the loop assembles and renders the prompt, then asks
    /// the model.
    StepStart {
        /// The step's number within its turn, from 1.
        step: u32,
    },
    /// A snapshot of the runtime context, appended before a step when it
    /// differs from the last one (empty: the context was cleared). The
    /// model reads it as a user message at this point of the conversation;
    /// the system prompt never carries it.
    Context {
        /// The rendered contexts (`render_context`), empty when none is
        /// left.
        text: String,
    },
    /// The model's answer text (empty when it only called tools).
    AssistantMessage {
        /// The text.
        text: String,
    },
    /// A tool call of the answer before it.
    ToolCall {
        /// The call.
        call: ToolCall,
    },
    /// The result of a tool call.
    ToolResult {
        /// The id of the call this answers.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The result text.
        text: String,
        /// Whether the call failed.
        is_error: bool,
    },
    /// The turn is over.
    TurnEnd {
        /// Why.
        reason: TurnEndReason,
        /// What went wrong, when the reason is not `Completed`.
        error: Option<String>,
    },
    /// The conversation was compacted (see [`crate::compaction`]): from
    /// here on the model reads the [`elided`](Self::Compacted::elided)
    /// tool results as short markers and, with a summary, the summary in
    /// place of the log's first [`replaced`](Self::Compacted::replaced)
    /// events. Nothing is deleted: the events it stands for stay in the
    /// log, and [`Session::messages`] applies every compaction to them,
    /// so a store that records this event like any other, in order,
    /// reloads exactly the conversation the model read.
    Compacted {
        /// Why: the budget, or the user's request.
        trigger: CompactionTrigger,
        /// The request's tokens before compaction, as the loop counts them.
        before_tokens: u64,
        /// The request's tokens after it (with the runtime context
        /// re-emitted, if the summary replaced it).
        after_tokens: u64,
        /// The agent's context window, if known.
        window: Option<u64>,
        /// The positions in the log of the `ToolResult` events this
        /// compaction elided.
        elided: Vec<usize>,
        /// The model's summary of the replaced events, if it took one.
        summary: Option<String>,
        /// With a summary, how many of the log's first events it replaces
        /// (each a whole turn, and every earlier summary); 0 without.
        replaced: usize,
    },
}

/// How the result of a call that never ran begins: the approval refused
/// it, the agent lacked the tool, or the turn ended before it. The model
/// reads why after it; a front end replaying a log learns from it
/// ([`Event::never_ran`]) that the call never started.
pub const NOT_RUN: &str = "not run: ";

impl Event {
    /// Whether this is the result of a call that never started (its text
    /// begins with [`NOT_RUN`]); `false` for every other event.
    ///
    /// ```
    /// use dsh_agent_loop::{Event, NOT_RUN};
    ///
    /// let refused = Event::ToolResult {
    ///     call_id: "c1".into(),
    ///     name: "bash".into(),
    ///     text: format!("{NOT_RUN}the user refused"),
    ///     is_error: true,
    /// };
    /// assert!(refused.never_ran());
    /// ```
    pub fn never_ran(&self) -> bool {
        matches!(self, Self::ToolResult { text, is_error: true, .. } if text.starts_with(NOT_RUN))
    }
}

/// Why a conversation was compacted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CompactionTrigger {
    /// A request reached the agent's budget
    /// ([`threshold`](crate::ContextBudget::threshold)).
    Budget,
    /// The user asked (`/compact`).
    Request,
}

/// One conversation of one agent: an id, an optional working directory, and
/// an append-only log of [`Event`]s.
///
/// Only the loop appends, so the log is always a well-formed transcript.
///
/// ```
/// use dsh_agent_loop::Session;
/// use std::path::Path;
///
/// let session = Session::new().with_cwd("/work/project");
/// assert_eq!(session.cwd(), Some(Path::new("/work/project")));
/// assert!(session.events().is_empty());
/// ```
#[derive(Clone, Debug)]
pub struct Session {
    id: SessionId,
    cwd: Option<PathBuf>,
    events: Vec<Event>,
    recorder: Option<Recorder>,
    /// What the API (or a count) last said the session's request took.
    pub(crate) known_size: Option<KnownSize>,
}

/// Where a session's events go as they are appended (a session store).
#[derive(Clone)]
struct Recorder(Arc<dyn Fn(&Event) + Send + Sync>);

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Recorder")
    }
}

impl Default for Session {
    fn default() -> Self {
        Self::new()
    }
}

impl Session {
    /// A new session with a [generated](SessionId::generate) id, no working
    /// directory and an empty log.
    pub fn new() -> Self {
        Self::with_id(SessionId::generate())
    }

    /// A new session with the id given.
    pub fn with_id(id: impl Into<SessionId>) -> Self {
        Self {
            id: id.into(),
            cwd: None,
            events: Vec::new(),
            recorder: None,
            known_size: None,
        }
    }

    /// Sets the working directory: the value of the prompt variable `cwd`,
    /// and the directory tools resolve relative paths against.
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Starts the log with `history`: the completed turns of another
    /// session, as a forked child sees them.
    pub fn with_history(mut self, history: impl IntoIterator<Item = Event>) -> Self {
        self.events.extend(history);
        self
    }

    /// Passes every event appended from now on to `recorder`, right
    /// before it joins the log — where a session store writes it, so a
    /// crash loses at most what the step in flight had not yet appended.
    /// Events already in the log ([`with_history`](Self::with_history))
    /// are not passed. A clone of the session records into the same
    /// recorder. It runs inline: keep it quick and free of panics.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    ///
    /// use dsh_agent_loop::{Event, Session};
    ///
    /// let written = Arc::new(Mutex::new(Vec::new()));
    /// let sink = Arc::clone(&written);
    /// let session = Session::new()
    ///     .with_recorder(move |event: &Event| sink.lock().unwrap().push(event.clone()))
    ///     // Restored from the store: already written, so not passed again.
    ///     .with_history([Event::UserMessage { text: "earlier".into() }]);
    /// assert_eq!(session.events().len(), 1);
    /// assert!(written.lock().unwrap().is_empty());
    /// ```
    pub fn with_recorder(mut self, recorder: impl Fn(&Event) + Send + Sync + 'static) -> Self {
        self.recorder = Some(Recorder(Arc::new(recorder)));
        self
    }

    /// The session's id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The session's working directory, if it has one.
    pub fn cwd(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    /// The log, oldest first.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The last runtime-context snapshot the conversation carries, if any
    /// was ever sent (empty when it was cleared) and no compaction's
    /// summary has replaced it since.
    pub fn context(&self) -> Option<&str> {
        let start = View::of(&self.events).start;
        self.events[start..]
            .iter()
            .rev()
            .find_map(|event| match event {
                Event::Context { text } => Some(text.as_str()),
                _ => None,
            })
    }

    /// The conversation as a model sees it: user messages, assistant
    /// messages with their tool calls, and tool results, in log order.
    pub fn messages(&self) -> Vec<Message> {
        messages_of(&self.events)
    }

    pub(crate) fn push(&mut self, event: Event) {
        if let Some(Recorder(recorder)) = &self.recorder {
            recorder(&event);
        }
        self.events.push(event);
    }
}

/// How the model is told a runtime-context snapshot: what it is, that it
/// replaces earlier ones, then the parts; or that none is left.
pub const CONTEXT_HEADER: &str =
    "Current runtime context. It supersedes earlier runtime-context snapshots.";

/// What the model is told when the runtime context becomes empty.
pub const CONTEXT_CLEARED: &str =
    "The runtime context is now empty: earlier runtime-context snapshots no longer apply.";

/// The user message that carries a snapshot.
fn context_message(text: &str) -> String {
    if text.is_empty() {
        CONTEXT_CLEARED.to_owned()
    } else {
        format!("{CONTEXT_HEADER}\n\n{text}")
    }
}

/// What the compactions of a log make of it: where the conversation the
/// model reads starts, the summary that stands for what comes before,
/// and which tool results it reads as markers.
pub(crate) struct View<'a> {
    /// The position of the first event the model still reads.
    pub(crate) start: usize,
    /// The summary of the events before `start`.
    pub(crate) summary: Option<&'a str>,
    /// The positions of elided tool results, sorted.
    pub(crate) elided: Vec<usize>,
}

impl<'a> View<'a> {
    /// The view of `events`: the last summary wins (it summarized every
    /// earlier one), elisions add up.
    pub(crate) fn of(events: &'a [Event]) -> Self {
        let mut view = View {
            start: 0,
            summary: None,
            elided: Vec::new(),
        };
        for event in events {
            if let Event::Compacted {
                elided,
                summary,
                replaced,
                ..
            } = event
            {
                view.elided.extend_from_slice(elided);
                if let Some(summary) = summary {
                    view.summary = Some(summary);
                    view.start = (*replaced).min(events.len());
                }
            }
        }
        view.elided.sort_unstable();
        view.elided.dedup();
        view
    }

    pub(crate) fn is_elided(&self, position: usize) -> bool {
        self.elided.binary_search(&position).is_ok()
    }
}

/// The messages a log holds, compactions applied.
pub(crate) fn messages_of(events: &[Event]) -> Vec<Message> {
    positioned_messages(events, &View::of(events))
        .into_iter()
        .map(|(_, message)| message)
        .collect()
}

/// The messages `view` makes of a log, each with the position of the
/// event it starts at (`None`: the summary).
pub(crate) fn positioned_messages(
    events: &[Event],
    view: &View<'_>,
) -> Vec<(Option<usize>, Message)> {
    let mut messages = Vec::new();
    if let Some(summary) = view.summary {
        messages.push((
            None,
            Message::User {
                text: summary_message(summary),
            },
        ));
    }
    for (position, event) in events.iter().enumerate().skip(view.start) {
        let message = match event {
            Event::UserMessage { text } => Message::User { text: text.clone() },
            Event::Context { text } => Message::User {
                text: context_message(text),
            },
            Event::AssistantMessage { text } => Message::Assistant {
                text: text.clone(),
                tool_calls: Vec::new(),
            },
            Event::ToolCall { call } => match messages.last_mut() {
                Some((_, Message::Assistant { tool_calls, .. })) => {
                    tool_calls.push(call.clone());
                    continue;
                }
                // A call always follows its answer in a log the loop wrote;
                // a seeded history may not, so give it an answer of its own.
                _ => Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![call.clone()],
                },
            },
            Event::ToolResult {
                call_id,
                name,
                text,
                is_error,
            } => Message::Tool {
                call_id: call_id.clone(),
                name: name.clone(),
                text: if view.is_elided(position) {
                    elided_result(name, text)
                } else {
                    text.clone()
                },
                is_error: *is_error,
            },
            Event::StepStart { .. } | Event::TurnEnd { .. } | Event::Compacted { .. } => continue,
        };
        messages.push((Some(position), message));
    }
    messages
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_calls_join_the_answer_before_them() {
        let session = Session::new().with_history([
            Event::UserMessage { text: "hi".into() },
            Event::StepStart { step: 1 },
            Event::AssistantMessage {
                text: "looking".into(),
            },
            Event::ToolCall {
                call: ToolCall::new("c1", "read", "{}"),
            },
            Event::ToolCall {
                call: ToolCall::new("c2", "bash", "{}"),
            },
            Event::ToolResult {
                call_id: "c1".into(),
                name: "read".into(),
                text: "1\tx".into(),
                is_error: false,
            },
            Event::TurnEnd {
                reason: TurnEndReason::Completed,
                error: None,
            },
        ]);
        let messages = session.messages();
        assert_eq!(messages.len(), 3);
        assert_eq!(
            messages[1],
            Message::Assistant {
                text: "looking".into(),
                tool_calls: vec![
                    ToolCall::new("c1", "read", "{}"),
                    ToolCall::new("c2", "bash", "{}")
                ],
            }
        );
    }

    #[test]
    fn generated_ids_differ() {
        assert_ne!(Session::new().id(), Session::new().id());
    }
}
