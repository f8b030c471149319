//! A log cut off by a crash, made whole again.
//!
//! The loop answers every tool call and ends every turn, so a log it wrote
//! to the end is well formed. A process killed mid-turn leaves a turn with
//! no end, and perhaps calls with no result. The model must learn those
//! calls were interrupted, and the APIs require a result for every call:
//! each open call gets a failed result saying so, and the turn an end.

use std::collections::HashSet;

use dsh_agent_types::{Event, TurnEndReason};

/// The result text of a call a crash interrupted.
pub const INTERRUPTED_CALL: &str = "not finished: dsh stopped (it was killed or crashed) while \
     this call ran; whatever it did before that may or may not have happened";

/// The error of a turn a crash interrupted.
pub const INTERRUPTED_TURN: &str = "interrupted: dsh stopped before the turn ended";

/// Makes `events` whole: before each turn that starts while another is
/// still open, and at the end, closes the open turn. Returns the events
/// added at the end (the ones a resumed session writes back).
pub(crate) fn close_open_turns(events: &mut Vec<Event>) -> Vec<Event> {
    let mut whole = Vec::with_capacity(events.len());
    let mut open = OpenTurn::default();
    for event in events.drain(..) {
        if matches!(event, Event::UserMessage { .. }) {
            whole.extend(open.close());
        }
        open.see(&event);
        whole.push(event);
    }
    let tail = open.close();
    whole.extend(tail.iter().cloned());
    *events = whole;
    tail
}

/// The turn being read: whether one is open, and its calls still waiting
/// for a result, in order.
#[derive(Default)]
struct OpenTurn {
    open: bool,
    calls: Vec<(String, String)>,
    answered: HashSet<String>,
}

impl OpenTurn {
    fn see(&mut self, event: &Event) {
        match event {
            Event::UserMessage { .. } => self.open = true,
            Event::ToolCall { call } => self.calls.push((call.id.clone(), call.name.clone())),
            Event::ToolResult { call_id, .. } => {
                self.answered.insert(call_id.clone());
            }
            Event::TurnEnd { .. } => *self = Self::default(),
            _ => {}
        }
    }

    /// The events that close the turn, if one is open.
    fn close(&mut self) -> Vec<Event> {
        let turn = std::mem::take(self);
        if !turn.open {
            return Vec::new();
        }
        let mut closing: Vec<Event> = turn
            .calls
            .into_iter()
            .filter(|(id, _)| !turn.answered.contains(id))
            .map(|(call_id, name)| Event::ToolResult {
                call_id,
                name,
                text: INTERRUPTED_CALL.to_owned(),
                is_error: true,
                images: Vec::new(),
            })
            .collect();
        closing.push(Event::TurnEnd {
            reason: TurnEndReason::Error,
            error: Some(INTERRUPTED_TURN.to_owned()),
        });
        closing
    }
}

#[cfg(test)]
mod tests {
    use dsh_agent_types::ToolCall;

    use super::*;

    fn user(text: &str) -> Event {
        Event::UserMessage { text: text.into() }
    }

    #[test]
    fn a_whole_log_is_left_as_it_is() {
        let mut events = vec![
            user("hi"),
            Event::AssistantMessage {
                text: "yo".into(),
                thoughts: Vec::new(),
            },
            Event::TurnEnd {
                reason: TurnEndReason::Completed,
                error: None,
            },
        ];
        let before = events.clone();
        assert!(close_open_turns(&mut events).is_empty());
        assert_eq!(events, before);
    }

    #[test]
    fn open_calls_get_a_failed_result_and_the_turn_an_end() {
        let mut events = vec![
            user("go"),
            Event::StepStart { step: 1 },
            Event::AssistantMessage {
                text: "running".into(),
                thoughts: Vec::new(),
            },
            Event::ToolCall {
                call: ToolCall::new("c1", "bash", "{}"),
            },
            Event::ToolCall {
                call: ToolCall::new("c2", "read", "{}"),
            },
            Event::ToolResult {
                call_id: "c1".into(),
                name: "bash".into(),
                text: "ok".into(),
                is_error: false,
                images: Vec::new(),
            },
        ];
        let tail = close_open_turns(&mut events);
        assert_eq!(
            tail,
            vec![
                Event::ToolResult {
                    call_id: "c2".into(),
                    name: "read".into(),
                    text: INTERRUPTED_CALL.into(),
                    is_error: true,
                    images: Vec::new(),
                },
                Event::TurnEnd {
                    reason: TurnEndReason::Error,
                    error: Some(INTERRUPTED_TURN.into()),
                },
            ]
        );
        assert_eq!(events.len(), 8);
        assert_eq!(
            events[2],
            Event::AssistantMessage {
                text: "running".into(),
                thoughts: Vec::new(),
            }
        );
    }

    #[test]
    fn a_turn_left_open_in_the_middle_is_closed_before_the_next() {
        let mut events = vec![
            user("one"),
            Event::ToolCall {
                call: ToolCall::new("c1", "bash", "{}"),
            },
            user("two"),
            Event::TurnEnd {
                reason: TurnEndReason::Completed,
                error: None,
            },
        ];
        assert!(close_open_turns(&mut events).is_empty());
        assert!(
            matches!(&events[2], Event::ToolResult { call_id, is_error: true, .. } if call_id == "c1")
        );
        assert!(matches!(
            events[3],
            Event::TurnEnd {
                reason: TurnEndReason::Error,
                ..
            }
        ));
        assert_eq!(events[4], user("two"));
    }
}
