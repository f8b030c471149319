//! What a person steers of a session — its mode, its model, its
//! reasoning effort — with the store's keys they are recorded under, so
//! that every front end restores them alike (`dsh run --continue`,
//! `--resume`, an editor's `session/load`).

use std::collections::BTreeMap;

use dsh_agent_loop::Agent;
use dsh_sandbox::SandboxMode;

use crate::host::Host;
use crate::policy::modes::{self, MODES, Mode};

/// The store's key of the mode, the model and the effort.
const MODE_KEY: &str = "mode";
const MODEL_KEY: &str = "model";
const EFFORT_KEY: &str = "effort";

/// A session's steering. It serializes as the ids a person picks
/// (`{"mode": "auto", "model": "gpt-5", "effort": null}`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Steering {
    /// Its mode: its sandbox, and which calls ask first.
    #[serde(serialize_with = "mode_id")]
    pub mode: &'static Mode,
    /// Its model.
    pub model: String,
    /// Its reasoning effort, where the deployment offers some.
    pub effort: Option<String>,
}

/// A mode as its id.
fn mode_id<S: serde::Serializer>(mode: &&'static Mode, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(mode.id)
}

/// What a person can steer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Knob {
    /// The mode (`/mode`, an editor's mode picker).
    Mode,
    /// The model (`/model`, an editor's model picker).
    Model,
    /// The reasoning effort (an editor's picker).
    Effort,
}

impl Knob {
    /// Its id: the store's key, and an editor's config option.
    pub fn id(self) -> &'static str {
        match self {
            Self::Mode => MODE_KEY,
            Self::Model => MODEL_KEY,
            Self::Effort => EFFORT_KEY,
        }
    }

    /// The knob with id `id`; `Err` names the ones there are.
    pub fn of(id: &str) -> Result<Self, String> {
        [Self::Mode, Self::Model, Self::Effort]
            .into_iter()
            .find(|knob| knob.id() == id)
            .ok_or_else(|| {
                format!(
                    "`{id}` is no config option of dsh; the options are `{MODE_KEY}`, \
                     `{MODEL_KEY}` and, where the deployment offers efforts, `{EFFORT_KEY}`"
                )
            })
    }
}

/// One value a knob can take, as a picker shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it does, where there is more to say than its name.
    pub description: Option<String>,
}

impl Steering {
    /// A new session's steering: the host's start mode, the agent's own
    /// model, the first effort offered.
    pub fn start(host: &Host) -> Self {
        Self {
            mode: host.start_mode(),
            model: host.loop_agent().model().to_owned(),
            effort: host.efforts().into_iter().next(),
        }
    }

    /// A recorded session's steering as it was: each of its `settings`
    /// this deployment still has; the rest as a new session's.
    pub fn restore(host: &Host, settings: &BTreeMap<String, String>) -> Self {
        let mut steering = Self::start(host);
        for knob in [Knob::Mode, Knob::Model, Knob::Effort] {
            if let Some(value) = settings.get(knob.id()) {
                // A choice this deployment no longer offers is dropped.
                let _ = steering.set(host, knob, value);
            }
        }
        steering
    }

    /// Sets `knob` to `value`; `Err` says why not (no such mode, a model
    /// or an effort the deployment does not offer).
    pub fn set(&mut self, host: &Host, knob: Knob, value: &str) -> Result<(), String> {
        match knob {
            Knob::Mode => {
                let mode = modes::mode(value)?;
                let ceiling = host.ceiling();
                if mode.sandbox > ceiling {
                    let within: Vec<String> = (Self::choices_of_modes(ceiling).into_iter())
                        .map(|choice| choice.id)
                        .collect();
                    return Err(format!(
                        "mode `{value}` runs in a `{}` sandbox, beyond this deployment's \
                         ceiling `{ceiling}` (set by `--sandbox`, the agent's `sandbox` or \
                         `[sandbox] mode`); the modes within it are {}",
                        mode.sandbox,
                        within.join(", ")
                    ));
                }
                self.mode = mode;
            }
            Knob::Model => {
                host.agent_for(self.mode, value, None)?;
                self.model = value.to_owned();
            }
            Knob::Effort => {
                host.agent_for(self.mode, &self.model, Some(value))?;
                self.effort = Some(value.to_owned());
            }
        }
        Ok(())
    }

    /// The value of `knob` now; `None` for an effort the deployment does
    /// not offer.
    pub fn value(&self, knob: Knob) -> Option<&str> {
        match knob {
            Knob::Mode => Some(self.mode.id),
            Knob::Model => Some(&self.model),
            Knob::Effort => self.effort.as_deref(),
        }
    }

    /// What `knob` can be set to: the modes, the deployment's models,
    /// its efforts.
    pub fn choices(host: &Host, knob: Knob) -> Vec<Choice> {
        let plain = |id: String| Choice {
            name: id.clone(),
            id,
            description: None,
        };
        match knob {
            Knob::Mode => Self::choices_of_modes(host.ceiling()),
            Knob::Model => host.models().into_iter().map(plain).collect(),
            Knob::Effort => host.efforts().into_iter().map(plain).collect(),
        }
    }

    /// The modes whose sandbox is within `ceiling` ([`Host::ceiling`]),
    /// as choices.
    pub fn choices_of_modes(ceiling: SandboxMode) -> Vec<Choice> {
        (MODES.iter())
            .filter(|mode| mode.sandbox <= ceiling)
            .map(|mode| Choice {
                id: mode.id.to_owned(),
                name: mode.name.to_owned(),
                description: Some(mode.description.to_owned()),
            })
            .collect()
    }

    /// The knobs a session of `host` has: the mode, the model, and the
    /// effort where the deployment offers some.
    pub fn knobs(&self) -> Vec<Knob> {
        let mut knobs = vec![Knob::Mode, Knob::Model];
        if self.effort.is_some() {
            knobs.push(Knob::Effort);
        }
        knobs
    }

    /// What `knob` offers, in one line, the value now marked: `mode:
    /// read-only, ask, auto (now), full-access`.
    pub fn offered(&self, host: &Host, knob: Knob) -> String {
        let now = self.value(knob);
        let values: Vec<String> = (Self::choices(host, knob).into_iter())
            .map(|choice| match Some(choice.id.as_str()) == now {
                true => format!("{} (now)", choice.id),
                false => choice.id,
            })
            .collect();
        format!("{}s: {}", knob.id(), values.join(", "))
    }

    /// The agent a session steered so runs ([`Host::agent_for`]).
    pub fn agent(&self, host: &Host) -> Result<Agent, String> {
        host.agent_for(self.mode, &self.model, self.effort.as_deref())
    }
}
