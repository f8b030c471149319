//! `Variables`: the variables of an assembly, values indexed by a
//! `VariableLayout` that every assembly of one registry state shares. The
//! render plan reads these without knowing the assembly that holds them.

use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde::ser::SerializeMap;

use crate::{Owner, Text};

/// Which variables exist, shared by every assembly of one registry state.
#[derive(Clone, Debug, Default)]
pub(crate) struct VariableLayout {
    index: FxHashMap<Text, usize>,
    names: Vec<Text>,
    owners: Vec<Option<Owner>>,
}

impl VariableLayout {
    pub(crate) fn new(variables: impl IntoIterator<Item = (Text, Option<Owner>)>) -> Self {
        let mut layout = Self::default();
        for (name, owner) in variables {
            layout.push(name, owner);
        }
        layout
    }

    /// The names, in layout order.
    pub(crate) fn names(&self) -> impl Iterator<Item = &Text> + '_ {
        self.names.iter()
    }

    /// The index of the variable named `name`.
    pub(crate) fn index_of(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    fn push(&mut self, name: Text, owner: Option<Owner>) -> usize {
        let at = self.names.len();
        self.index.insert(name.clone(), at);
        self.names.push(name);
        self.owners.push(owner);
        at
    }
}

/// The variables of an assembly: every registered variable, resolved for
/// this assembly. A variable is either valued (`Some`) or registered but
/// valueless for this assembly (`None`) — the session has no working
/// directory, say.
#[derive(Clone, Debug, Default)]
pub struct Variables {
    layout: Arc<VariableLayout>,
    /// The values, in layout order.
    values: Vec<Option<Text>>,
}

/// One variable of an assembly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variable<'a> {
    /// The variable's name.
    pub name: &'a str,
    /// Its value for this assembly; `None` when it has none.
    pub value: Option<&'a str>,
    /// Who registered it, when known.
    pub owner: Option<&'a Owner>,
}

impl Variables {
    /// An empty set of variables.
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn with_layout(layout: Arc<VariableLayout>, values: Vec<Option<Text>>) -> Self {
        debug_assert_eq!(layout.names.len(), values.len());
        Self { layout, values }
    }

    /// The layout the values are indexed by.
    pub(crate) fn layout(&self) -> &Arc<VariableLayout> {
        &self.layout
    }

    /// The value of the variable at `at` in the layout.
    pub(crate) fn value_at(&self, at: usize) -> Option<&str> {
        self.values[at].as_deref()
    }

    /// Whether a variable of that name is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.layout.index.contains_key(name)
    }

    /// `None` when no variable of that name is registered; `Some(None)` when
    /// it is registered but has no value for this assembly.
    pub fn get(&self, name: &str) -> Option<Option<&str>> {
        let at = *self.layout.index.get(name)?;
        Some(self.values[at].as_deref())
    }

    /// The variable's value, when it is registered and has one.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.get(name).flatten()
    }

    /// Who registered the variable, when known.
    pub fn owner(&self, name: &str) -> Option<&Owner> {
        let at = *self.layout.index.get(name)?;
        self.layout.owners[at].as_ref()
    }

    /// Sets a variable's value (`None`: valueless), adding the variable if
    /// it is new.
    pub fn set<V: Into<Text>>(&mut self, name: impl Into<Text>, value: Option<V>) {
        let name = name.into();
        let value = value.map(Into::into);
        match self.layout.index.get(name.as_str()) {
            Some(&at) => self.values[at] = value,
            None => {
                Arc::make_mut(&mut self.layout).push(name, None);
                self.values.push(value);
            }
        }
    }

    /// Removes a variable; returns whether it was there.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(&at) = self.layout.index.get(name) else {
            return false;
        };
        let layout = Arc::make_mut(&mut self.layout);
        layout.names.remove(at);
        layout.owners.remove(at);
        self.values.remove(at);
        layout.index = layout
            .names
            .iter()
            .enumerate()
            .map(|(at, name)| (name.clone(), at))
            .collect();
        true
    }

    /// The variables, in registry order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Variable<'_>> + '_ {
        let layout = &*self.layout;
        layout
            .names
            .iter()
            .zip(&layout.owners)
            .zip(&self.values)
            .map(|((name, owner), value)| Variable {
                name,
                value: value.as_deref(),
                owner: owner.as_ref(),
            })
    }

    /// The names of the variables, in registry order.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.layout.names.iter().map(Text::as_str)
    }

    /// How many variables there are.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

impl serde::Serialize for Variables {
    /// A map from name to value (`null` when valueless).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for variable in self.iter() {
            map.serialize_entry(variable.name, &variable.value)?;
        }
        map.end()
    }
}
