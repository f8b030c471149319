//! The loop's events of one session, told by its [`Narrator`].

use dsh_agent_loop::{LoopEvent, LoopObserver};

use super::events::Narrator;

/// Observes the loop for one session: what its turns do becomes its
/// person's [`SessionEvent`](super::SessionEvent)s; an in-process
/// child's steps are not the person's to follow.
pub(crate) struct SessionObserver(pub(crate) Narrator);

impl LoopObserver for SessionObserver {
    fn observe(&self, event: LoopEvent<'_>) {
        let narrator = &self.0;
        match event {
            LoopEvent::Step(_) => {}
            LoopEvent::Response(response) => {
                if narrator.is_for(&response.session.id) {
                    narrator.answered(response);
                }
            }
            LoopEvent::Recorded { session, event } => {
                if narrator.is_for(session) {
                    narrator.recorded(event);
                }
            }
            LoopEvent::Text { session, piece } => {
                if narrator.is_for(session) {
                    narrator.text(piece);
                }
            }
            LoopEvent::Thought { session, piece } => {
                if narrator.is_for(session) {
                    narrator.thought(piece);
                }
            }
            LoopEvent::Progress {
                session,
                call,
                text,
            } => {
                if narrator.is_for(session) {
                    narrator.progress(call, text);
                }
            }
        }
    }
}
