//! Sampling and elicitation: what an MCP server asks of the person dsh
//! works for. One owner each for what both front ends need — what the
//! person is shown ([`describe_sampling`], [`describe_elicitation`]),
//! whether a mode asks ([`sampling_asks`]), what a refusal says
//! ([`cannot_ask`]), and the model call itself ([`Sampler`]); how to ask
//! is the front end's (`dsh run` the terminal, `dsh acp` the editor),
//! through the same machinery as a tool's approval.
//!
//! A request is answered by the session's model adapter, with the
//! server's system prompt and messages alone (no tools, none of the
//! session's prompt or history), its `maxTokens` capped at
//! [`MAX_SAMPLED_TOKENS`], and counted in the trace
//! ([`Trace::sampled`]).

use std::sync::Arc;

use dsh_agent_loop::{FinishReason, Image, ImageBudget, Message, ModelAdapter, ModelRequest};
use dsh_tool_mcp::{
    AskError, ElicitKind, Elicitation, Sampled, SampledContent, SampledRole, SampledStop,
    SamplingRequest,
};
use tokio_util::sync::CancellationToken;

use super::modes::Asking;
use crate::measure::trace::Trace;

pub use dsh_tool_mcp::MAX_SAMPLED_TOKENS;

/// The most characters of each part of a request the person is shown
/// (escaped): the system prompt, each message.
const SHOWN_CHARS: usize = 400;

/// The most messages of a request the person is shown; the rest are
/// counted.
const SHOWN_MESSAGES: usize = 8;

/// Answers sampling requests with a host's model adapter, and counts
/// each in its trace.
#[derive(Clone)]
pub struct Sampler {
    model: Arc<dyn ModelAdapter>,
    /// The model a request names when its session's is not known.
    default_model: String,
    trace: Arc<Trace>,
}

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampler")
            .field("default_model", &self.default_model)
            .finish_non_exhaustive()
    }
}

impl Sampler {
    /// A request of `server` (for `session`, when known) refused past
    /// its sampling limits, `why`: a line of the trace.
    pub(crate) fn refused(&self, server: &str, session: Option<&str>, why: &str) {
        self.trace.sampling_refused(server, session, why);
    }

    /// A sampler on `model`, naming `default_model`, counting in `trace`.
    pub fn new(model: Arc<dyn ModelAdapter>, default_model: String, trace: Arc<Trace>) -> Self {
        Self {
            model,
            default_model,
            trace,
        }
    }

