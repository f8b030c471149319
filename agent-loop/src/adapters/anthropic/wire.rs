//! The Messages API wire format: the request with its cache breakpoints,
//! the events of a streamed answer, and a whole answer.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{CacheTtl, MessagesWire};
use crate::adapters::http::{Step, parse};
use crate::{FinishReason, Image, Message, ModelRequest, ModelResponse, Thought, ToolCall, Usage};

#[derive(Serialize)]
struct MessagesRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<Block<'a>>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    /// Extended thinking, when the configuration turns it on.
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<ThinkingParam>,
    // Always: a caller that wants no pieces drops them, so there is one
    // request and one way to read its answer.
    stream: bool,
}

/// `thinking: {type: "enabled", budget_tokens}`: the model thinks, in at
/// most `budget_tokens` of its `max_tokens`, before it answers.
#[derive(Clone, Copy, Serialize)]
struct ThinkingParam {
    r#type: &'static str,
    budget_tokens: u32,
}

/// A cache breakpoint: the prefix up to the block that carries it is
/// cached.
#[derive(Clone, Copy, Serialize)]
struct CacheControl {
    r#type: &'static str,
    /// Left out for five minutes, the API's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl: Option<&'static str>,
}

impl CacheControl {
    fn new(ttl: CacheTtl) -> Self {
        Self {
            r#type: "ephemeral",
            ttl: match ttl {
                CacheTtl::FiveMinutes => None,
                CacheTtl::OneHour => Some("1h"),
            },
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum Role {
    User,
    Assistant,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: Role,
    content: Vec<Block<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: serde_json::Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// An image (the user's, or a tool's in its result), as base64.
    Image {
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// A thought of the model's, sent back as the API gave it, signature
    /// and all (the API refuses a thought whose signature does not match).
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    /// A thought the API encrypted, sent back as it came.
    RedactedThinking { data: &'a str },
    ToolResult {
        tool_use_id: &'a str,
        // The API takes a result without content; it rejects an empty
        // text.
        #[serde(skip_serializing_if = "ResultContent::is_empty")]
        content: ResultContent<'a>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

impl Block<'_> {
    /// Marks a breakpoint on the block; a thought takes none (the API
    /// refuses `cache_control` on one), so a message that ends with a
    /// thought goes without.
    fn mark(&mut self, mark: CacheControl) {
        let (Self::Text { cache_control, .. }
        | Self::ToolUse { cache_control, .. }
        | Self::Image { cache_control, .. }
        | Self::ToolResult { cache_control, .. }) = self
        else {
            return;
        };
        *cache_control = Some(mark);
    }

    fn is_thought(&self) -> bool {
        matches!(self, Self::Thinking { .. } | Self::RedactedThinking { .. })
    }
}

/// A tool result's content: its text alone, or, when the tool returned
/// images, its text and the images as blocks.
#[derive(Serialize)]
#[serde(untagged)]
enum ResultContent<'a> {
    Text(&'a str),
    Blocks(Vec<Block<'a>>),
}

impl<'a> ResultContent<'a> {
    fn of(text: &'a str, images: &'a [Image]) -> Self {
        if images.is_empty() {
            return Self::Text(text);
        }
        let images = images.iter().map(|image| Some(image_block(image)));
        Self::Blocks(
            std::iter::once(text_block(text))
                .chain(images)
                .flatten()
                .collect(),
        )
    }

    fn is_empty(&self) -> bool {
        matches!(self, Self::Text(""))
    }
}

/// Where an image block's bytes are: inline, base64.
#[derive(Serialize)]
struct ImageSource<'a> {
    r#type: &'static str,
    media_type: &'a str,
    data: &'a str,
}

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// The request for `request`, its breakpoints placed (see the module
/// documentation of the adapter for the rule), with extended thinking
/// when `wire` asks for it.
pub(super) fn request<'a>(request: &'a ModelRequest, wire: &MessagesWire) -> impl Serialize + 'a {
    let mark = CacheControl::new(wire.cache_ttl);
    let mut tools: Vec<WireTool<'_>> = request
        .tools
        .iter()
        .map(|tool| WireTool {
            name: &tool.name,
            description: &tool.description,
            input_schema: &tool.parameters,
            cache_control: None,
        })
        .collect();
    let mut system: Vec<Block<'_>> = request
        .system
        .as_deref()
        .filter(|text| !text.is_empty())
        .map(|text| Block::Text {
            text,
            cache_control: None,
        })
        .into_iter()
        .collect();
    // A request's own limit (an MCP server's sampling) only lowers the
    // deployment's; thinking goes with a limit it fits in, not with a
    // smaller one.
    let max_tokens = (request.max_tokens).map_or(wire.max_tokens, |max| max.min(wire.max_tokens));
    let thinking = (wire.thinking_budget)
        .filter(|budget| *budget < max_tokens)
        .map(|budget_tokens| ThinkingParam {
            r#type: "enabled",
            budget_tokens,
        });
    let mut messages = messages(&request.messages, thinking.is_some());

    if let Some(tool) = tools.last_mut() {
        tool.cache_control = Some(mark);
    }
    if let Some(block) = system.last_mut() {
        block.mark(mark);
    }
    for index in message_breakpoints(&messages) {
        if let Some(block) = messages
            .get_mut(index)
            .and_then(|message| message.content.last_mut())
        {
            block.mark(mark);
        }
    }
    MessagesRequest {
        model: &request.model,
        max_tokens,
        system,
        messages,
        tools,
        thinking,
        stream: true,
    }
}

/// The messages whose last block gets a breakpoint: the last message, and
/// the one before the newest assistant answer before it — the previous
/// request's last message, since that answer is what it returned.
fn message_breakpoints(messages: &[WireMessage<'_>]) -> Vec<usize> {
    let Some(last) = messages.len().checked_sub(1) else {
        return Vec::new();
    };
    let previous = messages[..last]
        .iter()
        .rposition(|message| matches!(message.role, Role::Assistant))
        .and_then(|answer| answer.checked_sub(1));
    previous.into_iter().chain([last]).collect()
}

/// The conversation as the API takes it: roles alternate, a tool result
/// is a block of a user message, and the results of one answer's calls
/// share one message. Consecutive messages of one role are joined, as the
/// API would join them (an answer's thoughts after the earlier one's,
/// before any other block); empty texts, which it rejects, are left out,
/// and a message left with no block at all with them.
///
/// With `thinking` on, an answer's thoughts go first in its message, as
/// the API requires of an answer that called tools: those it signed or
/// redacted, unchanged; without, and for thoughts it did not give (an
/// unsigned one), none.
fn messages(conversation: &[Message], thinking: bool) -> Vec<WireMessage<'_>> {
    let mut messages: Vec<WireMessage<'_>> = Vec::new();
    for message in conversation {
        let (role, blocks) = match message {
            Message::User { text } => (Role::User, vec![text_block(text)]),
            Message::UserImage { image } => (Role::User, vec![Some(image_block(image))]),
            Message::Assistant {
                text,
                tool_calls,
                thoughts,
            } => (
                Role::Assistant,
                (thoughts.iter().filter(|_| thinking))
                    .map(thought_block)
                    .chain(std::iter::once(text_block(text)))
                    .chain(tool_calls.iter().map(|call| {
                        Some(Block::ToolUse {
                            id: &call.id,
                            name: &call.name,
                            input: tool_input(&call.arguments),
                            cache_control: None,
                        })
                    }))
                    .collect(),
            ),
            Message::Tool {
                call_id,
                text,
                is_error,
                images,
                ..
            } => (
                Role::User,
                vec![Some(Block::ToolResult {
                    tool_use_id: call_id,
                    content: ResultContent::of(text, images),
                    is_error: *is_error,
                    cache_control: None,
                })],
            ),
        };
        let blocks = blocks.into_iter().flatten();
        match messages.last_mut() {
            Some(last) if std::mem::discriminant(&last.role) == std::mem::discriminant(&role) => {
                // Thoughts stay first in a joined answer, as the API
                // requires: after the earlier answer's, before its text.
                let (thoughts, rest): (Vec<_>, Vec<_>) = blocks.partition(Block::is_thought);
                let first = last.content.iter().take_while(|block| block.is_thought());
                let at = first.count();
                last.content.splice(at..at, thoughts);
                last.content.extend(rest);
            }
            _ => {
                let content: Vec<Block<'_>> = blocks.collect();
                if !content.is_empty() {
                    messages.push(WireMessage { role, content });
                }
            }
        }
    }
    messages
}

/// A thought as the API gave it; `None` for one it did not sign.
fn thought_block(thought: &Thought) -> Option<Block<'_>> {
    match thought {
        Thought::Text {
            text,
            signature: Some(signature),
        } => Some(Block::Thinking {
            thinking: text,
            signature,
        }),
        Thought::Redacted { data } => Some(Block::RedactedThinking { data }),
        _ => None,
    }
}

fn image_block(image: &Image) -> Block<'_> {
    Block::Image {
        source: ImageSource {
            r#type: "base64",
            media_type: &image.mime_type,
            data: &image.data,
        },
        cache_control: None,
    }
}

fn text_block(text: &str) -> Option<Block<'_>> {
    (!text.is_empty()).then_some(Block::Text {
        text,
        cache_control: None,
    })
}

/// A tool call's input as the API takes it: a JSON object. The model
/// wrote the arguments this adapter read back (or an empty text, for a
/// call without input); anything else is sent as `{}`, since the API
/// rejects a request whose `tool_use` input is not an object, and the
/// call's result already says its arguments were wrong.
fn tool_input(arguments: &str) -> serde_json::Value {
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(object @ serde_json::Value::Object(_)) => object,
        _ => serde_json::Value::Object(serde_json::Map::new()),
    }
}

