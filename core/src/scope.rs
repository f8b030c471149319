//! Scopes: the layers registrations are made into, and the chain of them an
//! assembly sees.

use std::fmt;
use std::sync::Arc;

use crate::Text;

/// One layer of registrations other than the global one: an agent
/// (`agent:reviewer`), a preset several agents share (`preset:review`),
/// or one session (`session:<id>`: what the session brings, such as its
/// working directory's instruction files, dropped with it).
///
/// A registration made into a scope (through
/// [`SystemPrompt::in_scope`](crate::SystemPrompt::in_scope)) is seen only
/// by assemblies whose [`Scope`] chain holds that layer, and there it
/// **shadows** the contribution of the same name from outer layers.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScopeId(Text);

impl ScopeId {
    /// A layer with any name.
    pub fn new(name: impl Into<Text>) -> Self {
        Self(name.into())
    }

    /// The layer of one agent: `agent:<id>`.
    pub fn agent(id: &str) -> Self {
        Self(Text::from(format!("agent:{id}")))
    }

    /// The layer of a preset: `preset:<id>`.
    pub fn preset(id: &str) -> Self {
        Self(Text::from(format!("preset:{id}")))
    }

    /// The layer of one session: `session:<id>`. It is the nearest layer
    /// of the session's assemblies, so another session never sees what is
    /// registered into it.
    pub fn session(id: &str) -> Self {
        Self(Text::from(format!("session:{id}")))
    }

    /// The layer's name (`agent:reviewer`).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ScopeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ScopeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl serde::Serialize for ScopeId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// The layers one assembly sees, outermost first: the global layer always
/// (implied), then each layer of the chain — a preset, then the agent —
/// where the nearest (last) wins.
///
/// The default chain is empty: an assembly without a scope sees the
/// global layer only. Cheap to clone (the chain is shared).
///
/// ```
/// use dsh_system_prompt::{Scope, ScopeId};
///
/// let scope = Scope::new([ScopeId::preset("review"), ScopeId::agent("reviewer")]);
/// assert_eq!(scope.to_string(), "global → preset:review → agent:reviewer");
/// assert!(Scope::global().layers().is_empty());
/// ```
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Scope {
    layers: Option<Arc<[ScopeId]>>,
}

impl Scope {
    /// The global layer alone.
    pub fn global() -> Self {
        Self::default()
    }

    /// The global layer, then `layers`, outermost first.
    ///
    /// A layer listed more than once counts once, at its nearest (last)
    /// place: a layer has one depth in a chain.
    ///
    /// ```
    /// use dsh_system_prompt::{Scope, ScopeId};
    ///
    /// let (review, reviewer) = (ScopeId::preset("review"), ScopeId::agent("reviewer"));
    /// let scope = Scope::new([reviewer.clone(), review.clone(), reviewer.clone()]);
    /// assert_eq!(scope.layers(), [review, reviewer]);
    /// ```
    pub fn new(layers: impl IntoIterator<Item = ScopeId>) -> Self {
        let listed: Vec<ScopeId> = layers.into_iter().collect();
        let layers: Arc<[ScopeId]> = listed
            .iter()
            .enumerate()
            .filter(|&(at, layer)| !listed[at + 1..].contains(layer))
            .map(|(_, layer)| layer.clone())
            .collect();
        Self {
            layers: (!layers.is_empty()).then_some(layers),
        }
    }

    /// The layers after the global one, outermost first.
    pub fn layers(&self) -> &[ScopeId] {
        self.layers.as_deref().unwrap_or_default()
    }

    /// How near `layer` is: `Some(0)` for the global layer (`None`),
    /// `Some(i + 1)` for the `i`-th layer of the chain, and `None` when
    /// the chain does not hold it.
    pub(crate) fn depth(&self, layer: Option<&ScopeId>) -> Option<usize> {
        match layer {
            None => Some(0),
            Some(layer) => self
                .layers()
                .iter()
                .position(|own| own == layer)
                .map(|at| at + 1),
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("global")?;
        for layer in self.layers() {
            write!(f, " → {layer}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.layers()).finish()
    }
}

/// " in scope `agent:reviewer`", or nothing for the global layer: how
/// errors say which layer they are about.
pub(crate) fn in_layer(layer: &Option<ScopeId>) -> String {
    layer
        .as_ref()
        .map(|layer| format!(" in scope `{layer}`"))
        .unwrap_or_default()
}