    /// The model's answer to `request` (someone allowed it), from
    /// `model` (the session's; the host's agent's when `None`), until
    /// `cancel`.
    pub async fn sample(
        &self,
        request: &SamplingRequest,
        model: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<Sampled, AskError> {
        let model = model.unwrap_or(&self.default_model).to_owned();
        let model_request = ModelRequest {
            model: model.clone(),
            system: request
                .system_prompt
                .clone()
                .filter(|text| !text.is_empty()),
            tools: Vec::new(),
            messages: messages(request),
            session: None,
            effort: None,
            max_tokens: Some(max_tokens(request)),
        };
        let server = &request.origin.server;
        let answer = self.model.complete(&model_request, &|_| {}, cancel).await;
        let response = answer.map_err(|error| {
            AskError::Failed(format!(
                "the model failed to answer MCP server `{server}`'s sampling request: {error}"
            ))
        })?;
        self.trace.sampled(
            server,
            request.origin.session.as_deref(),
            &model,
            response.usage,
        );
        let stop = match response.finish {
            FinishReason::MaxTokens => SampledStop::MaxTokens,
            FinishReason::Refusal => SampledStop::Refusal,
            _ => SampledStop::EndTurn,
        };
        Ok(Sampled {
            model,
            text: response.text,
            stop,
        })
    }
}

/// The loop's messages of `request`: text as it is, images of the
/// person's messages as images when a model API takes them (checked as
/// every image is, [`ImageBudget`]), the rest as the line that describes
/// it.
fn messages(request: &SamplingRequest) -> Vec<Message> {
    let mut messages = Vec::new();
    for message in &request.messages {
        let mut text = Vec::new();
        let mut images = Vec::new();
        let mut budget = ImageBudget::default();
        for block in &message.content {
            match (block, message.role) {
                (SampledContent::Text(said), _) | (SampledContent::Described(said), _) => {
                    text.push(said.clone());
                }
                (SampledContent::Image { mime_type, data }, SampledRole::User) => {
                    let image = Image {
                        mime_type: mime_type.clone(),
                        data: data.clone(),
                    };
                    match budget.admit(&image) {
                        Ok(()) => images.push(image),
                        Err(problem) => text.push(image.refused(&problem)),
                    }
                }
                (SampledContent::Image { mime_type, .. }, SampledRole::Assistant) => {
                    text.push(format!("[an image, {mime_type}, not sent]"));
                }
            }
        }
        let text = text.join("\n\n");
        match message.role {
            SampledRole::User => {
                messages.push(Message::User { text });
                messages.extend(images.into_iter().map(|image| Message::UserImage { image }));
            }
            SampledRole::Assistant => messages.push(Message::Assistant {
                text,
                tool_calls: Vec::new(),
                thoughts: Vec::new(),
            }),
        }
    }
    messages
}

/// Whether a sampling request asks the person first in a mode that asks
/// as `asking` says: always, but in a mode that never asks (full
/// access), where a server may use the model as the agent's tools run,
/// unasked.
pub fn sampling_asks(asking: Asking) -> bool {
    asking != Asking::Never
}

/// The refusal of a request of `server` no one can be asked about, and
/// `why` (lower case, no period).
pub fn cannot_ask(server: &str, why: &str) -> AskError {
    AskError::Refused(format!(
        "MCP server `{server}` asked to use the model (sampling), which needs the user's \
         permission, and it could not be asked: {why}"
    ))
}

/// The refusal of a request of `server` the person declined.
pub fn declined(server: &str) -> AskError {
    AskError::Refused(format!(
        "the user declined MCP server `{server}`'s request to use the model (sampling)"
    ))
}

/// The input of a sampling request, as a front end shows it with the
/// request's call: the server, the system prompt, the most tokens.
pub fn sampling_input(request: &SamplingRequest) -> serde_json::Value {
    serde_json::json!({
        "server": request.origin.server,
        "systemPrompt": request.system_prompt,
        "maxTokens": max_tokens(request),
    })
}

/// The title of a sampling request, for the person.
pub fn sampling_title(request: &SamplingRequest) -> String {
    format!(
        "MCP server `{}` asks to use the model",
        request.origin.server
    )
}

/// What the person is shown of a sampling request: its system prompt,
/// its messages, each escaped (one line each) and cut at 400 characters
/// (at most 8 messages, the rest counted); how much it sends in all
/// (characters, images); and its token limit.
pub fn describe_sampling(request: &SamplingRequest) -> String {
    let mut lines = Vec::new();
    if let Some(system) = &request.system_prompt {
        lines.push(format!("system prompt: {}", shown(system)));
    }
    for message in request.messages.iter().take(SHOWN_MESSAGES) {
        let role = match message.role {
            SampledRole::User => "user",
            SampledRole::Assistant => "assistant",
        };
        let parts: Vec<String> = (message.content.iter())
            .map(|block| match block {
                SampledContent::Text(text) | SampledContent::Described(text) => text.clone(),
                SampledContent::Image { mime_type, data } => {
                    format!("[image, {mime_type}, {} bytes of base64]", data.len())
                }
            })
            .collect();
        lines.push(format!("{role}: {}", shown(&parts.join(" "))));
    }
    let more = request.messages.len().saturating_sub(SHOWN_MESSAGES);
    if more > 0 {
        lines.push(format!("… and {more} more messages"));
    }
    lines.push(size(request));
    lines.push(format!("max tokens: {}", max_tokens(request)));
    lines.join("\n")
}

/// The most tokens the model is asked for, for `request`: its
/// `maxTokens` within 1 and [`MAX_SAMPLED_TOKENS`] (a model API refuses
/// a limit of 0).
fn max_tokens(request: &SamplingRequest) -> u32 {
    dsh_tool_mcp::sampled_tokens(request.max_tokens)
}

/// How much `request` sends the model in all, whatever is shown of it:
/// `in all: 1200 characters, 2 images`.
fn size(request: &SamplingRequest) -> String {
    let mut chars = request
        .system_prompt
        .as_deref()
        .map_or(0, |text| text.chars().count());
    let mut images = 0;
    for block in request.messages.iter().flat_map(|message| &message.content) {
        match block {
            SampledContent::Text(text) | SampledContent::Described(text) => {
                chars += text.chars().count();
            }
            SampledContent::Image { .. } => images += 1,
        }
    }
    let counted = |n: usize, noun: &str| match n {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    };
    format!(
        "in all: {}, {}",
        counted(chars, "character"),
        counted(images, "image")
    )
}

/// What the person is shown of an elicitation: the server, its message
/// (escaped, cut), and the URL of one that sends them to a page.
pub fn describe_elicitation(request: &Elicitation) -> String {
    let mut said = format!(
        "MCP server `{}` asks: {}",
        request.origin.server,
        shown(&request.message)
    );
    if let ElicitKind::Url { url, .. } = &request.kind {
        said.push_str(&format!("\nURL: {}", shown(url)));
    }
    said
}

/// A server's `text` as a person is shown it ([`dsh_tool_mcp::shown`]),
/// cut at [`SHOWN_CHARS`].
fn shown(text: &str) -> String {
    dsh_tool_mcp::shown(text, SHOWN_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_tool_mcp::{Origin, SampledMessage};

    /// A PNG's signature, in base64.
    const PNG: &str = "iVBORw0KGgo=";

    fn request(text: &str, max_tokens: u32) -> SamplingRequest {
        SamplingRequest {
            origin: Origin {
                server: "docs".into(),
                session: None,
                call: None,
            },
            system_prompt: Some("Be brief.\nAlways.".into()),
            messages: vec![SampledMessage {
                role: SampledRole::User,
                content: vec![
                    SampledContent::Text(text.into()),
                    SampledContent::Image {
                        mime_type: "image/png".into(),
                        data: PNG.into(),
                    },
                ],
            }],
            max_tokens,
        }
    }

    #[test]
    fn a_request_is_shown_escaped_cut_and_capped() {
        let long = "x".repeat(1000);
        let said = describe_sampling(&request(&format!("hi\u{1b}[2J {long}"), 100_000));
        let lines: Vec<&str> = said.lines().collect();
        assert_eq!(lines[0], "system prompt: Be brief.\\nAlways.");
        assert!(lines[1].starts_with("user: hi\\u{1b}[2J xxx"), "{said}");
        assert!(lines[1].ends_with("x…"), "{said}");
        // 17 of the system prompt, 1007 of the text; and the image.
        assert_eq!(lines[2], "in all: 1024 characters, 1 image");
        assert_eq!(lines[3], "max tokens: 4096");
    }

    #[test]
    fn the_token_limit_is_at_least_one_and_at_most_the_cap() {
        assert_eq!(max_tokens(&request("hi", 0)), 1);
        assert_eq!(max_tokens(&request("hi", 100)), 100);
        assert_eq!(max_tokens(&request("hi", u32::MAX)), MAX_SAMPLED_TOKENS);
        let said = describe_sampling(&request("hi", 0));
        assert!(said.ends_with("\nmax tokens: 1"), "{said}");
    }

    #[test]
    fn images_of_the_person_are_sent_as_images() {
        let messages = messages(&request("look", 10));
        assert_eq!(
            messages[0],
            Message::User {
                text: "look".into()
            }
        );
        assert!(matches!(&messages[1], Message::UserImage { image } if image.data == PNG));
    }

    #[test]
    fn an_image_no_model_api_takes_is_described_not_sent() {
        let mut mislabelled = request("look", 10);
        mislabelled.messages[0].content[1] = SampledContent::Image {
            mime_type: "image/png".into(),
            data: "/9j/4AAQ".into(),
        };
        mislabelled.messages[0].content.push(SampledContent::Image {
            mime_type: "image/gif".into(),
            data: "not base64!".into(),
        });
        assert_eq!(
            messages(&mislabelled),
            [Message::User {
                text: "look\n\n\
                       [image: image/png, 6 bytes, not shown: its bytes are not of the type \
                       it declares]\n\n\
                       [image: image/gif, 6 bytes, not shown: its data is not valid base64]"
                    .into()
            }]
        );
    }

    #[test]
    fn only_a_mode_that_never_asks_samples_unasked() {
        assert!(sampling_asks(Asking::Policy));
        assert!(sampling_asks(Asking::SideEffects));
        assert!(!sampling_asks(Asking::Never));
    }
}