/// Whether an error body is the API's `overloaded_error`.
pub(super) fn is_overloaded_error_body(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|value| {
            value
                .pointer("/error/type")
                .and_then(serde_json::Value::as_str)
                .map(|kind| kind == "overloaded_error")
        })
        .unwrap_or(false)
}

/// The usage of `message_start`, `message_delta` or a whole message.
/// `input_tokens` excludes what the cache read or wrote.
#[derive(Clone, Copy, Default, Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// `later`'s counts where it has them, else these: `message_delta`
    /// repeats (cumulatively) what changed since `message_start`.
    fn update(&mut self, later: Self) {
        self.input_tokens = later.input_tokens.or(self.input_tokens);
        self.output_tokens = later.output_tokens.or(self.output_tokens);
        self.cache_creation_input_tokens = later
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.cache_read_input_tokens = later
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
    }
}

impl From<WireUsage> for Usage {
    fn from(wire: WireUsage) -> Self {
        let read = wire.cache_read_input_tokens;
        let written = wire.cache_creation_input_tokens;
        let prompt = wire.input_tokens.unwrap_or(0) + read.unwrap_or(0) + written.unwrap_or(0);
        let mut usage = Usage::new(prompt, wire.output_tokens.unwrap_or(0));
        if let Some(read) = read {
            usage = usage.with_cached_prompt_tokens(read);
        }
        if let Some(written) = written {
            usage = usage.with_cache_creation_prompt_tokens(written);
        }
        usage
    }
}

