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

/// An image, as the user attached it: its media type and its bytes in
/// base64.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// The media type: `image/png`, `image/jpeg`, `image/gif`,
    /// `image/webp`.
    pub mime_type: String,
    /// The bytes, base64-encoded.
    pub data: String,
}

impl Image {
    /// The image as a `data:` URI, as OpenAI's `image_url` takes it.
    pub fn data_uri(&self) -> String {
        format!("data:{};base64,{}", self.mime_type, self.data)
    }

    /// How it is said where it cannot be shown: `[image: image/png, 4033
    /// bytes]`.
    pub fn described(&self) -> String {
        format!(
            "[image: {}, {} bytes]",
            self.mime_type,
            self.data.len() / 4 * 3
        )
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
    /// An image the user attached to what they said (the user message
    /// before it): an adapter sends it as an image part of the user's
    /// turn where its API takes one.
    UserImage {
        /// The image.
        image: Image,
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
