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

/// The most bytes of images (decoded) one message sends a model — a tool
/// result, a prompt, a sampled message: one image's worth. A message goes
/// into every later request of its session, so a result of many images
/// would weigh on each; the images past it are described instead.
pub const MAX_MESSAGE_IMAGE_BYTES: u64 = MAX_IMAGE_BYTES;

/// Why an image cannot be sent to a model ([`Image::check`]): each would
/// make the model API refuse the request, and every later one of the
/// session, which holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ImageProblem {
    /// Its media type is none of [`IMAGE_TYPES`].
    Type,
    /// Its data is not base64 (standard alphabet, padded).
    NotBase64,
    /// Its bytes are not of the type it declares (a JPEG labelled
    /// `image/png`).
    Mislabelled,
    /// It is over [`MAX_IMAGE_BYTES`].
    TooBig {
        /// Its size, decoded.
        bytes: u64,
    },
    /// The images of its message before it already hold what one message
    /// may ([`MAX_MESSAGE_IMAGE_BYTES`]).
    OverMessage,
}

impl std::fmt::Display for ImageProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Type => write!(f, "the model APIs take only {}", IMAGE_TYPES.join(", ")),
            Self::NotBase64 => f.write_str("its data is not valid base64"),
            Self::Mislabelled => f.write_str("its bytes are not of the type it declares"),
            Self::TooBig { bytes } => write!(
                f,
                "it is {bytes} bytes, over the {MAX_IMAGE_BYTES} the model APIs take"
            ),
            Self::OverMessage => write!(
                f,
                "the images before it hold the {MAX_MESSAGE_IMAGE_BYTES} bytes one message may"
            ),
        }
    }
}

impl std::error::Error for ImageProblem {}

/// The images of one message, checked in order ([`ImageBudget::admit`]):
/// each as [`Image::check`] does, and together at most
/// [`MAX_MESSAGE_IMAGE_BYTES`].
#[derive(Debug, Default)]
pub struct ImageBudget {
    used: u64,
}

