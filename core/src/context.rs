//! `AssembleContext` and typed extensions.

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::Scope;

/// A map from type to value: the Rust form of the declaration merging the
/// original system used to let other packages add fields.
///
/// A crate adds its own field by inserting a value of a type it owns, and
/// reads it back with an extension trait. Values are shared behind `Arc`,
/// so cloning the map is cheap.
#[derive(Clone, Default)]
pub struct Extensions {
    map: FxHashMap<TypeId, Entry>,
}

#[derive(Clone)]
struct Entry {
    value: Arc<dyn Any + Send + Sync>,
    type_name: &'static str,
}

impl Extensions {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts `value`, replacing (and returning whether there was) a value
    /// of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) -> bool {
        self.insert_shared(Arc::new(value))
    }

    /// Inserts a value that is already shared.
    pub fn insert_shared<T: Send + Sync + 'static>(&mut self, value: Arc<T>) -> bool {
        let entry = Entry {
            value,
            type_name: std::any::type_name::<T>(),
        };
        self.map.insert(TypeId::of::<T>(), entry).is_some()
    }

    /// The value of type `T`, if one was inserted.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.map.get(&TypeId::of::<T>())?.value.downcast_ref()
    }

    /// Inserts every value of `other`, replacing values of the same types.
    pub fn extend_from(&mut self, other: &Extensions) {
        self.map
            .extend(other.map.iter().map(|(id, entry)| (*id, entry.clone())));
    }

    /// Removes the value of type `T`; returns whether there was one.
    pub fn remove<T: Send + Sync + 'static>(&mut self) -> bool {
        self.map.remove(&TypeId::of::<T>()).is_some()
    }

    /// How many values the map holds.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&str> = self.map.values().map(|entry| entry.type_name).collect();
        names.sort_unstable();
        f.debug_set().entries(names).finish()
    }
}

/// What one [`assemble`](crate::SystemPrompt::assemble) call is for.
///
/// Core declares one field, the [`Scope`] (which layers of registrations
/// the assembly sees); other crates add fields as typed [`Extensions`] and
/// read them back through an extension trait. `dsh-agent-loop` adds the
/// agent, so providers can project per-agent facts with `cx.agent()`.
/// Providers tolerate absent fields: a bare `AssembleContext::default()` is
/// a valid context.
///
/// ```
/// use dsh_system_prompt::AssembleContext;
///
/// // A crate that owns a `Workspace` fact adds it to the context...
/// struct Workspace(String);
/// pub trait WorkspaceExt {
///     fn workspace(&self) -> Option<&str>;
/// }
/// impl WorkspaceExt for AssembleContext {
///     fn workspace(&self) -> Option<&str> {
///         self.get::<Workspace>().map(|w| w.0.as_str())
///     }
/// }
///
/// // ...and reads it back through its extension trait.
/// let cx = AssembleContext::new().with(Workspace("/src".into()));
/// assert_eq!(cx.workspace(), Some("/src"));
/// assert_eq!(AssembleContext::default().workspace(), None);
/// ```
#[derive(Clone, Debug, Default)]
pub struct AssembleContext {
    scope: Scope,
    extensions: Extensions,
}

impl AssembleContext {
    /// An empty context.
    pub fn new() -> Self {
        Self::default()
    }

    /// Says which layers the assembly sees: the global one, then the
    /// chain's, nearest last. Without it an assembly sees the global layer
    /// only.
    pub fn with_scope(mut self, scope: Scope) -> Self {
        self.scope = scope;
        self
    }

    /// The layers the assembly sees.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// Adds a typed field, replacing a field of the same type.
    pub fn with<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// Adds a typed field that is already shared.
    pub fn with_shared<T: Send + Sync + 'static>(mut self, value: Arc<T>) -> Self {
        self.extensions.insert_shared(value);
        self
    }

    /// The field of type `T`, if present.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.extensions.get()
    }

    /// Adds every field of `extensions`, replacing fields of the same
    /// types.
    pub fn with_all(mut self, extensions: &Extensions) -> Self {
        self.extensions.extend_from(extensions);
        self
    }

    /// The typed fields.
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }
}
