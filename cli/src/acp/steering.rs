//! What a person steers of a session from the editor: its mode and its
//! model, as config options (categories `mode` and `model`, from which
//! Zed builds its pickers) and as the older `modes` / `session/set_mode`
//! pair; and the answers they gave "always" to.
//!
//! The modes and models are the host's ([`Host::start_mode`],
//! [`Host::models`], [`Host::agent_for`]); this module says them in ACP's
//! words and keeps each session's choice.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption, SessionMode,
    SessionModeState,
};
use agent_client_protocol::{Error, ErrorCode};
use dsh_deployment::host::Host;
use dsh_deployment::policy::modes::{self, MODES, Mode};
use dsh_session_store::SessionWriter;
use parking_lot::Mutex;

/// The id of the mode config option.
pub(super) const MODE_OPTION: &str = "mode";

/// The id of the model config option.
pub(super) const MODEL_OPTION: &str = "model";

/// The id of the reasoning effort config option.
pub(super) const EFFORT_OPTION: &str = "effort";

/// One session's steering: its mode, its model, its remembered answers.
#[derive(Debug, Clone)]
pub(super) struct Steering {
    pub(super) mode: &'static Mode,
    pub(super) model: String,
    /// The reasoning effort, where the deployment offers some.
    pub(super) effort: Option<String>,
    /// What the person answered "always" to, shared with the session's
    /// approval.
    pub(super) remembered: Arc<Mutex<Remembered>>,
}

/// The store's key of the mode, the model, and an "always" answer's
/// scope.
const MODE_KEY: &str = "mode";
const MODEL_KEY: &str = "model";
const EFFORT_KEY: &str = "effort";
const ALWAYS_PREFIX: &str = "always:";

impl Steering {
    /// A session's steering as it starts: the host's start mode and the
    /// agent's own model; what it chooses is recorded by `writer`, when
    /// the session is recorded.
    pub(super) fn start(host: &Host, writer: Option<Arc<SessionWriter>>) -> Self {
        Self {
            mode: host.start_mode(),
            model: host.loop_agent().model().to_owned(),
            effort: host.efforts().into_iter().next(),
            remembered: Arc::new(Mutex::new(Remembered {
                writer,
                ..Remembered::default()
            })),
        }
    }

    /// A recorded session's steering as it was: its `settings` from the
    /// store, each that this deployment still has; the rest as a new
    /// session's.
    pub(super) fn restore(
        host: &Host,
        writer: Arc<SessionWriter>,
        settings: &BTreeMap<String, String>,
    ) -> Self {
        let mut steering = Self::start(host, Some(writer));
        if let Some(mode) = settings.get(MODE_KEY).and_then(|id| modes::mode(id).ok()) {
            steering.mode = mode;
        }
        if let Some(model) = settings.get(MODEL_KEY)
            && host.agent_for(steering.mode, model, None).is_ok()
        {
            steering.model = model.clone();
        }
        if let Some(effort) = settings.get(EFFORT_KEY)
            && host
                .agent_for(steering.mode, &steering.model, Some(effort))
                .is_ok()
        {
            steering.effort = Some(effort.clone());
        }
        let mut remembered = steering.remembered.lock();
        for (key, value) in settings {
            let Some(scope) = key.strip_prefix(ALWAYS_PREFIX) else {
                continue;
            };
            let said = if value == "allow" {
                Said::Allowed
            } else {
                Said::Rejected
            };
            remembered.note(scope.to_owned(), said);
        }
        drop(remembered);
        steering
    }

    /// The session's modes, as `session/new` answers them.
    pub(super) fn modes(&self) -> SessionModeState {
        let available = MODES
            .iter()
            .map(|mode| SessionMode::new(mode.id, mode.name).description(mode.description))
            .collect();
        SessionModeState::new(self.mode.id, available)
    }

    /// The session's config options: its mode, then its model.
    pub(super) fn config_options(&self, host: &Host) -> Vec<SessionConfigOption> {
        let modes: Vec<SessionConfigSelectOption> = MODES
            .iter()
            .map(|mode| {
                SessionConfigSelectOption::new(mode.id, mode.name).description(mode.description)
            })
            .collect();
        let models: Vec<SessionConfigSelectOption> = host
            .models()
            .into_iter()
            .map(|model| SessionConfigSelectOption::new(model.clone(), model))
            .collect();
        let mut options = vec![
            SessionConfigOption::select(MODE_OPTION, "Mode", self.mode.id, modes)
                .description(
                    "How much the agent may do: its sandbox, and which calls ask first".to_owned(),
                )
                .category(SessionConfigOptionCategory::Mode),
            SessionConfigOption::select(MODEL_OPTION, "Model", self.model.clone(), models)
                .category(SessionConfigOptionCategory::Model),
        ];
        if let Some(effort) = &self.effort {
            let efforts: Vec<SessionConfigSelectOption> = (host.efforts().into_iter())
                .map(|effort| SessionConfigSelectOption::new(effort.clone(), effort))
                .collect();
            options.push(
                SessionConfigOption::select(EFFORT_OPTION, "Reasoning", effort.clone(), efforts)
                    .category(SessionConfigOptionCategory::ThoughtLevel),
            );
        }
        options
    }

