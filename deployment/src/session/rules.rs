//! The project's path rules, delivered by the session's loop: after a
//! call of the session's own that read or changed a file (`read`, `edit`,
//! `write`: a tool of kind read or edit, with the places it touched), the
//! path rules that file fires and the session was not told yet
//! ([`Rules::notes_for`]).

use std::path::PathBuf;

use dsh_agent_loop::{Event, Note, ResultNotes, SessionFacts, ToolCall};
use dsh_tools::{ToolKind, ToolResult};

use super::events::Narrator;
use crate::facts::rules::Rules;

/// A session's path rules, as its loop's [`ResultNotes`].
pub(crate) struct SessionRules {
    pub(crate) rules: Rules,
    /// The bytes of rule text a session may be sent: the instruction
    /// budget (`max_bytes` of `[instructions]`).
    pub(crate) budget: usize,
    pub(crate) narrator: Narrator,
}

impl ResultNotes for SessionRules {
    fn notes(
        &self,
        session: &SessionFacts,
        call: &ToolCall,
        result: &ToolResult,
        events: &[Event],
    ) -> Vec<Note> {
        // An in-process child's calls are its own session's.
        if result.is_error || !self.narrator.is_for(&session.id) {
            return Vec::new();
        }
        let view = self.narrator.view(call);
        if !matches!(view.kind, ToolKind::Read | ToolKind::Edit) {
            return Vec::new();
        }
        let touched: Vec<PathBuf> = view.locations.into_iter().map(|(path, _)| path).collect();
        self.rules.notes_for(&touched, events, self.budget)
    }
}
