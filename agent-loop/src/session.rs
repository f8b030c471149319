//! Sessions: an id, an optional working directory, and an append-only log.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::budget::KnownSize;
use crate::history::{View, messages_of};
use crate::{Event, Message, SessionId};

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
    /// The prefix (`system.len()`, tool count) whose system prompt and
    /// tools alone reach the agent's compaction threshold: compaction
    /// cannot help while it stays, so it is said once and not tried again.
    pub(crate) over_budget_prefix: Option<(usize, usize)>,
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
            over_budget_prefix: None,
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

    /// A copy of the session that records nothing: to try what an event
    /// would do to it.
    pub(crate) fn unrecorded(&self) -> Self {
        Self {
            recorder: None,
            ..self.clone()
        }
    }

    pub(crate) fn push(&mut self, event: Event) {
        if let Some(Recorder(recorder)) = &self.recorder {
            recorder(&event);
        }
        self.events.push(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolCall, TurnEndReason};

    #[test]
    fn tool_calls_join_the_answer_before_them() {
        let session = Session::new().with_history([
            Event::UserMessage { text: "hi".into() },
            Event::StepStart { step: 1 },
            Event::AssistantMessage {
                text: "looking".into(),
                thoughts: Vec::new(),
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
                images: Vec::new(),
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
                thoughts: Vec::new(),
            }
        );
    }

    /// A turn whose one call, `shot`, returned an image: the image, and
    /// the turn's events.
    fn a_turn_with_a_shot() -> (crate::Image, [Event; 3]) {
        let pixel = crate::Image {
            mime_type: "image/png".into(),
            data: "iVBORw0K".into(),
        };
        let turn = [
            Event::UserMessage { text: "hi".into() },
            Event::ToolCall {
                call: ToolCall::new("c1", "shot", "{}"),
            },
            Event::ToolResult {
                call_id: "c1".into(),
                name: "shot".into(),
                text: "the screen:".into(),
                is_error: false,
                images: vec![pixel.clone()],
            },
        ];
        (pixel, turn)
    }

    #[test]
    fn a_results_images_are_read_until_a_compaction_elides_it() {
        let (pixel, history) = a_turn_with_a_shot();
        let images = |session: &Session| match session.messages().last() {
            Some(Message::Tool { images, .. }) => Some(images.clone()),
            _ => None,
        };
        let session = Session::new().with_history(history.clone());
        assert_eq!(images(&session), Some(vec![pixel]));
        let compacted =
            Session::new().with_history(history.into_iter().chain([Event::Compacted {
                trigger: crate::CompactionTrigger::Budget,
                before_tokens: 2_000,
                after_tokens: 100,
                window: None,
                elided: vec![2],
                summary: None,
                replaced: 0,
            }]));
        assert_eq!(images(&compacted), Some(Vec::new()));
    }

    #[test]
    fn a_results_images_are_sent_in_its_turn_and_described_after_it() {
        let (pixel, turn) = a_turn_with_a_shot();
        let result = |session: &Session| {
            session
                .messages()
                .into_iter()
                .find_map(|message| match message {
                    Message::Tool { text, images, .. } => Some((text, images)),
                    _ => None,
                })
        };
        let current = Session::new().with_history(turn.clone());
        assert_eq!(
            result(&current),
            Some(("the screen:".to_owned(), vec![pixel.clone()]))
        );
        let next = Session::new().with_history(turn.into_iter().chain([Event::UserMessage {
            text: "and now?".into(),
        }]));
        let described = crate::Image::described_after("the screen:", &[pixel]).into_owned();
        assert_eq!(result(&next), Some((described, Vec::new())));
        // What is sent is what is counted: the described text, no image.
        let budget = crate::ContextBudget::for_model("gpt-4o", None, None);
        let (current, next) = (current.messages(), next.messages());
        assert!(
            budget.count_message(&next[2]) < budget.count_message(&current[2]),
            "an older result's image is no longer counted"
        );
    }

    #[test]
    fn a_results_images_count_image_tokens_each() {
        let budget = crate::ContextBudget::for_model("gpt-4o", None, None);
        let result = |images| Message::Tool {
            call_id: "c1".into(),
            name: "shot".into(),
            text: "the screen:".into(),
            is_error: false,
            images,
        };
        let pixel = crate::Image {
            mime_type: "image/png".into(),
            data: "iVBORw0K".into(),
        };
        let plain = budget.count_message(&result(Vec::new()));
        let two = budget.count_message(&result(vec![pixel.clone(), pixel]));
        assert_eq!(two - plain, 2 * crate::IMAGE_TOKENS);
    }

    #[test]
    fn generated_ids_differ() {
        assert_ne!(Session::new().id(), Session::new().id());
    }
}
