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

/// The media types of the images dsh sends a model: those every model
/// API that takes images takes.
pub const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The most bytes of an image dsh sends a model (decoded): what the model
/// APIs take (Anthropic's limit is 5 MiB).
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

/// An image, as the user attached it or a tool returned it: its media
/// type and its bytes in base64.
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
    /// bytes, not shown]`.
    ///
    /// ```
    /// let image = dsh_agent_types::Image { mime_type: "image/png".into(), data: "AAAA".into() };
    /// assert_eq!(image.described(), "[image: image/png, 3 bytes, not shown]");
    /// ```
    pub fn described(&self) -> String {
        format!(
            "[image: {}, {} bytes, not shown]",
            self.mime_type,
            self.decoded_len()
        )
    }

    /// `text`, then each of `images` described on a line of its own: a
    /// tool result as a model that takes no image there reads it.
    ///
    /// ```
    /// use dsh_agent_types::Image;
    ///
    /// let pixel = Image { mime_type: "image/png".into(), data: "AAAA".into() };
    /// assert_eq!(
    ///     Image::described_after("a pixel:", &[pixel]),
    ///     "a pixel:\n[image: image/png, 3 bytes, not shown]"
    /// );
    /// assert_eq!(Image::described_after("no image", &[]), "no image");
    /// ```
    pub fn described_after<'a>(text: &'a str, images: &[Self]) -> std::borrow::Cow<'a, str> {
        if images.is_empty() {
            return text.into();
        }
        let described = images.iter().map(Self::described);
        let lines: Vec<String> = std::iter::once(text.to_owned())
            .filter(|text| !text.is_empty())
            .chain(described)
            .collect();
        lines.join("\n").into()
    }

    /// How many bytes the base64 data encodes.
    pub fn decoded_len(&self) -> u64 {
        decoded_len(&self.data)
    }
}

/// How many bytes a base64 text (with its padding) encodes.
///
/// ```
/// assert_eq!(dsh_agent_types::decoded_len("aGk="), 2);
/// ```
pub fn decoded_len(base64: &str) -> u64 {
    let padding = base64.bytes().rev().take_while(|&b| b == b'=').count();
    let len = (base64.len() / 4 * 3).saturating_sub(padding);
    u64::try_from(len).unwrap_or(u64::MAX)
}

/// Reasoning a model wrote before its answer (its "thinking"), as its API
/// returned it.
///
/// A front end shows the [`text`](Self::text). An API may ask for its
/// reasoning back while the model calls tools: Anthropic's adapter sends
/// the thoughts it can prove are its own — those with a
/// [`signature`](Self::Text::signature), and redacted ones — unchanged;
/// the OpenAI-compatible adapter sends the unsigned text as
/// `reasoning_content` (DeepSeek's thinking mode), for the answers of a
/// turn that called tools.
///
/// ```
/// use dsh_agent_types::Thought;
///
/// let thought = Thought::Text { text: "The file is short.".into(), signature: None };
/// assert_eq!(thought.text(), "The file is short.");
/// assert_eq!(Thought::Redacted { data: "EmwK…".into() }.text(), "");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Thought {
    /// Reasoning the model showed.
    Text {
        /// The reasoning.
        text: String,
        /// The API's seal on it (Anthropic's `signature`), which it checks
        /// when the thought is sent back; `None` where the API gives none
        /// (an OpenAI-compatible server's `reasoning_content`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Reasoning the API encrypted (Anthropic's `redacted_thinking`):
    /// nothing to show; sent back as it came.
    Redacted {
        /// The encrypted reasoning.
        data: String,
    },
}

impl Thought {
    /// What a person may read of it: the reasoning, or nothing for a
    /// redacted thought.
    pub fn text(&self) -> &str {
        match self {
            Self::Text { text, .. } => text,
            Self::Redacted { .. } => "",
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
    /// An image the user attached to what they said (the user message
    /// before it): an adapter sends it as an image part of the user's
    /// turn where its API takes one.
    UserImage {
        /// The image.
        image: Image,
    },
    /// What the model answered: text, tool calls, or both, and what it
    /// thought before.
    Assistant {
        /// The text; empty when the model only called tools.
        text: String,
        /// The tools it called, in order.
        tool_calls: Vec<ToolCall>,
        /// What it thought before it answered, in order; empty without
        /// extended thinking or reasoning.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        thoughts: Vec<Thought>,
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
        /// Images the tool returned, after its text: an adapter whose API
        /// takes images in a tool result sends them there, another
        /// describes each ([`Image::described`]).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
}
