//! Multi round-trip requests (MCP 2026-07-28): a server answers
//! `tools/call`, `prompts/get` or `resources/read` with `resultType:
//! "input_required"` and the questions it has (a form or a URL for the
//! person, a message of the model, the roots). dsh answers each through
//! the connection's [`Handler`] — the same asker, the same rules (a
//! question of a call of two sessions declined, one withdrawn with its
//! call) as a 2025-11-25 server's `elicitation/create`,
//! `sampling/createMessage` and `roots/list` — and retries the request
//! with the answers (`inputResponses`) and the state the server gave
//! (`requestState`), echoed as it came, at most [`MAX_ROUNDS`] times.
//!
//! rmcp's `RunningService::call_tool` drives the rounds the same way,
//! but only from the `RunningService`, and without the progress token
//! dsh ties to a call's display; this is its loop, over dsh's own send.

use std::future::Future;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, GetPromptRequestParams, InputRequest, InputRequests,
    InputRequiredResult, InputResponses, NumberOrString, ReadResourceRequestParams, ServerRequest,
};
use rmcp::service::{Peer, RequestContext, ServiceError};
use rmcp::{ErrorData, RoleClient, Service};

use crate::questions::client::Handler;

/// The most rounds one request may take before dsh gives up on it
/// (rmcp's and the other SDKs' default).
pub(crate) const MAX_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// What one round of a request came back with.
pub(crate) enum Round<T> {
    /// The request's result.
    Complete(T),
    /// The server's questions, and the state to echo.
    InputRequired(InputRequiredResult),
}

/// A request that can be sent again with the answers of a round.
pub(crate) trait Retry: Clone {
    /// Puts `answers` and the server's `state` in the request.
    fn retry_with(&mut self, answers: Option<InputResponses>, state: Option<String>);
}

macro_rules! retry {
    ($($params:ty),*) => {$(
        impl Retry for $params {
            fn retry_with(&mut self, answers: Option<InputResponses>, state: Option<String>) {
                self.input_responses = answers;
                self.request_state = state;
            }
        }
    )*};
}

retry!(
    CallToolRequestParams,
    GetPromptRequestParams,
    ReadResourceRequestParams
);

/// Sends `params` with `once`, answering the questions of each round
/// through `handler` and sending it again, until the server completes
/// it; [`ServiceError::InputRequiredRoundsExceeded`] after
/// [`MAX_ROUNDS`]. A question the handler fails to answer fails the
/// request, as rmcp's own loop does. A round with no question, only a
/// state (a server shedding load), is retried after a short wait that
/// grows to a quarter of a second.
pub(crate) async fn drive<P, T, F, Fut>(
    handler: &Handler,
    peer: &Peer<RoleClient>,
    mut params: P,
    mut once: F,
) -> Result<T, ServiceError>
where
    P: Retry,
    F: FnMut(P) -> Fut,
    Fut: Future<Output = Result<Round<T>, ServiceError>>,
{
    let mut state_only = 0u32;
    for _ in 0..MAX_ROUNDS {
        let asked = match once(params.clone()).await? {
            Round::Complete(result) => return Ok(result),
            Round::InputRequired(asked) => asked,
        };
        let questions = asked.input_requests.unwrap_or_default();
        if questions.is_empty() {
            if asked.request_state.is_none() {
                // Neither a question nor a state: nothing to retry with.
                return Err(ServiceError::UnexpectedResponse);
            }
            let wait = 50u64.saturating_mul(1 << state_only.min(3)).min(250);
            tokio::time::sleep(Duration::from_millis(wait)).await;
            state_only += 1;
        } else {
            state_only = 0;
        }
        let answers = answer_all(handler, peer, questions).await?;
        params.retry_with(
            (!answers.is_empty()).then_some(answers),
            asked.request_state,
        );
    }
    Err(ServiceError::InputRequiredRoundsExceeded {
        max_rounds: MAX_ROUNDS,
    })
}

/// The answers to a round's questions, by the server's keys: one at a
/// time, since each may be a question for the person.
async fn answer_all(
    handler: &Handler,
    peer: &Peer<RoleClient>,
    questions: InputRequests,
) -> Result<InputResponses, ServiceError> {
    let mut answers = InputResponses::new();
    for (key, question) in questions {
        let answer = answer(handler, peer, &key, question).await?;
        answers.insert(key, answer);
    }
    Ok(answers)
}

/// One question, answered as the server's request of that kind would
/// be.
async fn answer(
    handler: &Handler,
    peer: &Peer<RoleClient>,
    key: &str,
    question: InputRequest,
) -> Result<serde_json::Value, ServiceError> {
    let request = match question {
        InputRequest::CreateMessage(request) => ServerRequest::CreateMessageRequest(request),
        InputRequest::Elicitation(request) => ServerRequest::ElicitRequest(request),
        InputRequest::ListRoots(request) => ServerRequest::ListRootsRequest(request),
        // A kind of question a later rmcp may read: dsh has no answer.
        _ => {
            return Err(ServiceError::McpError(ErrorData::invalid_params(
                format!("dsh cannot answer the question `{key}`: a kind it does not know"),
                None,
            )));
        }
    };
    let context = RequestContext::new(NumberOrString::String(key.into()), peer.clone());
    let answered = handler
        .handle_request(request, context)
        .await
        .map_err(ServiceError::McpError)?;
    serde_json::to_value(answered).map_err(|error| {
        ServiceError::McpError(ErrorData::internal_error(
            format!("the answer to `{key}` could not be written: {error}"),
            None,
        ))
    })
}