impl ImageBudget {
    /// Whether `image`, the next of the message's images, may be sent;
    /// it is counted when it may.
    pub fn admit(&mut self, image: &Image) -> Result<(), ImageProblem> {
        image.check()?;
        let used = self.used.saturating_add(image.decoded_len());
        if used > MAX_MESSAGE_IMAGE_BYTES {
            return Err(ImageProblem::OverMessage);
        }
        self.used = used;
        Ok(())
    }
}

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

    /// Whether a model API takes the image: its type is one of
    /// [`IMAGE_TYPES`], it is at most [`MAX_IMAGE_BYTES`], its data is
    /// base64, and its bytes begin as its type's do (PNG's signature,
    /// JPEG's `FF D8 FF`, `GIF87a`/`GIF89a`, WebP's `RIFF….WEBP`). The
    /// one check of every image dsh sends: a prompt's, a tool's, a
    /// sampling request's.
    ///
    /// ```
    /// use dsh_agent_types::{Image, ImageProblem};
    ///
    /// // "GIF89a" in base64.
    /// let gif = |mime_type: &str| Image { mime_type: mime_type.into(), data: "R0lGODlh".into() };
    /// assert_eq!(gif("image/gif").check(), Ok(()));
    /// assert_eq!(gif("image/png").check(), Err(ImageProblem::Mislabelled));
    /// assert_eq!(gif("image/tiff").check(), Err(ImageProblem::Type));
    /// ```
    pub fn check(&self) -> Result<(), ImageProblem> {
        use base64::Engine as _;
        if !IMAGE_TYPES.contains(&self.mime_type.as_str()) {
            return Err(ImageProblem::Type);
        }
        let bytes = self.decoded_len();
        if bytes > MAX_IMAGE_BYTES {
            return Err(ImageProblem::TooBig { bytes });
        }
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(&self.data)
            .map_err(|_| ImageProblem::NotBase64)?;
        let matches = match self.mime_type.as_str() {
            "image/png" => decoded.starts_with(b"\x89PNG\r\n\x1a\n"),
            "image/jpeg" => decoded.starts_with(&[0xFF, 0xD8, 0xFF]),
            "image/gif" => decoded.starts_with(b"GIF87a") || decoded.starts_with(b"GIF89a"),
            _ => decoded.starts_with(b"RIFF") && decoded.get(8..12) == Some(b"WEBP"),
        };
        matches.then_some(()).ok_or(ImageProblem::Mislabelled)
    }

    /// How it is said where it was not sent, and why: `[image: image/png,
    /// 3 bytes, not shown: its bytes are not of the type it declares]`.
    pub fn refused(&self, problem: &ImageProblem) -> String {
        format!(
            "[image: {}, {} bytes, not shown: {problem}]",
            self.mime_type,
            self.decoded_len()
        )
    }

    /// One message's `text` and `images` as a model may be sent them:
    /// the images it may ([`ImageBudget`]), and the text with a line for
    /// each of the others that says why not ([`Image::refused`]).
    ///
    /// ```
    /// use dsh_agent_types::Image;
    ///
    /// let tiff = Image { mime_type: "image/tiff".into(), data: "AAAA".into() };
    /// let (text, images) = Image::sendable("a scan:".into(), vec![tiff]);
    /// assert_eq!(
    ///     text,
    ///     "a scan:\n[image: image/tiff, 3 bytes, not shown: \
    ///      the model APIs take only image/png, image/jpeg, image/gif, image/webp]"
    /// );
    /// assert!(images.is_empty());
    /// ```
    pub fn sendable(text: String, images: Vec<Self>) -> (String, Vec<Self>) {
        let mut budget = ImageBudget::default();
        let mut kept = Vec::with_capacity(images.len());
        let mut lines = vec![text]
            .into_iter()
            .filter(|text| !text.is_empty())
            .collect::<Vec<_>>();
        for image in images {
            match budget.admit(&image) {
                Ok(()) => kept.push(image),
                Err(problem) => lines.push(image.refused(&problem)),
            }
        }
        (lines.join("\n"), kept)
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

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    fn image(mime_type: &str, bytes: &[u8]) -> Image {
        Image {
            mime_type: mime_type.into(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    #[test]
    fn an_image_is_sent_only_when_its_bytes_are_of_its_type() {
        let png = b"\x89PNG\r\n\x1a\n....";
        let jpeg = b"\xFF\xD8\xFF\xE0..";
        let webp = b"RIFF\x10\0\0\0WEBPVP8 ";
        assert_eq!(image("image/png", png).check(), Ok(()));
        assert_eq!(image("image/jpeg", jpeg).check(), Ok(()));
        assert_eq!(image("image/gif", b"GIF87a..").check(), Ok(()));
        assert_eq!(image("image/webp", webp).check(), Ok(()));
        assert_eq!(
            image("image/png", jpeg).check(),
            Err(ImageProblem::Mislabelled)
        );
        assert_eq!(
            image("image/webp", b"RIFF\x10\0\0\0WAVE").check(),
            Err(ImageProblem::Mislabelled)
        );
        assert_eq!(
            image("image/png", b"").check(),
            Err(ImageProblem::Mislabelled)
        );
        let bad = Image {
            mime_type: "image/png".into(),
            data: "iVBORw0KGgo=!".into(),
        };
        assert_eq!(bad.check(), Err(ImageProblem::NotBase64));
        assert_eq!(image("image/svg+xml", png).check(), Err(ImageProblem::Type));
    }

    #[test]
    fn an_image_too_big_alone_or_with_those_before_it_is_refused() {
        let size = usize::try_from(MAX_IMAGE_BYTES).expect("fits");
        let mut big = b"\x89PNG\r\n\x1a\n".to_vec();
        big.resize(size + 1, 0);
        assert_eq!(
            image("image/png", &big).check(),
            Err(ImageProblem::TooBig {
                bytes: MAX_IMAGE_BYTES + 1
            })
        );
        big.truncate(size / 2 + 1);
        let half = image("image/png", &big);
        let mut budget = ImageBudget::default();
        assert_eq!(budget.admit(&half), Ok(()));
        assert_eq!(budget.admit(&half), Err(ImageProblem::OverMessage));
        // A refused image is not counted: a small one still fits.
        assert_eq!(budget.admit(&image("image/gif", b"GIF89a")), Ok(()));
    }
}
