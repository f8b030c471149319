//! `LoopEvent`, `LoopObserver`: what the loop shows while it runs, and to
//! whom.

use std::sync::Arc;

use crate::{Event, SessionId, StepPrompt, StepResponse, ToolCall};

/// One thing the loop shows its [observers](LoopObserver) as it happens.
///
/// The enum is closed on purpose: an observer matches every variant (or
/// says with `_` that it ignores the rest), so a variant added here fails
/// to compile in each front end until it decides what to show of it.
///
/// Each variant names the session it comes from: one loop runs the turns
/// of every session of a process, an in-process child's included, so an
/// observer that speaks for one session filters by it.
#[derive(Clone, Copy, Debug)]
pub enum LoopEvent<'a> {
    /// A step is about to ask the model: exactly the prompt it sends (the
    /// assembly, the rendered system prompt, the messages), after any
    /// compaction. What a trace measures.
    Step(&'a StepPrompt<'a>),
    /// The model's whole answer to a step's request, before the loop
    /// records it and runs its tool calls, with the
    /// [`usage`](crate::ModelResponse::usage) the API reported, if any.
    /// Paired with the [`Step`](Self::Step) of the same session and step,
    /// it gives each request's cost.
    Response(&'a StepResponse<'a>),
    /// An event was appended to `session`'s log — and so to its recorder,
    /// if any, before anyone sees it: what a front end shows is already
    /// recorded.
    Recorded {
        /// The session whose log has the event.
        session: &'a SessionId,
        /// The event, as appended.
        event: &'a Event,
    },
    /// A piece of the model's answer text, as it arrives and before the
    /// whole answer is recorded as an
    /// [`AssistantMessage`](Event::AssistantMessage). With an adapter
    /// that does not stream, the one piece is the whole text.
    Text {
        /// The session whose step is answered.
        session: &'a SessionId,
        /// The piece.
        piece: &'a str,
    },
    /// A piece of what the model thinks before it answers (extended
    /// thinking, reasoning), as it arrives and before the answer is
    /// recorded with its [`thoughts`](Event::AssistantMessage).
    Thought {
        /// The session whose step is answered.
        session: &'a SessionId,
        /// The piece.
        piece: &'a str,
    },
    /// A running tool call reported its progress
    /// ([`ToolCallContext::report_progress`](dsh_tools::ToolCallContext::report_progress)).
    Progress {
        /// The session whose turn made the call.
        session: &'a SessionId,
        /// The call that reports.
        call: &'a ToolCall,
        /// What it says it is doing.
        text: &'a str,
    },
}

/// Sees everything a loop shows, as it happens: a front end's display, a
/// host's trace. Installed with
/// [`AgentLoop::observed_by`](crate::AgentLoop::observed_by).
///
/// The loop calls [`observe`](Self::observe) inline, from the task that
/// runs the turn (a [`Progress`](LoopEvent::Progress) from wherever the
/// tool reports it), so it should be quick. A panic inside it, on a
/// [`Step`](LoopEvent::Step) or a [`Response`](LoopEvent::Response), fails
/// that turn like a panicking tool; on the others it is not contained, so
/// keep those free of panics.
///
/// A closure taking a [`LoopEvent`] is an observer:
///
/// ```
/// use std::sync::Arc;
///
/// use dsh_agent_loop::{LoopEvent, LoopObserver};
///
/// let shown: Arc<dyn LoopObserver> = Arc::new(|event: LoopEvent<'_>| {
///     if let LoopEvent::Text { piece, .. } = event {
///         print!("{piece}");
///     }
/// });
/// # let _ = shown;
/// ```
pub trait LoopObserver: Send + Sync {
    /// Sees `event`.
    fn observe(&self, event: LoopEvent<'_>);
}

impl<F> LoopObserver for F
where
    F: Fn(LoopEvent<'_>) + Send + Sync,
{
    fn observe(&self, event: LoopEvent<'_>) {
        self(event);
    }
}

/// A loop's observers, in the order they were installed; cheap to clone
/// into what outlives a borrow of the loop (a tool call's progress).
#[derive(Clone, Default)]
pub(crate) struct Observers(Arc<[Arc<dyn LoopObserver>]>);

impl Observers {
    /// These observers, then `observer`.
    pub(crate) fn and(&self, observer: Arc<dyn LoopObserver>) -> Self {
        Self(self.0.iter().cloned().chain([observer]).collect())
    }

    /// Whether there is no one to show anything to: then the loop builds
    /// nothing to show.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Shows `event` to each observer, in order.
    pub(crate) fn show(&self, event: LoopEvent<'_>) {
        for observer in self.0.iter() {
            observer.observe(event);
        }
    }
}
