//! Publishing a change: apply it to a copy of the state, let the change
//! listeners veto it, roll back the ones that accepted a vetoed change,
//! and keep listeners from registering into the registry notifying them.

use std::cell::RefCell;
use std::sync::Arc;

use super::contribution::Contribution;
use super::state::{SectionEntry, State};
use super::{ChangeListener, Id, SystemPrompt};
use crate::{BoxError, Owner, RegistryError, ScopeId};

/// Whether a contribution arrived or left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeAction {
    /// It was registered.
    Registered,
    /// It was unregistered.
    Unregistered,
}

/// A change of the registry, as change listeners see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeEvent {
    /// Registered or unregistered.
    pub action: ChangeAction,
    /// What changed.
    pub contribution: Contribution,
    /// The layer it is in; `None` is the global one.
    pub layer: Option<ScopeId>,
}

thread_local! {
    /// The registries whose change listeners this thread is running.
    static NOTIFYING: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

impl SystemPrompt {
    /// Applies `change` to a copy of the state, lets the change listeners
    /// veto it, then publishes it: a refused change is never visible.
    pub(super) fn register(
        &self,
        contribution: Contribution,
        change: impl FnOnce(&mut State) -> Result<(), RegistryError>,
    ) -> Result<(), RegistryError> {
        if self.is_notifying() {
            return Err(RegistryError::Reentrant {
                contribution: contribution.to_string(),
            });
        }
        let result = {
            let _writer = self.inner.write.lock();
            let current = self.inner.state.load_full();
            let mut next = State::clone(&current);
            change(&mut next)?;
            next.derive();
            let event = ChangeEvent {
                action: ChangeAction::Registered,
                contribution,
                layer: self.layer.clone(),
            };
            let result = self.notify(&current.change_listeners, &event);
            if result.is_ok() {
                self.inner.state.store(Arc::new(next));
            }
            result.map_err(|source| RegistryError::ChangeListener {
                contribution: event.contribution.to_string(),
                source,
            })
        };
        self.apply_deferred();
        result
    }

    /// Registers `items` as one change of the state: each is `prepare`d
    /// against the state as the items before it left it, then offered to
    /// the change listeners, and kept only when they all accept it (as
    /// [`register`](Self::register) would one by one). The state is
    /// copied and derived once for all. Returns the ids kept and the
    /// errors of the others, by index.
    pub(super) fn register_each<T>(
        &self,
        items: Vec<(Id, Owner, T)>,
        contribution: impl Fn(&(Id, Owner, T)) -> Contribution,
        mut prepare: impl FnMut(&State, (Id, Owner, T)) -> Result<SectionEntry, RegistryError>,
    ) -> (Vec<Id>, Vec<(usize, RegistryError)>) {
        let (mut kept, mut refused) = (Vec::new(), Vec::new());
        if self.is_notifying() {
            for (at, item) in items.iter().enumerate() {
                let contribution = contribution(item).to_string();
                refused.push((at, RegistryError::Reentrant { contribution }));
            }
            return (kept, refused);
        }
        {
            let _writer = self.inner.write.lock();
            let current = self.inner.state.load_full();
            let mut next = State::clone(&current);
            for (at, item) in items.into_iter().enumerate() {
                let (id, event) = (
                    item.0,
                    ChangeEvent {
                        action: ChangeAction::Registered,
                        contribution: contribution(&item),
                        layer: self.layer.clone(),
                    },
                );
                let entry = match prepare(&next, item) {
                    Ok(entry) => entry,
                    Err(error) => {
                        refused.push((at, error));
                        continue;
                    }
                };
                match self.notify(&current.change_listeners, &event) {
                    Ok(()) => {
                        next.add_part(entry);
                        kept.push(id);
                    }
                    Err(source) => refused.push((
                        at,
                        RegistryError::ChangeListener {
                            contribution: event.contribution.to_string(),
                            source,
                        },
                    )),
                }
            }
            if !kept.is_empty() {
                next.derive();
                self.inner.state.store(Arc::new(next));
            }
        }
        self.apply_deferred();
        (kept, refused)
    }

    /// Unregisters `ids` as one change of the state; a change event for
    /// each contribution that was there.
    pub(super) fn unregister(&self, ids: &[Id]) {
        if self.is_notifying() {
            let thread = std::thread::current().id();
            let mut deferred = self.inner.deferred.lock();
            deferred.extend(ids.iter().map(|id| (thread, *id)));
            return;
        }
        {
            let _writer = self.inner.write.lock();
            let mut next = State::clone(&self.inner.state.load_full());
            let removed = next.remove_all(ids);
            if removed.is_empty() {
                return;
            }
            next.derive();
            let listeners = next.change_listeners.clone();
            self.inner.state.store(Arc::new(next));
            for (contribution, layer) in removed {
                let event = ChangeEvent {
                    action: ChangeAction::Unregistered,
                    contribution,
                    layer,
                };
                // An unregistration cannot be refused: a listener's error
                // has nowhere to go, and the contribution is already gone.
                let _ = self.notify(&listeners, &event);
            }
        }
        self.apply_deferred();
    }

    fn apply_deferred(&self) {
        let thread = std::thread::current().id();
        let deferred: Vec<Id> = {
            let mut deferred = self.inner.deferred.lock();
            let mine = deferred
                .iter()
                .filter(|(by, _)| *by == thread)
                .map(|(_, id)| *id)
                .collect();
            deferred.retain(|(by, _)| *by != thread);
            mine
        };
        if !deferred.is_empty() {
            self.unregister(&deferred);
        }
    }

    fn is_notifying(&self) -> bool {
        let key = self.key();
        NOTIFYING.with(|notifying| notifying.borrow().contains(&key))
    }

    fn notify(
        &self,
        listeners: &[(Id, ChangeListener)],
        event: &ChangeEvent,
    ) -> Result<(), BoxError> {
        if listeners.is_empty() {
            return Ok(());
        }
        struct Notifying(usize);
        impl Drop for Notifying {
            fn drop(&mut self) {
                NOTIFYING.with(|notifying| {
                    let mut notifying = notifying.borrow_mut();
                    if let Some(at) = notifying.iter().rposition(|key| *key == self.0) {
                        notifying.remove(at);
                    }
                });
            }
        }
        let key = self.key();
        NOTIFYING.with(|notifying| notifying.borrow_mut().push(key));
        let _notifying = Notifying(key);
        for (at, (_, listener)) in listeners.iter().enumerate() {
            if let Err(error) = listener(event) {
                // The listeners before this one accepted a change that will
                // now never happen: tell them it is undone, so a listener
                // that mirrors the registry never keeps a phantom entry.
                if event.action == ChangeAction::Registered {
                    let undo = ChangeEvent {
                        action: ChangeAction::Unregistered,
                        ..event.clone()
                    };
                    for (_, earlier) in &listeners[..at] {
                        let _ = earlier(&undo);
                    }
                }
                return Err(error);
            }
        }
        Ok(())
    }
}
