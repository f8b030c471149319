//! `Registration`: the RAII handle of one contribution.

use std::fmt;
use std::sync::Weak;

use super::{Id, Inner, SystemPrompt};

/// Keeps one contribution registered; dropping it unregisters exactly that
/// contribution (and emits a change event).
#[must_use = "dropping a Registration unregisters its contribution at once"]
pub struct Registration {
    pub(super) registry: Weak<Inner>,
    pub(super) id: Id,
}

impl Registration {
    /// Keeps the contribution for the registry's whole life.
    pub fn keep(self) {
        std::mem::forget(self);
    }
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("id", &self.id.0)
            .finish()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(inner) = self.registry.upgrade() {
            SystemPrompt { inner, layer: None }.unregister(self.id);
        }
    }
}
