//! The layers of an explanation: the agent's chain of layers, and for
//! each section a layer of it gives, that layer and what the section
//! shadows.

use dsh_system_prompt::inspect::section_origins;
use dsh_system_prompt::{Scope, ScopeId, SystemPrompt};

use super::sections::OwnerName;

/// The agent's chain of layers and the sections they give it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layers {
    /// The chain, outermost first (`global → preset:review →
    /// agent:reviewer`); the nearest wins.
    pub chain: String,
    /// Each section a layer other than the global one gives, in the
    /// prompt's order; empty when every section is the global layer's.
    pub sections: Vec<LayerRow>,
}

/// A section a layer gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerRow {
    /// The section's name.
    pub section: String,
    /// The layer's name (`agent:reviewer`).
    pub layer: String,
    /// Who owns the section in that layer.
    pub owner: OwnerName,
    /// The sections of the same name it shadows, nearest first: each
    /// one's layer (`global` for the global one) and owner.
    pub shadows: Vec<(String, OwnerName)>,
}

/// The layers of `scope` over `prompt`.
pub(super) fn layers(prompt: &SystemPrompt, scope: &Scope) -> Layers {
    let sections = (section_origins(prompt, scope).into_iter())
        .filter_map(|origin| {
            let layer = origin.layer.as_ref()?;
            Some(LayerRow {
                section: origin.name.to_string(),
                layer: layer.to_string(),
                owner: OwnerName::from(&origin.owner),
                shadows: (origin.shadows.iter())
                    .map(|(shadowed, owner)| (layer_name(shadowed.as_ref()), owner.into()))
                    .collect(),
            })
        })
        .collect();
    Layers {
        chain: scope.to_string(),
        sections,
    }
}

/// A layer's name: its id, or `global`.
fn layer_name(layer: Option<&ScopeId>) -> String {
    layer.map_or_else(|| "global".to_owned(), ToString::to_string)
}
