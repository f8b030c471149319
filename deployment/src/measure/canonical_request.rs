//! The canonical serialization of a model request: the one byte string
//! `dsh run --trace` measures, and the text `dsh prompt --format explain`
//! and `dsh check` count a tool schema's bytes and tokens in.
//!
//! A request is the concatenation, with nothing between them, of its
//! parts, in the order a provider's prompt cache reads them:
//!
//! 1. the system prompt, byte for byte as rendered (an empty part when the
//!    prompt is empty and no system message is sent);
//! 2. each tool schema of the step's final assembly, in order, as compact
//!    JSON with the keys `name`, `description`, `parameters`
//!    (`{"name":"read","description":"…","parameters":{…}}`);
//! 3. each message of the conversation, in order, as compact JSON of the
//!    loop's `Message`: `{"role":"user","text":…}`,
//!    `{"role":"assistant","text":…,"tool_calls":[{"id":…,"name":…,"arguments":…}]}`,
//!    `{"role":"tool","call_id":…,"name":…,"text":…,"is_error":…}`.
//!
//! It is not any adapter's wire format (the OpenAI adapter wraps each tool
//! in `{"type":"function","function":…}` and names the fields its own
//! way), so its byte counts are not the request body's. But each part is
//! a function of exactly the values the wire format is made of, in the
//! same order, so a prefix shared by two canonical requests ends where the
//! shared prefix of what the adapter sends ends — the measure a prompt
//! cache cares about — without re-serializing inside an adapter.

use std::sync::Arc;

use dsh_agent_loop::Message;
use dsh_system_prompt::ToolSchema;
use serde::Serialize;

/// Which of the three kinds of part a part is; ordered as they are sent,
/// and serialized as a trace names where a prefix broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum PartKind {
    /// The system prompt (one part).
    #[serde(rename = "system_prompt")]
    SystemPrompt,
    /// A tool's schema (one part a tool).
    #[serde(rename = "tools")]
    Tool,
    /// A message of the conversation (one part a message).
    #[serde(rename = "messages")]
    Message,
}

/// One part of a canonical request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Part {
    /// What it is.
    pub kind: PartKind,
    /// Its canonical text: what is measured.
    pub text: String,
}

/// The parts of a request, in order: the system prompt, the tools, the
/// messages.
pub(crate) fn parts(system: &str, tools: &[Arc<ToolSchema>], messages: &[Message]) -> Vec<Part> {
    let mut parts = Vec::with_capacity(1 + tools.len() + messages.len());
    parts.push(Part {
        kind: PartKind::SystemPrompt,
        text: system.to_owned(),
    });
    parts.extend(tools.iter().map(|tool| Part {
        kind: PartKind::Tool,
        text: tool_json(tool),
    }));
    parts.extend(messages.iter().map(message_part));
    parts
}

/// A message's part: its compact JSON.
pub(crate) fn message_part(message: &Message) -> Part {
    Part {
        kind: PartKind::Message,
        // Strings and booleans only: serializing cannot fail.
        text: serde_json::to_string(message).unwrap_or_default(),
    }
}

/// A tool schema's part: its compact JSON.
pub fn tool_json(tool: &ToolSchema) -> String {
    // Strings and a JSON value: serializing cannot fail.
    serde_json::to_string(tool).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_the_system_prompt_then_the_tools_then_the_messages() {
        let tool = Arc::new(ToolSchema::new(
            "read",
            "Reads a file.",
            serde_json::json!({"type": "object"}),
        ));
        let parts = parts(
            "You are terse.",
            &[tool],
            &[Message::User { text: "hi".into() }],
        );
        let texts: Vec<(PartKind, &str)> = parts
            .iter()
            .map(|part| (part.kind, part.text.as_str()))
            .collect();
        assert_eq!(
            texts,
            [
                (PartKind::SystemPrompt, "You are terse."),
                (
                    PartKind::Tool,
                    r#"{"name":"read","description":"Reads a file.","parameters":{"type":"object"}}"#
                ),
                (PartKind::Message, r#"{"role":"user","text":"hi"}"#),
            ]
        );
    }
}
