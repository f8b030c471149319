//! The conversation a session's log makes: the messages the model reads,
//! with every compaction of the log applied, and how a runtime-context
//! snapshot, a summary and an elided result are worded to it.
//!
//! Both the session (`Session::messages`) and compaction (which plans on
//! the same view of the log) read it; it reads neither, so neither module
//! imports the other through it.

use crate::{Event, Message};

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
        let text = summary_with_notes(summary, &events[..view.start.min(events.len())]);
        messages.push((None, Message::User { text }));
    }
    let turn_start = events
        .iter()
        .rposition(|event| matches!(event, Event::UserMessage { .. } | Event::UserImage { .. }));
    for (position, event) in events.iter().enumerate().skip(view.start) {
        let message = match event {
            Event::UserMessage { text } => Message::User { text: text.clone() },
            Event::UserImage { image } => Message::UserImage {
                image: image.clone(),
            },
            Event::Context { text } => Message::User {
                text: context_message(text),
            },
            Event::AssistantMessage { text, thoughts } => Message::Assistant {
                text: text.clone(),
                tool_calls: Vec::new(),
                thoughts: thoughts.clone(),
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
                    thoughts: Vec::new(),
                },
            },
            Event::ToolResult {
                call_id,
                name,
                text,
                is_error,
                images,
            } => tool_message(
                call_id,
                name,
                text,
                *is_error,
                images,
                Shown::of(view, position, turn_start),
            ),
            // A note is read after the result it follows, whole even
            // where the result is elided (it still applies).
            Event::Note { text: note, .. } => match messages.last_mut() {
                Some((_, Message::Tool { text, .. })) => {
                    text.push_str("\n\n");
                    text.push_str(note);
                    continue;
                }
                _ => Message::User { text: note.clone() },
            },
            Event::StepStart { .. } | Event::TurnEnd { .. } | Event::Compacted { .. } => continue,
            // `Event` is another crate's non-exhaustive enum: a kind added
            // there is not part of the conversation until this match says
            // what the model reads of it.
            _ => continue,
        };
        messages.push((Some(position), message));
    }
    messages
}

/// The summary's message: the summary, then the notes of the events it
/// replaced, in the order they were said — what they said stays in force.
fn summary_with_notes(summary: &str, replaced: &[Event]) -> String {
    let mut text = summary_message(summary);
    for event in replaced {
        if let Event::Note { text: note, .. } = event {
            text.push_str("\n\n");
            text.push_str(note);
        }
    }
    text
}

/// How much of a tool result the model reads.
#[derive(Clone, Copy, PartialEq)]
enum Shown {
    /// Its text and its images: a result of the current turn.
    Whole,
    /// Its text and its images described: a result of an earlier turn,
    /// whose images the model has seen, so that a long session does not
    /// send every image it ever took in each request (a request's images
    /// and bytes are capped).
    Described,
    /// Its marker alone: a compaction elided it.
    Elided,
}

impl Shown {
    /// How the result at `position` is read: the current turn starts at
    /// the last user message, `turn_start`.
    fn of(view: &View<'_>, position: usize, turn_start: Option<usize>) -> Self {
        if view.is_elided(position) {
            Shown::Elided
        } else if turn_start.is_some_and(|start| position < start) {
            Shown::Described
        } else {
            Shown::Whole
        }
    }
}

/// The message a tool result makes, as much of it as `shown`.
fn tool_message(
    call_id: &str,
    name: &str,
    text: &str,
    is_error: bool,
    images: &[crate::Image],
    shown: Shown,
) -> Message {
    let (text, images) = match shown {
        Shown::Whole => (text.to_owned(), images.to_vec()),
        Shown::Described => (
            crate::Image::described_after(text, images).into_owned(),
            Vec::new(),
        ),
        Shown::Elided => (elided_result(name, text), Vec::new()),
    };
    Message::Tool {
        call_id: call_id.to_owned(),
        name: name.to_owned(),
        text,
        is_error,
        images,
    }
}

/// How the model is told that a summary stands for the conversation's
/// beginning.
pub const SUMMARY_HEADER: &str = "The conversation so far was compacted to fit the context window; \
     this summary of it replaces the earlier messages.";

/// The user message that carries a summary.
pub(crate) fn summary_message(summary: &str) -> String {
    format!("{SUMMARY_HEADER}\n\n{summary}")
}