/// A content block of an answer, whole (a message that was not streamed)
/// or as `content_block_start` opens it.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Option<serde_json::Value>,
    },
    /// A thought; when streamed, it opens empty and grows by deltas.
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    /// A thought the API encrypted: whole in the block that opens it.
    RedactedThinking { data: String },
    /// A kind this adapter does not ask for (a server tool's block): not
    /// part of the answer dsh keeps.
    #[serde(other)]
    Other,
}

/// The thought a whole block is; `None` for any other block.
fn thought_of(block: ContentBlock) -> Option<Thought> {
    match block {
        ContentBlock::Thinking {
            thinking,
            signature,
        } => Some(Thought::Text {
            text: thinking,
            signature: (!signature.is_empty()).then_some(signature),
        }),
        ContentBlock::RedactedThinking { data } => Some(Thought::Redacted { data }),
        _ => None,
    }
}

/// A whole message, from a server that did not stream.
#[derive(Deserialize)]
struct WholeMessage {
    content: Vec<ContentBlock>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    stop_reason: Option<String>,
}

/// Why the model stopped: `max_tokens` is the request's output limit,
/// `refusal` a refusal.
fn finish_reason(stop_reason: Option<&str>) -> FinishReason {
    match stop_reason {
        Some("max_tokens") => FinishReason::MaxTokens,
        Some("refusal") => FinishReason::Refusal,
        _ => FinishReason::Stop,
    }
}

/// Parses a whole message; the error says what is wrong and where.
pub(super) fn response(body: &[u8]) -> Result<ModelResponse, String> {
    let message: WholeMessage = parse(body, "body")?;
    let mut answer = ModelResponse::default();
    for block in message.content {
        match block {
            ContentBlock::Text { text } => answer.text.push_str(&text),
            ContentBlock::ToolUse { id, name, input } => answer.tool_calls.push(ToolCall {
                id,
                name,
                arguments: input.map_or_else(|| "{}".to_owned(), |input| input.to_string()),
            }),
            block => answer.thoughts.extend(thought_of(block)),
        }
    }
    answer.usage = message.usage.map(Usage::from);
    answer.finish = finish_reason(message.stop_reason.as_deref());
    Ok(answer)
}

/// One event of a streamed answer; its `type` is also its SSE `event:`
/// name, so the data alone says which.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: StartedMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    ContentBlockStop {
        #[allow(dead_code, reason = "read to check the event's shape")]
        index: usize,
    },
    MessageDelta {
        #[serde(default)]
        delta: Option<MessageDeltaFields>,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: ApiError,
    },
    /// The API may add event types; it asks clients to pass over those
    /// they do not know.
    #[serde(other)]
    Other,
}