    /// Sets option `option` to `value`; `Err` is the request's error.
    pub(super) fn set(&mut self, host: &Host, option: &str, value: &str) -> Result<(), Error> {
        let invalid = |message: String| Error::new(ErrorCode::INVALID_PARAMS, message);
        match option {
            MODE_OPTION => {
                self.mode = modes::mode(value).map_err(invalid)?;
                self.remembered.lock().record(MODE_KEY, value);
            }
            MODEL_OPTION => {
                host.agent_for(self.mode, value, None).map_err(invalid)?;
                self.model = value.to_owned();
                self.remembered.lock().record(MODEL_KEY, value);
            }
            EFFORT_OPTION => {
                host.agent_for(self.mode, &self.model, Some(value))
                    .map_err(invalid)?;
                self.effort = Some(value.to_owned());
                self.remembered.lock().record(EFFORT_KEY, value);
            }
            other => {
                return Err(invalid(format!(
                    "`{other}` is no config option of dsh; the options are `{MODE_OPTION}`, \
                     `{MODEL_OPTION}` and, where the deployment offers efforts, `{EFFORT_OPTION}`"
                )));
            }
        }
        Ok(())
    }
}

/// What option `option` of `options` offers, in one line: `mode: auto
/// (now), ask, …`.
pub(super) fn choices(options: &[SessionConfigOption], option: &str) -> String {
    let Some(found) = options.iter().find(|found| &*found.id.0 == option) else {
        return format!("no option `{option}`");
    };
    let agent_client_protocol::v1::schema::SessionConfigKind::Select(select) = &found.kind else {
        return format!("`{option}` is not a choice");
    };
    let values: Vec<String> = match &select.options {
        agent_client_protocol::v1::schema::SessionConfigSelectOptions::Ungrouped(values) => values
            .iter()
            .map(|value| {
                let id = value.value.0.to_string();
                if value.value == select.current_value {
                    format!("{id} (now)")
                } else {
                    id
                }
            })
            .collect(),
        _ => Vec::new(),
    };
    format!("{option}: {}", values.join(", "))
}

/// The answers a person gave "always" to, for the rest of a session: a
/// `bash` call by its command's leading words, any other by its tool.
/// With the session recorded, they (and the mode and model) are recorded
/// too, and hold again when it is loaded.
#[derive(Debug, Default)]
pub(super) struct Remembered {
    allowed: HashSet<String>,
    rejected: HashSet<String>,
    writer: Option<Arc<SessionWriter>>,
}

/// What a remembered answer says of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Said {
    Allowed,
    Rejected,
}

impl Remembered {
    /// What was said "always" of a call with this scope, if anything.
    pub(super) fn said(&self, scope: &str) -> Option<Said> {
        if self.rejected.contains(scope) {
            Some(Said::Rejected)
        } else if self.allowed.contains(scope) {
            Some(Said::Allowed)
        } else {
            None
        }
    }

    /// Remembers `said` for calls with this scope, and records it.
    pub(super) fn remember(&mut self, scope: String, said: Said) {
        let value = match said {
            Said::Allowed => "allow",
            Said::Rejected => "reject",
        };
        self.record(&format!("{ALWAYS_PREFIX}{scope}"), value);
        self.note(scope, said);
    }

    /// Remembers `said` for calls with this scope, unrecorded.
    fn note(&mut self, scope: String, said: Said) {
        match said {
            Said::Allowed => self.allowed.insert(scope),
            Said::Rejected => self.rejected.insert(scope),
        };
    }

    /// Records setting `key` of the session, when it is recorded; a
    /// failure is said on stderr (stdout is the protocol's), the choice
    /// holding for this process.
    fn record(&self, key: &str, value: &str) {
        if let Some(writer) = &self.writer
            && let Err(error) = writer.set(key, value)
        {
            let problem = dsh_deployment::Problem::new(format!(
                "the session's choice `{key}` = `{value}` was not recorded: {error}"
            ))
            .warning();
            crate::diagnostics::Reporter::for_stderr().report(&[problem]);
        }
    }
}

/// The scope an "always" answer about a call holds for, and its words for
/// the person: a `bash` call's command's leading words (the program, and
/// its subcommand when it has one: `cargo test`), any other call's tool.
pub(super) fn scope(tool: &str, arguments: &str) -> (String, String) {
    if tool == dsh_tool_bash::TOOL_NAME
        && let Some(command) = serde_json::from_str::<serde_json::Value>(arguments)
            .ok()
            .and_then(|arguments| arguments.get("command")?.as_str().map(str::to_owned))
    {
        let words: Vec<&str> = command.split_whitespace().take(2).collect();
        let lead = match words[..] {
            [program, sub]
                if sub
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                    && !sub.starts_with('-') =>
            {
                format!("{program} {sub}")
            }
            [program, ..] => program.to_owned(),
            [] => String::new(),
        };
        return (format!("bash:{lead}"), format!("`{lead}`"));
    }
    (format!("tool:{tool}"), format!("`{tool}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bash_is_remembered_by_its_leading_words_other_tools_by_name() {
        assert_eq!(
            scope("bash", r#"{"command": "cargo test --workspace"}"#),
            ("bash:cargo test".to_owned(), "`cargo test`".to_owned())
        );
        assert_eq!(scope("bash", r#"{"command": "ls -la"}"#).0, "bash:ls");
        assert_eq!(scope("bash", r#"{"command": "rm -rf /"}"#).0, "bash:rm");
        assert_eq!(scope("write", "{}").0, "tool:write");
        let mut remembered = Remembered::default();
        remembered.remember("bash:cargo test".to_owned(), Said::Allowed);
        assert_eq!(remembered.said("bash:cargo test"), Some(Said::Allowed));
        assert_eq!(remembered.said("bash:cargo build"), None);
    }
}
