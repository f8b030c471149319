//! A session's log: the events the loop appends, in the form a store
//! keeps them (JSON tagged by `type`).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::ToolCall;

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
    /// An image the user attached to the input before it, recorded after
    /// the [`UserMessage`](Self::UserMessage) it belongs to.
    UserImage {
        /// The image.
        image: crate::Image,
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
    /// The model's answer text (empty when it only called tools), and
    /// what it thought before it: a front end shows the thoughts first,
    /// as they streamed.
    AssistantMessage {
        /// The text.
        text: String,
        /// What the model thought before it answered, in order; empty
        /// without extended thinking or reasoning (and left out of the
        /// stored JSON then, so a log without thoughts reads as before).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        thoughts: Vec<crate::Thought>,
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
        /// Images the tool returned, after its text (none in a log
        /// written before tools returned images).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<crate::Image>,
    },
    /// What the host adds to the tool result before it: an instruction
    /// that applies from here on (a project rule whose paths the call
    /// touched). The model reads its `text` after the result's, once; a
    /// compaction that summarizes it away says it again after the summary,
    /// so what was said stays in force.
    Note {
        /// The id of the call whose result it follows.
        call_id: String,
        /// What it comes from, one note per source and session (a rule
        /// file's path from the project root): a session that holds a
        /// note from it is not sent another.
        source: String,
        /// What in the call brought it (the file it touched, from the
        /// project root).
        trigger: String,
        /// One line for a person: what applied, and why.
        about: String,
        /// What the model reads.
        text: String,
    },
    /// The turn is over.
    TurnEnd {
        /// Why.
        reason: TurnEndReason,
        /// What went wrong, when the reason is not `Completed`.
        error: Option<String>,
    },
    /// The conversation was compacted (see `dsh_agent_loop::compaction`):
    /// from here on the model reads the [`elided`](Self::Compacted::elided)
    /// tool results as short markers and, with a summary, the summary in
    /// place of the log's first [`replaced`](Self::Compacted::replaced)
    /// events. Nothing is deleted: the events it stands for stay in the
    /// log, and the loop's `Session::messages` applies every compaction
    /// to them, so a store that records this event like any other, in
    /// order, reloads exactly the conversation the model read.
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
    /// use dsh_agent_types::{Event, NOT_RUN};
    ///
    /// let refused = Event::ToolResult {
    ///     call_id: "c1".into(),
    ///     name: "bash".into(),
    ///     text: format!("{NOT_RUN}the user refused"),
    ///     is_error: true,
    ///     images: Vec::new(),
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
    /// A request reached the agent's budget (the threshold of the loop's
    /// `ContextBudget`).
    Budget,
    /// The user asked (`/compact`).
    Request,
}
