//! One round of a `tools/call`, its progress token watched, and the
//! server told when its answer is no longer awaited.

use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, ServiceError};

/// One round of `tools/call`, as rmcp's `Peer::call_tool_once` sends it,
/// but with the request's progress token handed to `watch` (whose guard
/// is kept while the round runs): rmcp chooses the token and tells it
/// only on this path. Dropping the future before the answer tells the
/// server (`notifications/cancelled`), as `Peer::call_tool_once` does.
pub(crate) async fn call_tool_once<W>(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    watch: impl FnOnce(&rmcp::model::ProgressToken) -> W,
) -> Result<crate::questions::mrtr::Round<CallToolResult>, ServiceError> {
    use crate::questions::mrtr::Round;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await?;
    let _watching = watch(&handle.progress_token);
    let mut abandoned = Abandoned {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
    };
    let answer = handle.await_response().await;
    abandoned.id = None;
    match answer? {
        ServerResult::CallToolResult(result) => Ok(Round::Complete(result)),
        ServerResult::InputRequiredResult(asked) => Ok(Round::InputRequired(asked)),
        other => contentless(other)
            .map(Round::Complete)
            .ok_or(ServiceError::UnexpectedResponse),
    }
}

/// A `tools/call` answer without `content`, which rmcp's untagged
/// [`ServerResult`] reads as another kind: an empty result, a `_meta`
/// alone, a task's acknowledgement (`resultType: "complete"`) — an empty
/// success, as rmcp's own `call_tool_once` takes them (its private
/// `contentless_call_tool_result`, rmcp 3.11).
fn contentless(result: ServerResult) -> Option<CallToolResult> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct MetaOnly {
        #[serde(rename = "_meta")]
        meta: rmcp::model::MetaObject,
    }
    let (result_type, meta) = match result {
        ServerResult::EmptyResult(_) => (None, None),
        ServerResult::TaskAckResult(ack) => (Some(ack.result_type), ack.meta),
        ServerResult::CustomResult(custom) => {
            let MetaOnly { meta } = serde_json::from_value(custom.0).ok()?;
            (None, Some(meta))
        }
        _ => return None,
    };
    let mut empty = CallToolResult::success(Vec::new());
    empty.result_type = result_type;
    empty.meta = meta;
    Some(empty)
}

/// A request whose answer is no longer awaited: dropped with an id, it
/// tells the server the request was cancelled.
struct Abandoned {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        let reason = "request abandoned by the caller".to_owned();
        runtime.spawn(async move {
            let params = CancelledNotificationParam::new(Some(id), Some(reason));
            let _ = peer.notify_cancelled(params).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(json: serde_json::Value) -> Option<CallToolResult> {
        let read: ServerResult = serde_json::from_value(json).expect("a result");
        match read {
            ServerResult::CallToolResult(result) => Some(result),
            other => contentless(other),
        }
    }

    #[test]
    fn a_call_answered_without_content_is_an_empty_success_as_rmcp_takes_it() {
        let empty = answer(serde_json::json!({})).expect("empty");
        assert!(empty.content.is_empty() && empty.is_error != Some(true));
        let meta = answer(serde_json::json!({"_meta": {"trace": "t1"}})).expect("meta alone");
        assert_eq!(
            meta.meta.map(|meta| meta.0.get("trace").cloned()),
            Some(Some("t1".into()))
        );
        let ack = answer(serde_json::json!({"resultType": "complete"})).expect("task ack");
        assert!(ack.result_type.is_some() && ack.content.is_empty());
        // Anything else is not a tool's answer.
        assert!(answer(serde_json::json!({"tools": []})).is_none());
        assert!(answer(serde_json::json!({"other": 1})).is_none());
    }
}