/// How many lines of an elided result the marker keeps.
pub const ELIDED_LINES: usize = 5;

/// How many bytes of an elided result the marker keeps at most.
pub const ELIDED_BYTES: usize = 400;

/// What the model reads in place of an elided tool result: the tool, the
/// result's size, and its first lines (at most [`ELIDED_LINES`] lines and
/// [`ELIDED_BYTES`] bytes). A function of the result alone, so the
/// request stays byte for byte the same from step to step.
///
/// ```
/// use dsh_agent_loop::elided_result;
///
/// let result: String = (1..=40).map(|line| format!("{line}\tlet x = {line};\n")).collect();
/// let marker = elided_result("read", &result);
/// assert!(marker.starts_with(&format!(
///     "[elided by compaction: the `read` result of {} bytes, 40 lines;",
///     result.len()
/// )));
/// assert!(marker.ends_with("\n1\tlet x = 1;\n2\tlet x = 2;\n3\tlet x = 3;\n4\tlet x = 4;\n5\tlet x = 5;"));
/// ```
pub fn elided_result(tool: &str, text: &str) -> String {
    let lines = text.lines().count();
    let mut head = String::new();
    for line in text.lines().take(ELIDED_LINES) {
        if head.len() + line.len() + 1 > ELIDED_BYTES {
            let room = ELIDED_BYTES.saturating_sub(head.len());
            let cut = (0..=room.min(line.len()))
                .rev()
                .find(|&at| line.is_char_boundary(at))
                .unwrap_or(0);
            head.push_str(&line[..cut]);
            break;
        }
        if !head.is_empty() {
            head.push('\n');
        }
        head.push_str(line);
    }
    format!(
        "[elided by compaction: the `{tool}` result of {} bytes, {lines} lines; \
         its first lines follow — call the tool again for the rest]\n{head}",
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CompactionTrigger, ToolCall, TurnEndReason};

    /// A turn that read `file` and was told `note` after the result.
    fn turn(call: &str, note: &str) -> Vec<Event> {
        vec![
            Event::UserMessage { text: "go".into() },
            Event::StepStart { step: 1 },
            Event::AssistantMessage {
                text: String::new(),
                thoughts: Vec::new(),
            },
            Event::ToolCall {
                call: ToolCall::new(call, "read", "{}"),
            },
            Event::ToolResult {
                call_id: call.into(),
                name: "read".into(),
                text: "contents".into(),
                is_error: false,
                images: Vec::new(),
            },
            Event::Note {
                call_id: call.into(),
                source: format!("{note}.mdc"),
                trigger: "src/lib.rs".into(),
                about: "applied".into(),
                text: note.into(),
            },
            Event::TurnEnd {
                reason: TurnEndReason::Completed,
                error: None,
            },
        ]
    }

    fn compacted(elided: Vec<usize>, summary: Option<&str>, replaced: usize) -> Event {
        Event::Compacted {
            trigger: CompactionTrigger::Request,
            before_tokens: 10,
            after_tokens: 5,
            window: None,
            elided,
            summary: summary.map(str::to_owned),
            replaced,
        }
    }

    #[test]
    fn a_note_follows_its_result_and_outlives_its_elision_and_the_summary() {
        let mut events = turn("c1", "RULE ONE");
        let tool_text = |messages: &[Message]| match &messages[2] {
            Message::Tool { text, .. } => text.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(tool_text(&messages_of(&events)), "contents\n\nRULE ONE");
        // Elided, the result is a marker; the note still applies.
        events.push(compacted(vec![4], None, 0));
        let elided = tool_text(&messages_of(&events));
        assert!(
            elided.ends_with("\n\nRULE ONE") && !elided.starts_with("contents"),
            "{elided}"
        );
        // Summarized away, it is said again after the summary.
        events.push(compacted(Vec::new(), Some("we read"), 8));
        events.extend(turn("c2", "RULE TWO"));
        let messages = messages_of(&events);
        let Message::User { text } = &messages[0] else {
            panic!("{messages:?}");
        };
        assert!(text.ends_with("we read\n\nRULE ONE"), "{text}");
        assert_eq!(
            (messages.iter())
                .filter(|message| format!("{message:?}").contains("RULE ONE"))
                .count(),
            1
        );
        assert_eq!(tool_text(&messages[1..]), "contents\n\nRULE TWO");
    }
}
