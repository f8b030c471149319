//! A server's prompts: listed at its start and again when it says they
//! changed, and got (`prompts/get`) as the text of a person's turn.
//!
//! A front end offers each prompt as a command (`/<server>:<prompt>`);
//! the host reads its arguments (`dsh_deployment::host::input`), and
//! [`McpServer::get_prompt`](crate::McpServer::get_prompt) asks the
//! server for its messages, rendered here as one text.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use rmcp::RoleClient;
use rmcp::model::{GetPromptResult, PaginatedRequestParams, Prompt};
use rmcp::service::{Peer, ServiceError};

use crate::MAX_RESULT_BYTES;
use crate::tools::render::{capped, render_block};

/// The most pages of `prompts/list` dsh reads, and the most prompts.
const MAX_PROMPT_PAGES: usize = 20;
const MAX_PROMPTS: usize = 1000;

/// One prompt a server offers, as its `prompts/list` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerPrompt {
    /// Its name, as `prompts/get` takes it.
    pub name: String,
    /// What it does, in the server's words.
    pub description: Option<String>,
    /// Its arguments, in the server's order.
    pub arguments: Vec<PromptArgument>,
}

/// One argument of a [`ServerPrompt`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// What it is, in the server's words.
    pub description: Option<String>,
    /// Whether `prompts/get` needs it.
    pub required: bool,
}

impl From<Prompt> for ServerPrompt {
    fn from(prompt: Prompt) -> Self {
        Self {
            name: prompt.name,
            description: prompt.description,
            arguments: (prompt.arguments.unwrap_or_default().into_iter())
                .map(|argument| PromptArgument {
                    name: argument.name,
                    description: argument.description,
                    required: argument.required == Some(true),
                })
                .collect(),
        }
    }
}

/// Why a prompt's text could not be had. Every message names the server
/// and the prompt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PromptError {
    /// No running server of the session has this name.
    #[error("no MCP server `{server}` is running for this session")]
    UnknownServer {
        /// The server named.
        server: String,
    },
    /// The server has no prompt of this name.
    #[error("MCP server `{server}` has no prompt `{prompt}`{}", known_list(known))]
    UnknownPrompt {
        /// The server.
        server: String,
        /// The prompt named.
        prompt: String,
        /// The prompts it has.
        known: Vec<String>,
    },
    /// The person cancelled while the server was asked.
    #[error("prompt `{prompt}` of MCP server `{server}` was cancelled")]
    Cancelled {
        /// The server.
        server: String,
        /// The prompt.
        prompt: String,
    },
    /// `prompts/get` failed: the server answered with an error, did not
    /// answer in time, or is gone.
    #[error("MCP server `{server}` could not give prompt `{prompt}`: {message}")]
    Failed {
        /// The server.
        server: String,
        /// The prompt.
        prompt: String,
        /// What failed.
        message: String,
    },
}

/// `; it has `a`, `b`` (or `; it has none`).
fn known_list(known: &[String]) -> String {
    match known {
        [] => "; it has none".to_owned(),
        _ => format!("; it has {}", dsh_prompt_template::quoted_list(known)),
    }
}

/// A server's prompts now, shared by the server, which reads them, and
/// the connection's handler, which lists them again when the server says
/// they changed, then tells whoever listens ([`McpServers`](crate::McpServers)).
#[derive(Debug)]
pub(crate) struct PromptList {
    server: String,
    /// Where a list that fails is said.
    output: crate::ServerOutput,
    /// How long a list may take: the server's startup timeout.
    timeout: std::time::Duration,
    prompts: RwLock<Option<Arc<[ServerPrompt]>>>,
    /// One list at a time, in the order the notifications came.
    listing: tokio::sync::Mutex<()>,
    /// Told the server's name when its prompts changed.
    listeners: Mutex<Vec<tokio::sync::broadcast::Sender<String>>>,
}

