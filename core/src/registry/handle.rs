//! `Registration`: the RAII handle of one contribution, or of the
//! sections registered together ([`SystemPrompt::sections`]).

use std::fmt;
use std::sync::Weak;

use super::{Id, Inner, SystemPrompt};

/// Keeps one contribution registered (or the sections registered
/// together); dropping it unregisters exactly those, in one change of the
/// registry (and emits a change event for each).
#[must_use = "dropping a Registration unregisters its contribution at once"]
pub struct Registration {
    pub(super) registry: Weak<Inner>,
    pub(super) ids: Box<[Id]>,
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
            .field("ids", &self.ids.iter().map(|id| id.0).collect::<Vec<_>>())
            .finish()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(inner) = self.registry.upgrade() {
            SystemPrompt { inner, layer: None }.unregister(&self.ids);
        }
    }
}
