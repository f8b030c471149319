//! A server's elicitation as ACP's `elicitation/create`, scoped to the
//! session whose call the server serves: a form the editor shows whole,
//! or a URL. The session decides whether the editor is asked at all (it
//! must have advertised the kind); this is how it is asked.

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    self, CreateElicitationRequest, ElicitationAction, ElicitationFormMode, ElicitationMode,
    ElicitationSessionScope, ElicitationUrlMode,
};
use dsh_tool_mcp::{ElicitAnswer, ElicitKind, Elicitation, ServerLine};

/// Asks the editor `elicitation` in session `session`.
pub(super) async fn ask_editor(
    cx: &ConnectionTo<Client>,
    session: &schema::SessionId,
    elicitation: &Elicitation,
) -> ElicitAnswer {
    let decline = |why: &str| {
        let server = &elicitation.origin.server;
        crate::commands::show_server_line(ServerLine::declined(server, why, &elicitation.message));
        ElicitAnswer::Decline
    };
    // The question shows with the call the server is serving.
    let scope = ElicitationSessionScope::new(session.clone())
        .tool_call_id(elicitation.origin.call.clone().map(schema::ToolCallId::new));
    let mode = match &elicitation.kind {
        ElicitKind::Form { schema } => match serde_json::from_value(schema.clone()) {
            Ok(schema) => ElicitationMode::Form(ElicitationFormMode::new(scope, schema)),
            Err(error) => return decline(&format!("the editor cannot show its form: {error}")),
        },
        ElicitKind::Url { url, id } => {
            ElicitationMode::Url(ElicitationUrlMode::new(scope, id.clone(), url.clone()))
        }
    };
    let asked = CreateElicitationRequest::new(mode, elicitation.message.clone());
    match cx.send_request(asked).block_task().await {
        Ok(response) => match response.action {
            ElicitationAction::Accept(accepted) => {
                let content = (accepted.content)
                    .and_then(|content| serde_json::to_value(content).ok())
                    .and_then(|value| match value {
                        serde_json::Value::Object(map) => Some(map),
                        _ => None,
                    });
                ElicitAnswer::Accept(content)
            }
            ElicitationAction::Cancel => ElicitAnswer::Cancel,
            _ => ElicitAnswer::Decline,
        },
        Err(_) => ElicitAnswer::Cancel,
    }
}