impl PromptList {
    pub(crate) fn new(
        server: &str,
        timeout: std::time::Duration,
        output: crate::ServerOutput,
    ) -> Self {
        Self {
            server: server.to_owned(),
            output,
            timeout,
            prompts: RwLock::new(None),
            listing: tokio::sync::Mutex::new(()),
            listeners: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn get(&self) -> Option<Arc<[ServerPrompt]>> {
        self.prompts.read().clone()
    }

    pub(crate) fn set(&self, prompts: Option<Arc<[ServerPrompt]>>) {
        *self.prompts.write() = prompts;
    }

    /// Tells `listener` the server's name whenever its prompts change.
    pub(crate) fn tell(&self, listener: tokio::sync::broadcast::Sender<String>) {
        self.listeners.lock().push(listener);
    }

    /// Lists the prompts again (the server said they changed), then tells
    /// the listeners; a list that fails or times out leaves them as they
    /// were, and says so.
    pub(crate) async fn relist(&self, peer: &Peer<RoleClient>) {
        let _one_at_a_time = self.listing.lock().await;
        match tokio::time::timeout(self.timeout, list_prompts(peer)).await {
            Ok(Ok(prompts)) => self.set(Some(prompts.into())),
            Ok(Err(error)) => {
                let said = format!("its prompts changed, but could not be listed again: {error}");
                return self.output.failed(&self.server, said);
            }
            Err(_) => {
                let said = "its prompts changed, but listing them again timed out";
                return self.output.failed(&self.server, said);
            }
        }
        for listener in self.listeners.lock().iter() {
            // No receiver now: no one to tell.
            let _ = listener.send(self.server.clone());
        }
    }
}

/// Every prompt `peer` lists, page after page, at most
/// `MAX_PROMPT_PAGES` pages and `MAX_PROMPTS` prompts.
pub(crate) async fn list_prompts(
    peer: &Peer<RoleClient>,
) -> Result<Vec<ServerPrompt>, ServiceError> {
    let mut prompts = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PROMPT_PAGES {
        let params =
            cursor.map(|cursor| PaginatedRequestParams::default().with_cursor(Some(cursor)));
        let page = peer.list_prompts(params).await?;
        prompts.extend(page.prompts.into_iter().map(ServerPrompt::from));
        if prompts.len() >= MAX_PROMPTS {
            prompts.truncate(MAX_PROMPTS);
            break;
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    Ok(prompts)
}

/// The arguments of `prompts/get`, as JSON strings.
pub(crate) fn arguments_object(
    arguments: &BTreeMap<String, String>,
) -> serde_json::Map<String, serde_json::Value> {
    (arguments.iter())
        .map(|(name, value)| (name.clone(), serde_json::Value::String(value.clone())))
        .collect()
}

/// A prompt's messages as the text of one person's turn: each message's
/// content rendered as a tool result's is (text as it is, the rest
/// described), an assistant's message marked as such, the messages
/// separated by a blank line; capped at [`MAX_RESULT_BYTES`] with the
/// usual marker.
pub(crate) fn render_messages(result: &GetPromptResult) -> String {
    let parts: Vec<String> = (result.messages.iter())
        .map(|message| {
            let (text, _) = render_block(&message.content, None);
            match message.role {
                rmcp::model::Role::Assistant => {
                    format!("[the assistant, as the prompt has it]\n{text}")
                }
                _ => text,
            }
        })
        .collect();
    capped(parts.join("\n\n"), MAX_RESULT_BYTES)
}

#[cfg(test)]
mod tests {
    use rmcp::model::{PromptMessage, Role};

    use super::*;

    #[test]
    fn a_prompts_messages_are_one_text_with_the_assistants_marked() {
        let result = GetPromptResult::new(vec![
            PromptMessage::new_text(Role::User, "Review a.rs."),
            PromptMessage::new_text(Role::Assistant, "Which part?"),
        ]);
        assert_eq!(
            render_messages(&result),
            "Review a.rs.\n\n[the assistant, as the prompt has it]\nWhich part?"
        );
    }

    #[test]
    fn an_unknown_prompt_names_the_ones_there_are() {
        let error = PromptError::UnknownPrompt {
            server: "docs".to_owned(),
            prompt: "reveiw".to_owned(),
            known: vec!["review".to_owned()],
        };
        assert_eq!(
            error.to_string(),
            "MCP server `docs` has no prompt `reveiw`; it has `review`"
        );
    }
}