/// What `message_delta` changes of the message.
#[derive(Deserialize)]
struct MessageDeltaFields {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct StartedMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: String },
    #[serde(rename = "signature_delta")]
    Signature { signature: String },
    /// `citations_delta`: not part of the answer dsh keeps.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct ApiError {
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    message: String,
}

/// A block of a streamed answer so far.
enum PartialBlock {
    Text,
    ToolUse {
        id: String,
        name: String,
        /// The input `content_block_start` carried (`{}` when the input
        /// streams in deltas).
        start: Option<serde_json::Value>,
        json: String,
    },
    /// A thought so far (or a redacted one, whole).
    Thought(Thought),
    Other,
}

/// A streamed answer so far: its text, its blocks by index, its usage.
#[derive(Default)]
pub(super) struct StreamedMessage {
    text: String,
    blocks: BTreeMap<usize, PartialBlock>,
    usage: Option<WireUsage>,
    /// The `stop_reason` of `message_delta`.
    stop_reason: Option<String>,
    events: usize,
    /// What the text and the blocks hold, in bytes: each block's own
    /// size (so a flood of empty blocks counts), a tool call's opening
    /// event whole (its id, name and input), and its input's deltas.
    held: usize,
}

impl StreamedMessage {
    /// Adds the data of the next event.
    pub(super) fn add(&mut self, data: &str) -> Result<Step<'_>, String> {
        self.events += 1;
        let event: StreamEvent = parse(data.as_bytes(), "its data")
            .map_err(|message| format!("event {} of the stream: {message}", self.events))?;
        match event {
            StreamEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.usage.get_or_insert_default().update(usage);
                }
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => return Ok(self.start_block(index, content_block, data.len())),
            StreamEvent::ContentBlockDelta { index, delta } => return self.add_delta(index, delta),
            StreamEvent::MessageDelta { delta, usage } => {
                if let Some(usage) = usage {
                    self.usage.get_or_insert_default().update(usage);
                }
                if let Some(stop_reason) = delta.and_then(|delta| delta.stop_reason) {
                    self.stop_reason = Some(stop_reason);
                }
            }
            StreamEvent::MessageStop => return Ok(Step::Stop),
            StreamEvent::Error { error } => {
                return Ok(Step::Error {
                    kind: error.kind,
                    message: error.message,
                });
            }
            StreamEvent::ContentBlockStop { .. } | StreamEvent::Ping | StreamEvent::Other => {}
        }
        Ok(Step::Nothing)
    }

    /// Opens block `index` as `content_block_start` (of `bytes` of data)
    /// says; what it already holds of text or thought is shown.
    fn start_block(&mut self, index: usize, content_block: ContentBlock, bytes: usize) -> Step<'_> {
        self.held += std::mem::size_of::<PartialBlock>();
        let block = match content_block {
            ContentBlock::Text { text } if !text.is_empty() => {
                self.blocks.insert(index, PartialBlock::Text);
                return self.push_text(&text);
            }
            ContentBlock::Text { .. } => PartialBlock::Text,
            ContentBlock::ToolUse { id, name, input } => {
                self.held += bytes;
                PartialBlock::ToolUse {
                    id,
                    name,
                    start: input,
                    json: String::new(),
                }
            }
            block @ (ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. }) => {
                self.held += bytes;
                let thought = thought_of(block).unwrap_or(Thought::Redacted {
                    data: String::new(),
                });
                let shown = thought.text().len();
                self.blocks.insert(index, PartialBlock::Thought(thought));
                return self.shown_thought(index, 0..shown);
            }
            ContentBlock::Other => PartialBlock::Other,
        };
        self.blocks.insert(index, block);
        Step::Nothing
    }

    /// Adds a `content_block_delta` to block `index`; a piece of text or
    /// of a thought is shown.
    fn add_delta(&mut self, index: usize, delta: Delta) -> Result<Step<'_>, String> {
        let block = self.blocks.get_mut(&index).ok_or_else(|| {
            format!(
                "event {} of the stream: a delta for block {index}, which no \
                 `content_block_start` opened",
                self.events
            )
        })?;
        match (block, delta) {
            (PartialBlock::Text, Delta::Text { text }) => return Ok(self.push_text(&text)),
            (PartialBlock::ToolUse { json, .. }, Delta::InputJson { partial_json }) => {
                self.held += partial_json.len();
                json.push_str(&partial_json);
            }
            (PartialBlock::Thought(Thought::Text { text, .. }), Delta::Thinking { thinking }) => {
                self.held += thinking.len();
                let start = text.len();
                text.push_str(&thinking);
                let end = text.len();
                return Ok(self.shown_thought(index, start..end));
            }
            (
                PartialBlock::Thought(Thought::Text { signature, .. }),
                Delta::Signature { signature: piece },
            ) => {
                self.held += piece.len();
                signature.get_or_insert_default().push_str(&piece);
            }
            (_, Delta::Other) | (PartialBlock::Other, _) => {}
            _ => {
                return Err(format!(
                    "event {} of the stream: a delta of the wrong kind for block {index}",
                    self.events
                ));
            }
        }
        Ok(Step::Nothing)
    }

    fn push_text(&mut self, piece: &str) -> Step<'_> {
        self.held += piece.len();
        let start = self.text.len();
        self.text.push_str(piece);
        Step::Shown {
            thought: "",
            text: &self.text[start..],
        }
    }

    /// The `range` of the text of the thought of block `index`, to show.
    fn shown_thought(&self, index: usize, range: std::ops::Range<usize>) -> Step<'_> {
        let thought = match self.blocks.get(&index) {
            Some(PartialBlock::Thought(thought)) => thought.text().get(range).unwrap_or(""),
            _ => "",
        };
        Step::Shown { thought, text: "" }
    }

    /// What the answer holds so far, in bytes.
    pub(super) fn held(&self) -> usize {
        self.held
    }

    /// The whole answer, its tool calls in block order; an error when a
    /// tool call's input is not JSON — unless the answer stopped at
    /// `max_tokens`, which cut it short: that call is left out, and the
    /// answer says it stopped there.
    pub(super) fn finish(self) -> Result<ModelResponse, String> {
        let finish = finish_reason(self.stop_reason.as_deref());
        let mut answer = ModelResponse::text(self.text).with_finish(finish);
        for (index, block) in self.blocks {
            let (id, name, start, json) = match block {
                PartialBlock::ToolUse {
                    id,
                    name,
                    start,
                    json,
                } => (id, name, start, json),
                PartialBlock::Thought(thought) => {
                    answer.thoughts.push(thought);
                    continue;
                }
                PartialBlock::Text | PartialBlock::Other => continue,
            };
            let arguments = if json.is_empty() {
                start.map_or_else(|| "{}".to_owned(), |input| input.to_string())
            } else {
                json
            };
            if serde_json::from_str::<serde_json::Value>(&arguments).is_err() {
                if finish == FinishReason::MaxTokens {
                    continue;
                }
                return Err(format!(
                    "the input of tool call `{id}` (`{name}`, block {index}) is not JSON: \
                     {arguments:?}; if the answer stopped at `max_tokens`, raise `max_tokens`"
                ));
            }
            answer.tool_calls.push(ToolCall::new(id, name, arguments));
        }
        answer.usage = self.usage.map(Usage::from);
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use dsh_system_prompt::ToolSchema;
    use serde_json::{Value, json};

    use super::*;

    fn wire(request: &ModelRequest, ttl: CacheTtl) -> Value {
        let wire = MessagesWire {
            max_tokens: 1024,
            cache_ttl: ttl,
            thinking_budget: None,
        };
        serde_json::to_value(super::request(request, &wire)).unwrap_or_default()
    }

    /// The paths of every `cache_control` in a request body.
    fn breakpoints(body: &Value) -> Vec<String> {
        let mut found = Vec::new();
        for (at, tool) in body["tools"].as_array().into_iter().flatten().enumerate() {
            if tool.get("cache_control").is_some() {
                found.push(format!("tools[{at}]"));
            }
        }
        for (at, block) in body["system"].as_array().into_iter().flatten().enumerate() {
            if block.get("cache_control").is_some() {
                found.push(format!("system[{at}]"));
            }
        }
        for (m, message) in body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            for (b, block) in message["content"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                if block.get("cache_control").is_some() {
                    found.push(format!("messages[{m}].content[{b}]"));
                }
            }
        }
        found
    }

    fn request(messages: Vec<Message>) -> ModelRequest {
        ModelRequest {
            model: "claude-test".into(),
            system: Some("You are terse.".into()),
            tools: vec![
                Arc::new(ToolSchema::new("read", "Reads.", json!({"type": "object"}))),
                Arc::new(ToolSchema::new("bash", "Runs.", json!({"type": "object"}))),
            ],
            messages,
            session: None,
            effort: None,
            max_tokens: None,
        }
    }

    fn user(text: &str) -> Message {
        Message::User { text: text.into() }
    }

    fn answer(text: &str, calls: &[&str]) -> Message {
        Message::Assistant {
            text: text.into(),
            tool_calls: calls
                .iter()
                .map(|id| ToolCall::new(*id, "read", r#"{"path":"a"}"#))
                .collect(),
            thoughts: Vec::new(),
        }
    }

    fn result(id: &str, is_error: bool) -> Message {
        Message::Tool {
            call_id: id.into(),
            name: "read".into(),
            text: format!("result of {id}"),
            is_error,
            images: Vec::new(),
        }
    }

    #[test]
    fn a_first_request_marks_tools_system_and_its_last_message() {
        let body = wire(&request(vec![user("hi")]), CacheTtl::FiveMinutes);
        assert_eq!(
            breakpoints(&body),
            ["tools[1]", "system[0]", "messages[0].content[0]"]
        );
        assert_eq!(
            body["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
    }

    #[test]
    fn a_later_request_also_marks_where_the_previous_one_ended() {
        let body = wire(
            &request(vec![
                user("hi"),
                answer("", &["a", "b"]),
                result("a", false),
                result("b", true),
            ]),
            CacheTtl::OneHour,
        );
        assert_eq!(
            breakpoints(&body),
            [
                "tools[1]",
                "system[0]",
                "messages[0].content[0]",
                "messages[2].content[1]"
            ]
        );
        assert_eq!(
            body["messages"][2],
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "result of a"},
                {"type": "tool_result", "tool_use_id": "b", "content": "result of b", "is_error": true,
                 "cache_control": {"type": "ephemeral", "ttl": "1h"}},
            ]})
        );
    }

    #[test]
    fn without_tools_or_system_prompt_there_are_fewer_marks() {
        let mut bare = request(vec![user("a"), answer("b", &[]), user("c")]);
        bare.tools.clear();
        bare.system = None;
        let body = wire(&bare, CacheTtl::FiveMinutes);
        assert_eq!(
            breakpoints(&body),
            ["messages[0].content[0]", "messages[2].content[0]"]
        );
        assert!(body.get("tools").is_none() && body.get("system").is_none());
    }

    #[test]
    fn empty_texts_are_left_out_and_bad_tool_input_is_an_empty_object() {
        let body = wire(
            &request(vec![
                user("go"),
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall::new("x", "read", "not json")],
                    thoughts: Vec::new(),
                },
                result("x", true),
            ]),
            CacheTtl::FiveMinutes,
        );
        assert_eq!(
            body["messages"][1]["content"],
            json!([{"type": "tool_use", "id": "x", "name": "read", "input": {}}])
        );
    }

    #[test]
    fn an_image_of_the_users_is_a_base64_image_block_of_its_turn() {
        let image = crate::Image {
            mime_type: "image/png".into(),
            data: "iVBORw0K".into(),
        };
        let body = wire(
            &request(vec![user("what is this?"), Message::UserImage { image }]),
            CacheTtl::FiveMinutes,
        );
        // One user turn: the text, then the image (the API joins them).
        let content = &body["messages"][0]["content"];
        assert_eq!(content[0]["text"], "what is this?");
        assert_eq!(content[1]["type"], "image");
        assert_eq!(
            content[1]["source"],
            json!({"type": "base64", "media_type": "image/png", "data": "iVBORw0K"})
        );
        assert_eq!(body["messages"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn a_tools_images_follow_its_text_inside_its_result() {
        let mut with_image = result("c1", false);
        if let Message::Tool { images, .. } = &mut with_image {
            images.push(crate::Image {
                mime_type: "image/png".into(),
                data: "iVBORw0K".into(),
            });
        }
        let body = wire(
            &request(vec![
                user("look"),
                answer("", &["c1", "c2"]),
                with_image,
                result("c2", false),
            ]),
            CacheTtl::FiveMinutes,
        );
        let results = &body["messages"][2]["content"];
        assert_eq!(
            results[0]["content"],
            json!([
                {"type": "text", "text": "result of c1"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"}},
            ])
        );
        // A result without images stays a string.
        assert_eq!(results[1]["content"], "result of c2");
    }

    fn stream(events: &[Value]) -> Result<(Vec<String>, ModelResponse), String> {
        let mut message = StreamedMessage::default();
        let mut pieces = Vec::new();
        for event in events {
            match message.add(&event.to_string())? {
                Step::Shown { thought, text } => {
                    if !thought.is_empty() {
                        pieces.push(format!("thought: {thought}"));
                    }
                    pieces.push(text.to_owned());
                }
                Step::Stop => return Ok((pieces, message.finish()?)),
                Step::Error { kind, message } => return Err(format!("{kind}: {message}")),
                Step::Nothing => {}
            }
        }
        Err("no message_stop".into())
    }

    #[test]
    fn usage_adds_up_the_cache_and_takes_the_last_output_count() -> Result<(), String> {
        let (_, answer) = stream(&[
            json!({"type": "message_start", "message": {"usage": {
                "input_tokens": 10, "cache_creation_input_tokens": 200,
                "cache_read_input_tokens": 3000, "output_tokens": 1}}}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                   "usage": {"output_tokens": 42}}),
            json!({"type": "message_stop"}),
        ])?;
        assert_eq!(
            answer.usage,
            Some(
                Usage::new(3210, 42)
                    .with_cached_prompt_tokens(3000)
                    .with_cache_creation_prompt_tokens(200)
            )
        );
        Ok(())
    }

    #[test]
    fn a_delta_for_an_unopened_block_is_named() {
        let error = stream(&[json!({"type": "content_block_delta", "index": 2,
                                    "delta": {"type": "text_delta", "text": "x"}})])
        .err()
        .unwrap_or_default();
        assert!(error.contains("block 2"), "{error}");
        assert!(error.starts_with("event 1 of the stream"), "{error}");
    }

    #[test]
    fn unknown_events_and_blocks_are_passed_over() -> Result<(), String> {
        let (pieces, answer) = stream(&[
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "some_future_block", "data": "x"}}),
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "some_future_delta", "data": "y"}}),
            json!({"type": "some_future_event"}),
            json!({"type": "content_block_start", "index": 1,
                   "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 1,
                   "delta": {"type": "text_delta", "text": "Hi"}}),
            json!({"type": "message_stop"}),
        ])?;
        assert_eq!(pieces, ["Hi"]);
        assert_eq!(answer, ModelResponse::text("Hi"));
        Ok(())
    }

    fn cut_tool_input(stop_reason: &str) -> Vec<Value> {
        vec![
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "text_delta", "text": "Listing."}}),
            json!({"type": "content_block_start", "index": 1,
                   "content_block": {"type": "tool_use", "id": "toolu_9", "name": "bash", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1,
                   "delta": {"type": "input_json_delta", "partial_json": "{\"command\": \"ca"}}),
            json!({"type": "message_delta", "delta": {"stop_reason": stop_reason},
                   "usage": {"output_tokens": 1024}}),
            json!({"type": "message_stop"}),
        ]
    }

    #[test]
    fn a_tool_input_cut_short_by_max_tokens_is_left_out_of_an_answer_that_says_so()
    -> Result<(), String> {
        let (_, answer) = stream(&cut_tool_input("max_tokens"))?;
        assert_eq!(answer.text, "Listing.");
        assert!(answer.tool_calls.is_empty(), "{answer:?}");
        assert_eq!(answer.finish, FinishReason::MaxTokens);
        Ok(())
    }

    #[test]
    fn a_broken_tool_input_otherwise_is_an_error_naming_the_call() {
        let error = stream(&cut_tool_input("tool_use"))
            .err()
            .unwrap_or_default();
        assert!(error.contains("`toolu_9` (`bash`, block 1)"), "{error}");
        assert!(error.contains("raise `max_tokens`"), "{error}");
    }

    #[test]
    fn a_refusal_is_the_answers_finish() -> Result<(), String> {
        let (_, answer) = stream(&[
            json!({"type": "message_delta", "delta": {"stop_reason": "refusal"}}),
            json!({"type": "message_stop"}),
        ])?;
        assert_eq!(answer.finish, FinishReason::Refusal);
        let whole = response(br#"{"content": [], "stop_reason": "max_tokens"}"#)?;
        assert_eq!(whole.finish, FinishReason::MaxTokens);
        Ok(())
    }

    /// What a streamed message holds counts its text, its tool calls'
    /// opening events and input, and each block's own size, so that a
    /// flood of empty blocks reaches the answer limit too.
    #[test]
    fn what_a_message_holds_counts_every_block() -> Result<(), String> {
        let mut message = StreamedMessage::default();
        let block = std::mem::size_of::<PartialBlock>();
        for index in 0..3 {
            let start = json!({"type": "content_block_start", "index": index,
                               "content_block": {"type": "text", "text": ""}});
            message.add(&start.to_string())?;
        }
        assert_eq!(message.held(), 3 * block, "empty blocks");
        let text = json!({"type": "content_block_delta", "index": 0,
                          "delta": {"type": "text_delta", "text": "four"}});
        message.add(&text.to_string())?;
        assert_eq!(message.held(), 3 * block + 4);
        let tool = json!({"type": "content_block_start", "index": 3,
                          "content_block": {"type": "tool_use", "id": "t", "name": "bash", "input": {}}})
        .to_string();
        message.add(&tool)?;
        let input = json!({"type": "content_block_delta", "index": 3,
                           "delta": {"type": "input_json_delta", "partial_json": "{}"}});
        message.add(&input.to_string())?;
        assert_eq!(message.held(), 4 * block + 4 + tool.len() + 2);
        Ok(())
    }

    #[test]
    fn a_whole_message_is_read_too() -> Result<(), String> {
        let answer = response(
            br#"{"id": "msg_1", "type": "message", "role": "assistant", "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}}
            ], "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 7}}"#,
        )?;
        assert_eq!(
            answer,
            ModelResponse::text("Reading.")
                .with_tool_call(ToolCall::new("toolu_1", "read", r#"{"path":"a"}"#))
                .with_usage(Usage::new(5, 7))
        );
        Ok(())
    }

    #[test]
    fn a_whole_messages_thoughts_are_read_in_order() -> Result<(), String> {
        let answer = response(
            br#"{"content": [
                {"type": "thinking", "thinking": "Short file.", "signature": "c2ln"},
                {"type": "redacted_thinking", "data": "RU5D"},
                {"type": "text", "text": "Done."}
            ], "stop_reason": "end_turn"}"#,
        )?;
        assert_eq!(
            answer,
            ModelResponse::text("Done.")
                .with_thought(Thought::Text {
                    text: "Short file.".into(),
                    signature: Some("c2ln".into()),
                })
                .with_thought(Thought::Redacted {
                    data: "RU5D".into()
                })
        );
        Ok(())
    }

    #[test]
    fn a_thinking_delta_for_a_text_block_is_refused() {
        let error = stream(&[
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "thinking_delta", "thinking": "hm"}}),
        ])
        .err()
        .unwrap_or_default();
        assert!(error.contains("wrong kind for block 0"), "{error}");
    }

    /// A request's own limit (an MCP server's sampling) lowers
    /// `max_tokens`, never raises it, and thinking goes only with a limit
    /// its budget fits in.
    #[test]
    fn a_requests_own_limit_lowers_max_tokens_and_drops_a_budget_it_cannot_hold() {
        let wire = MessagesWire {
            max_tokens: 8192,
            cache_ttl: CacheTtl::FiveMinutes,
            thinking_budget: Some(2048),
        };
        let body = |max_tokens: Option<u32>| {
            let request = ModelRequest {
                max_tokens,
                ..request(vec![user("hi")])
            };
            serde_json::to_value(super::request(&request, &wire)).unwrap_or_default()
        };
        let plain = body(None);
        assert_eq!(
            (
                plain["max_tokens"].clone(),
                plain["thinking"]["budget_tokens"].clone()
            ),
            (json!(8192), json!(2048))
        );
        let roomy = body(Some(4096));
        assert_eq!(
            (
                roomy["max_tokens"].clone(),
                roomy["thinking"]["budget_tokens"].clone()
            ),
            (json!(4096), json!(2048))
        );
        let small = body(Some(64));
        assert_eq!(small["max_tokens"], 64);
        assert!(small.get("thinking").is_none(), "{small}");
        assert_eq!(body(Some(100_000))["max_tokens"], 8192);
    }

    #[test]
    fn only_signed_and_redacted_thoughts_go_back_and_only_with_thinking_on() {
        let thoughts = vec![
            Thought::Text {
                text: "unsigned".into(),
                signature: None,
            },
            Thought::Text {
                text: "signed".into(),
                signature: Some("c2ln".into()),
            },
            Thought::Redacted {
                data: "RU5D".into(),
            },
        ];
        let conversation = [Message::Assistant {
            text: "Hi.".into(),
            tool_calls: Vec::new(),
            thoughts,
        }];
        let on = serde_json::to_value(messages(&conversation, true)).unwrap_or_default();
        assert_eq!(
            on[0]["content"],
            json!([
                {"type": "thinking", "thinking": "signed", "signature": "c2ln"},
                {"type": "redacted_thinking", "data": "RU5D"},
                {"type": "text", "text": "Hi."},
            ])
        );
        let off = serde_json::to_value(messages(&conversation, false)).unwrap_or_default();
        assert_eq!(off[0]["content"], json!([{"type": "text", "text": "Hi."}]));
    }

    #[test]
    fn answers_joined_across_a_dropped_empty_message_keep_their_thoughts_first() {
        let thought = |text: &str| Thought::Text {
            text: text.into(),
            signature: Some("c2ln".into()),
        };
        let conversation = [
            user("ping"),
            Message::Assistant {
                text: "Looking.".into(),
                tool_calls: Vec::new(),
                thoughts: vec![thought("first")],
            },
            // Empty: left out, so the two answers are joined.
            user(""),
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall::new("c1", "read", "{}")],
                thoughts: vec![thought("second")],
            },
        ];
        let wire = serde_json::to_value(messages(&conversation, true)).unwrap_or_default();
        let types: Vec<&str> = wire[1]["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|block| block["type"].as_str())
            .collect();
        assert_eq!(wire.as_array().map(Vec::len), Some(2));
        assert_eq!(types, ["thinking", "thinking", "text", "tool_use"]);
        assert_eq!(wire[1]["content"][1]["thinking"], "second");
    }
}
