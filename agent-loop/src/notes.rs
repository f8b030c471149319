//! What a host adds to a tool call's result: [`Note`]s the model reads
//! right after it, recorded in the session as [`Event::Note`]s.
//!
//! The loop asks its [`ResultNotes`] once per call that ran, after the
//! result is recorded, with the session's log so far: a host that keeps
//! no state of its own still knows what the session was told (a loaded or
//! resumed session's log holds its notes). What a note says reaches the
//! model at the conversation's tail, never in the system prompt, so the
//! cached prefix stays byte for byte what it was.

use dsh_agent_types::{Event, ToolCall};
use dsh_tools::ToolResult;

use crate::SessionFacts;

/// One note for the model, after a call's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// What it comes from (a rule file's path from the project root): a
    /// session is sent one note per source.
    pub source: String,
    /// What in the call brought it (the file it touched, from the project
    /// root).
    pub trigger: String,
    /// One line for a person: what applied, and why.
    pub about: String,
    /// What the model reads.
    pub text: String,
}

/// Decides the notes a call's result brings: asked once per call that
/// ran, with the session's log so far (so a loaded session's notes count);
/// what a note says reaches the model at the conversation's tail, never in
/// the system prompt.
pub trait ResultNotes: Send + Sync {
    /// The notes for `call`'s `result` in `session`, whose log so far is
    /// `events` (up to the call, its result not yet recorded). Runs inline after each call: keep
    /// it quick and free of panics.
    fn notes(
        &self,
        session: &SessionFacts,
        call: &ToolCall,
        result: &ToolResult,
        events: &[Event],
    ) -> Vec<Note>;
}

/// Whether `events` hold a note from `source`.
pub fn noted(events: &[Event], source: &str) -> bool {
    events
        .iter()
        .any(|event| matches!(event, Event::Note { source: from, .. } if from == source))
}
