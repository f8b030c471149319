//! A session's steering in ACP's words: its mode, model and effort as
//! config options (categories `mode`, `model` and `thought_level`, from
//! which Zed builds its pickers) and its mode as the older `modes` /
//! `session/set_mode` pair. What can be chosen, what a choice does and
//! how it is kept are the host's ([`Steering`]).

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption, SessionMode,
    SessionModeState,
};
use dsh_deployment::host::Host;
use dsh_deployment::session::{HostedSession, Knob, Steering};

/// The modes and config options of `session`, as `session/new`,
/// `session/load` and `session/resume` answer them.
pub(super) fn of(session: &HostedSession) -> (SessionModeState, Vec<SessionConfigOption>) {
    let steering = session.steering();
    (
        modes(session.host(), &steering),
        config_options(session.host(), &steering),
    )
}

/// The session's modes: those within the deployment's ceiling.
fn modes(host: &Host, steering: &Steering) -> SessionModeState {
    let available = (Steering::choices(host, Knob::Mode).into_iter())
        .map(|choice| {
            let mode = SessionMode::new(choice.id, choice.name);
            mode.description(choice.description.unwrap_or_default())
        })
        .collect();
    SessionModeState::new(steering.mode.id, available)
}

/// The session's config options: its mode, its model, and its effort
/// where the deployment offers some.
pub(super) fn config_options(host: &Host, steering: &Steering) -> Vec<SessionConfigOption> {
    (steering.knobs().into_iter())
        .map(|knob| {
            let values: Vec<SessionConfigSelectOption> = (Steering::choices(host, knob)
                .into_iter())
            .map(|choice| {
                let value = SessionConfigSelectOption::new(choice.id, choice.name);
                match choice.description {
                    Some(description) => value.description(description),
                    None => value,
                }
            })
            .collect();
            let now = steering.value(knob).unwrap_or_default().to_owned();
            let (name, category) = match knob {
                Knob::Mode => ("Mode", SessionConfigOptionCategory::Mode),
                Knob::Model => ("Model", SessionConfigOptionCategory::Model),
                Knob::Effort => ("Reasoning", SessionConfigOptionCategory::ThoughtLevel),
            };
            let option = SessionConfigOption::select(knob.id(), name, now, values);
            match knob {
                Knob::Mode => option.description(
                    "How much the agent may do: its sandbox, and which calls ask first".to_owned(),
                ),
                _ => option,
            }
            .category(category)
        })
        .collect()
}
