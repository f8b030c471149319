//! The client's own `systemPrompt` (schema 1.17, advertised with
//! `sessionCapabilities.systemPrompt`, both modes), as the host's
//! `ClientPrompt`, which the session registers into its layer with its
//! instruction files; the rules (what an override keeps) are the host's,
//! this module maps the protocol onto them.
//!
//! Clients that predate the stable field send `_meta.systemPrompt` (a
//! string, or `{append}`): the same thing, in `append` mode.
//!
//! A mode dsh does not support, an empty `content` or a block other than
//! text is `-32602` and no session, as the protocol requires.

use agent_client_protocol::v1::schema::{
    ContentBlock, SessionSystemPromptCapabilities, SessionSystemPromptModeCapabilities,
    SessionSystemPromptOverrideCapabilities, SystemPrompt as AcpSystemPrompt, SystemPromptMode,
};
use agent_client_protocol::{Error, ErrorCode};
use dsh_deployment::facts::client_prompt::{ClientPrompt, ClientPromptMode};

/// The client's name when `initialize` named none.
pub(super) const UNNAMED_CLIENT: &str = "the ACP client";

/// `sessionCapabilities.systemPrompt`: `append`, and `override`.
pub(super) fn capabilities() -> SessionSystemPromptCapabilities {
    SessionSystemPromptCapabilities::new().mode(
        SessionSystemPromptModeCapabilities::new()
            .override_(SessionSystemPromptOverrideCapabilities::new()),
    )
}

/// The client's system prompt: the stable `systemPrompt`, else the
/// `_meta.systemPrompt` most clients still send — a string, or
/// `{"append": string}` — as `append`.
pub(super) fn of_request(
    stable: Option<AcpSystemPrompt>,
    meta: &Option<serde_json::Map<String, serde_json::Value>>,
) -> Option<AcpSystemPrompt> {
    stable.or_else(|| {
        let text = match meta.as_ref()?.get("systemPrompt")? {
            serde_json::Value::String(text) => text,
            serde_json::Value::Object(fields) => fields.get("append")?.as_str()?,
            _ => return None,
        };
        Some(AcpSystemPrompt::new(vec![ContentBlock::from(
            text.to_owned(),
        )]))
    })
}

/// The client's `systemPrompt` as the loop's `ClientPrompt`: its text
/// blocks joined by a blank line.
pub(super) fn client_prompt(
    client: &str,
    system_prompt: AcpSystemPrompt,
) -> Result<ClientPrompt, Error> {
    let invalid = |message: String| {
        Error::new(ErrorCode::INVALID_PARAMS, message)
            .data(serde_json::json!({ "field": "systemPrompt" }))
    };
    let mode = match &system_prompt.mode {
        SystemPromptMode::Append => ClientPromptMode::Append,
        SystemPromptMode::Override => ClientPromptMode::Override,
        other => {
            let name = serde_json::to_value(other)
                .ok()
                .and_then(|value| value.as_str().map(str::to_owned))
                .unwrap_or_else(|| format!("{other:?}"));
            return Err(invalid(format!(
                "`systemPrompt.mode` `{name}` is not supported; dsh supports `append` and \
                 `override`"
            )));
        }
    };
    if system_prompt.content.is_empty() {
        return Err(invalid(
            "`systemPrompt.content` is empty; send at least one `text` block, or leave \
             `systemPrompt` out"
                .to_owned(),
        ));
    }
    let mut texts = Vec::with_capacity(system_prompt.content.len());
    for (at, block) in system_prompt.content.iter().enumerate() {
        match block {
            ContentBlock::Text(text) => texts.push(text.text.as_str()),
            other => {
                let kind = serde_json::to_value(other)
                    .ok()
                    .and_then(|value| value.get("type")?.as_str().map(str::to_owned))
                    .unwrap_or_else(|| "unknown".to_owned());
                return Err(invalid(format!(
                    "`systemPrompt.content[{at}]` is a `{kind}` block; a system prompt takes \
                     `text` blocks only"
                )));
            }
        }
    }
    Ok(ClientPrompt::new(client, mode, texts.join("\n\n")))
}
