//! The vocabulary of dsh's agent loop that outlives a process: the
//! [`Event`]s of a session's log, the [`Message`]s and [`ToolCall`]s of a
//! conversation, and the ids of sessions and agents.
//!
//! A session store, a replay or any other reader of a session's log
//! depends on this crate alone: it has no HTTP client, TLS or tokenizer
//! (those belong to `dsh-agent-loop`, which re-exports every type here at
//! its root under the same name, so code written against the loop needs
//! no change).
//!
//! ```
//! use dsh_agent_types::{Event, SessionId, ToolCall, TurnEndReason};
//!
//! let log = [
//!     Event::UserMessage { text: "List the files.".into() },
//!     Event::ToolCall { call: ToolCall::new("c1", "bash", r#"{"command":"ls"}"#) },
//!     Event::TurnEnd { reason: TurnEndReason::Completed, error: None },
//! ];
//! // One JSON record an event, tagged by its kind: what a store writes.
//! let record = serde_json::to_string(&log[2])?;
//! assert_eq!(record, r#"{"type":"turn_end","reason":"completed","error":null}"#);
//! let read: Event = serde_json::from_str(&record)?;
//! assert_eq!(read, log[2]);
//!
//! // Ids are their bare string, in JSON and when shown.
//! let id = SessionId::new("0b6c…");
//! assert_eq!(serde_json::to_string(&id)?, r#""0b6c…""#);
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! # What is here, and what is not
//!
//! A type belongs here when a crate that does not run the loop must
//! name it: what a log records ([`Event`], [`TurnEndReason`],
//! [`CompactionTrigger`], [`NOT_RUN`]), what a conversation is made of
//! ([`Message`], [`ToolCall`]) and the ids ([`SessionId`], [`AgentId`]).
//! So does one wording: what a file is when it is not a regular file
//! ([`special_kind`]), shared by the tools and the session store, which
//! both refuse one and depend on no crate lower than this one.
//! What only the loop uses — a session with its recorder, requests,
//! adapters, budgets — stays in `dsh-agent-loop`.
#![deny(missing_docs)]

mod event;
mod file_kind;
mod id;
mod message;

pub use event::{CompactionTrigger, Event, NOT_RUN, TurnEndReason};
pub use file_kind::special_kind;
pub use id::{AgentId, SessionId};
pub use message::{
    IMAGE_TYPES, Image, ImageBudget, ImageProblem, MAX_IMAGE_BYTES, MAX_MESSAGE_IMAGE_BYTES,
    Message, Thought, ToolCall, decoded_len,
};
