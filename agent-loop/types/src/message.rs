//! What the model and the loop say to each other: messages, and the tool
//! calls inside them.

use serde::{Deserialize, Serialize};

/// A tool call the model asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The model's id for the call; its result answers this id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as the model wrote them: JSON text, not yet parsed or
    /// validated (the tool registry does both).
    pub arguments: String,
}

impl ToolCall {
    /// A tool call.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// One message of the conversation, as adapters send it.
///
/// The system prompt is not a message: the loop's `ModelRequest` carries
/// it apart, as `system`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// What the user said.
    User {
        /// The text.
        text: String,
    },
    /// What the model answered: text, tool calls, or both.
    Assistant {
        /// The text; empty when the model only called tools.
        text: String,
        /// The tools it called, in order.
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        /// The id of the call this answers.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The result text.
        text: String,
        /// Whether the call failed.
        is_error: bool,
    },
}
