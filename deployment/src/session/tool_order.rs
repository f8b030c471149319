//! A session's tools keep their places: the order its first request sent
//! them in is the session's own [`ToolOrder`], so a tool a server adds
//! mid-session goes after every tool already sent — never a re-sort that
//! moves the ones after it — and the request's prefix up to it stays what
//! the provider cached. A tool that disappears is said; one that changed
//! keeps its place, and is a new tool for approval
//! ([`super::changed_tools`]), which each step's tools are shown to.

use dsh_agent_loop::{LoopEvent, LoopObserver, StepPrompt};
use dsh_system_prompt::{Registration, ScopeId, SystemPrompt, ToolOrder, UNLISTED_TOOLS};
use parking_lot::Mutex;

use super::SessionEvent;
use super::changed_tools::ChangedTools;
use super::events::Narrator;
use std::sync::Arc;

/// Watches the session's steps and registers, in its layer, the order its
/// tools were first sent in.
pub(crate) struct StickyTools {
    prompt: SystemPrompt,
    narrator: Narrator,
    changed: Arc<ChangedTools>,
    state: Mutex<Sent>,
}

/// The tools sent so far, in their first order, and the registration of
/// that order.
#[derive(Default)]
struct Sent {
    tools: Vec<String>,
    present: Vec<String>,
    order: Option<Registration>,
}

impl StickyTools {
    pub(crate) fn new(
        prompt: SystemPrompt,
        narrator: Narrator,
        changed: Arc<ChangedTools>,
    ) -> Self {
        Self {
            prompt,
            narrator,
            changed,
            state: Mutex::new(Sent::default()),
        }
    }

    /// A step of the session sends `step`'s tools: new ones join the
    /// order at its end; gone ones are said.
    fn stepped(&self, step: &StepPrompt<'_>) {
        let names: Vec<String> = (step.assembly.tools.iter())
            .map(|tool| tool.name.to_string())
            .collect();
        let session = step.session.id.as_str();
        (self.changed).offered(names.iter().map(String::as_str), session);
        let mut sent = self.state.lock();
        let gone: Vec<String> = (sent.present.iter())
            .filter(|name| !names.contains(name))
            .cloned()
            .collect();
        if !gone.is_empty() {
            self.narrator.show(SessionEvent::Notice {
                text: format!(
                    "no longer offered to the model: {}",
                    gone.iter()
                        .map(|name| format!("`{name}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        sent.present.clone_from(&names);
        let new: Vec<String> = (names.into_iter())
            .filter(|name| !sent.tools.contains(name))
            .collect();
        if new.is_empty() {
            return;
        }
        sent.tools.extend(new);
        // A tool named like the marker is refused by the order: then the
        // session keeps the order it had.
        let listed = (sent.tools.iter().cloned()).chain([UNLISTED_TOOLS.to_owned()]);
        let Ok(order) = ToolOrder::new(listed) else {
            return;
        };
        // One order a layer: the old one goes first.
        sent.order = None;
        let layer = (self.prompt).in_scope(ScopeId::session(step.session.id.as_str()));
        sent.order = layer.tool_order(order).ok();
    }
}

impl LoopObserver for StickyTools {
    fn observe(&self, event: LoopEvent<'_>) {
        if let LoopEvent::Step(step) = event
            && self.narrator.is_for(&step.session.id)
        {
            self.stepped(step);
        }
    }
}
