//! The registry's state: one immutable value, replaced whole on every
//! change (writers clone it, change the clone, and publish it), with what
//! assemblies share derived from it once — for the global layer at once,
//! for each scope chain at its first assembly.

use std::sync::Arc;

use dsh_prompt_template::{Template, is_section_name, is_variable_name};
use parking_lot::RwLock;
use rustc_hash::{FxHashMap, FxHashSet};

use super::contribution::Contribution;
use super::{AssembleListener, ChangeListener, Id, ToolProvider, VariableProvider};
use crate::assembly::SectionList;
use crate::assembly::variables::VariableLayout;
use crate::section::SectionOrigin;
use crate::section::{SectionText, TextProvider};
use crate::{
    AssembledSection, NameKind, Owner, PartKind, PromptSection, RegistryError, Scope, ScopeId,
    TemplateProblem, Text, ToolOrder,
};

/// One consistent registry state. Replaced whole on every change, so an
/// assembly never sees half of a registration.
///
/// Every entry names its layer (`None` is the global one). A name is
/// unique within a layer; the same name in several layers is shadowing,
/// resolved per scope chain by [`Resolved::of`].
#[derive(Clone, Default)]
pub(super) struct State {
    /// Sorted by `(order, name)`.
    pub(super) sections: Vec<SectionEntry>,
    /// The runtime contexts, sorted by `(order, name)`; each of kind
    /// [`PartKind::Context`](crate::PartKind::Context).
    pub(super) contexts: Vec<SectionEntry>,
    /// Sorted by name.
    pub(super) variables: Vec<Named<VariableProvider>>,
    /// In registration order.
    pub(super) tools: Vec<Named<ToolProvider>>,
    /// In registration order.
    pub(super) assemble_listeners: Vec<Named<AssembleListener>>,
    /// At most one a layer.
    pub(super) tool_orders: Vec<Named<Arc<ToolOrder>>>,
    pub(super) change_listeners: Vec<(Id, ChangeListener)>,
    /// Derived: the layers some registration is in.
    layers: FxHashSet<ScopeId>,
    /// Derived: the name and layer of every part, by kind, so that a
    /// batch of sections is checked for duplicates without a search each.
    part_names: FxHashSet<(PartKind, Text, Option<ScopeId>)>,
    /// Derived: what assemblies of the global layer alone share.
    pub(super) global: Arc<Resolved>,
    /// Derived at a scope chain's first assembly: what its assemblies share.
    scoped: ScopedCache,
}

#[derive(Clone)]
pub(super) struct SectionEntry {
    pub(super) id: Id,
    pub(super) layer: Option<ScopeId>,
    pub(super) section: AssembledSection,
    pub(super) provider: Option<TextProvider>,
}

/// A named contribution that is not text: a variable's provider, a tool
/// provider, a waterfall listener, a tool order.
#[derive(Clone)]
pub(super) struct Named<T> {
    pub(super) id: Id,
    pub(super) layer: Option<ScopeId>,
    pub(super) name: Text,
    pub(super) owner: Owner,
    pub(super) value: T,
}

/// What every assembly of one scope chain starts from: each name's
/// contribution of the nearest layer.
#[derive(Default)]
pub(super) struct Resolved {
    /// The sections as an assembly holds them, shared by every assembly
    /// until one changes them, and (at the first assembly) compiled into
    /// their render plan.
    pub(super) sections: Arc<SectionList>,
    /// Which entries of `sections` need their text provided.
    pub(super) provided: Vec<(usize, TextProvider)>,
    /// Which entries of `sections` are complete.
    pub(super) complete: Vec<usize>,
    pub(super) contexts: Vec<(AssembledSection, Option<TextProvider>)>,
    /// The variable names and owners, shared by every assembly.
    pub(super) layout: Arc<VariableLayout>,
    /// The variables' providers, in `layout` order.
    pub(super) variables: Vec<VariableProvider>,
    pub(super) tools: Vec<ToolProvider>,
    pub(super) listeners: Vec<AssembleListener>,
    /// The nearest layer's tool order, or [`ToolOrder::by_name`].
    pub(super) tool_order: Arc<ToolOrder>,
}

/// A resolution as an assembly holds it: the state's global one
/// borrowed, or a scope chain's shared out of the cache, whose lock is
/// not held while the assembly runs.
pub(super) enum ResolvedRef<'a> {
    Global(&'a Resolved),
    Scoped(Arc<Resolved>),
}

impl std::ops::Deref for ResolvedRef<'_> {
    type Target = Resolved;

    fn deref(&self) -> &Resolved {
        match self {
            Self::Global(resolved) => resolved,
            Self::Scoped(resolved) => resolved,
        }
    }
}

/// The resolutions of the scope chains assembled so far. A new state
/// starts with none: cloning a state (to change it) never carries
/// resolutions of the old one over.
#[derive(Default)]
struct ScopedCache(RwLock<FxHashMap<Scope, Arc<Resolved>>>);

impl Clone for ScopedCache {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl State {
    /// Recomputes the derived fields after a change.
    pub(super) fn derive(&mut self) {
        for parts in [&mut self.sections, &mut self.contexts] {
            parts.sort_by(|a, b| {
                (a.section.order(), a.section.name()).cmp(&(b.section.order(), b.section.name()))
            });
        }
        self.variables.sort_by(|a, b| a.name.cmp(&b.name));
        self.layers = self
            .sections
            .iter()
            .chain(&self.contexts)
            .map(|entry| &entry.layer)
            .chain(self.variables.iter().map(|entry| &entry.layer))
            .chain(self.tools.iter().map(|entry| &entry.layer))
            .chain(self.assemble_listeners.iter().map(|entry| &entry.layer))
            .chain(self.tool_orders.iter().map(|entry| &entry.layer))
            .flatten()
            .cloned()
            .collect();
        self.part_names = (self.sections.iter().chain(&self.contexts))
            .map(|entry| {
                let section = &entry.section;
                (section.kind(), section.name().clone(), entry.layer.clone())
            })
            .collect();
        self.global = Arc::new(Resolved::of(self, &Scope::global()));
        self.scoped = ScopedCache::default();
    }

    /// What assemblies of `scope` share: the global resolution when no
    /// layer of the chain holds a registration, else the chain's own,
    /// resolved at its first assembly.
    pub(super) fn resolved(&self, scope: &Scope) -> ResolvedRef<'_> {
        if !scope
            .layers()
            .iter()
            .any(|layer| self.layers.contains(layer))
        {
            return ResolvedRef::Global(&self.global);
        }
        if let Some(resolved) = self.scoped.0.read().get(scope) {
            return ResolvedRef::Scoped(Arc::clone(resolved));
        }
        let resolved = Arc::new(Resolved::of(self, scope));
        let mut cache = self.scoped.0.write();
        ResolvedRef::Scoped(Arc::clone(cache.entry(scope.clone()).or_insert(resolved)))
    }

    pub(super) fn remove(&mut self, id: Id) -> Option<(Contribution, Option<ScopeId>)> {
        if let Some(at) = self.sections.iter().position(|entry| entry.id == id) {
            let entry = self.sections.remove(at);
            let name = entry.section.name().to_string();
            return Some((Contribution::Section { name }, entry.layer));
        }
        if let Some(at) = self.contexts.iter().position(|entry| entry.id == id) {
            let entry = self.contexts.remove(at);
            let name = entry.section.name().to_string();
            return Some((Contribution::Context { name }, entry.layer));
        }
        if let Some(at) = self.variables.iter().position(|entry| entry.id == id) {
            let entry = self.variables.remove(at);
            let name = entry.name.to_string();
            return Some((Contribution::Variable { name }, entry.layer));
        }
        if let Some((name, layer)) = take(&mut self.tools, id) {
            return Some((Contribution::Tools { name }, layer));
        }
        if let Some((name, layer)) = take(&mut self.assemble_listeners, id) {
            return Some((Contribution::AssembleListener { name }, layer));
        }
        if let Some((_, layer)) = take(&mut self.tool_orders, id) {
            return Some((Contribution::ToolOrder, layer));
        }
        if let Some(at) = self.change_listeners.iter().position(|(own, _)| *own == id) {
            self.change_listeners.remove(at);
            return Some((Contribution::ChangeListener, None));
        }
        None
    }

    /// Removes every entry registered as one of `ids`: the contributions
    /// removed. Sections and contexts are taken in one pass each (a
    /// [`Registration`](super::Registration) of many sections drops them
    /// together); an id not among them is looked for one by one.
    pub(super) fn remove_all(&mut self, ids: &[Id]) -> Vec<(Contribution, Option<ScopeId>)> {
        if let [id] = ids {
            return self.remove(*id).into_iter().collect();
        }
        let wanted: FxHashSet<Id> = ids.iter().copied().collect();
        let mut removed = Vec::new();
        let mut found = FxHashSet::default();
        for kind in [PartKind::Section, PartKind::Context] {
            self.parts_mut(kind).retain(|entry| {
                if !wanted.contains(&entry.id) {
                    return true;
                }
                let name = entry.section.name().to_string();
                let contribution = match kind {
                    PartKind::Section => Contribution::Section { name },
                    PartKind::Context => Contribution::Context { name },
                };
                removed.push((contribution, entry.layer.clone()));
                found.insert(entry.id);
                false
            });
        }
        for id in ids.iter().filter(|id| !found.contains(id)) {
            removed.extend(self.remove(*id));
        }
        removed
    }

    /// Whether a part of `kind` named `name` is registered in `layer`, by
    /// the names the state keeps (no search).
    pub(super) fn has_part(&self, kind: PartKind, name: &Text, layer: &Option<ScopeId>) -> bool {
        self.part_names
            .contains(&(kind, name.clone(), layer.clone()))
    }

    /// Adds a checked part ([`section_entry`]).
    pub(super) fn add_part(&mut self, entry: SectionEntry) {
        let kind = entry.section.kind();
        let key = (kind, entry.section.name().clone(), entry.layer.clone());
        self.part_names.insert(key);
        self.parts_mut(kind).push(entry);
    }

    /// The sections, or the contexts.
    pub(super) fn parts(&self, kind: PartKind) -> &[SectionEntry] {
        match kind {
            PartKind::Section => &self.sections,
            PartKind::Context => &self.contexts,
        }
    }

    pub(super) fn parts_mut(&mut self, kind: PartKind) -> &mut Vec<SectionEntry> {
        match kind {
            PartKind::Section => &mut self.sections,
            PartKind::Context => &mut self.contexts,
        }
    }

    /// A section or context to register into `layer`: a good name, not
    /// taken among its kind in that layer (sections and contexts are two
    /// namespaces; another layer's part of the same name is shadowed).
    pub(super) fn check_part(
        &self,
        kind: PartKind,
        section: &PromptSection,
        layer: &Option<ScopeId>,
    ) -> Result<(), RegistryError> {
        if !is_section_name(&section.name) {
            return Err(RegistryError::InvalidSectionName {
                name: section.name.to_string(),
            });
        }
        let Some(existing) = self
            .parts(kind)
            .iter()
            .find(|entry| *entry.section.name() == section.name && entry.layer == *layer)
        else {
            return Ok(());
        };
        Err(RegistryError::Duplicate {
            kind: kind.into(),
            name: section.name.to_string(),
            layer: layer.clone(),
            existing: Box::new(existing.section.owner().clone()),
        })
    }

    pub(super) fn check_variable(
        &self,
        name: &str,
        layer: &Option<ScopeId>,
    ) -> Result<(), RegistryError> {
        if !is_variable_name(name) {
            return Err(RegistryError::InvalidVariableName {
                name: name.to_owned(),
            });
        }
        match self
            .variables
            .iter()
            .find(|entry| entry.name == name && entry.layer == *layer)
        {
            Some(existing) => Err(RegistryError::Duplicate {
                kind: NameKind::Variable,
                name: name.to_owned(),
                layer: layer.clone(),
                existing: Box::new(existing.owner.clone()),
            }),
            None => Ok(()),
        }
    }
}

/// Checks that `entry`'s name is free in its layer of `entries`, then
/// appends it: how tool providers and waterfall listeners are registered.
pub(super) fn push_named<T>(
    entries: &mut Vec<Named<T>>,
    entry: Named<T>,
    kind: NameKind,
) -> Result<(), RegistryError> {
    if let Some(existing) = entries
        .iter()
        .find(|own| own.name == entry.name && own.layer == entry.layer)
    {
        return Err(RegistryError::Duplicate {
            kind,
            name: entry.name.to_string(),
            layer: entry.layer,
            existing: Box::new(existing.owner.clone()),
        });
    }
    entries.push(entry);
    Ok(())
}

impl Resolved {
    /// Resolves `state` for `scope`: of each name, the entry of the
    /// nearest layer the chain holds; entries of layers it does not hold
    /// are left out, and so are shadowed ones (never called).
    fn of(state: &State, scope: &Scope) -> Self {
        let sections: Vec<&SectionEntry> = nearest(&state.sections, scope, |entry| {
            (entry.section.name(), &entry.layer)
        });
        let variables = nearest(&state.variables, scope, |entry| (&entry.name, &entry.layer));
        let contexts = nearest(&state.contexts, scope, |entry| {
            (entry.section.name(), &entry.layer)
        });
        Self {
            sections: Arc::new(SectionList::new(
                sections.iter().map(|entry| entry.section.clone()).collect(),
            )),
            provided: sections
                .iter()
                .enumerate()
                .filter_map(|(at, entry)| Some((at, entry.provider.clone()?)))
                .collect(),
            complete: sections
                .iter()
                .enumerate()
                .filter(|(_, entry)| entry.section.is_complete())
                .map(|(at, _)| at)
                .collect(),
            contexts: contexts
                .iter()
                .map(|entry| (entry.section.clone(), entry.provider.clone()))
                .collect(),
            layout: Arc::new(VariableLayout::new(
                variables
                    .iter()
                    .map(|entry| (entry.name.clone(), Some(entry.owner.clone()))),
            )),
            variables: variables
                .iter()
                .map(|entry| Arc::clone(&entry.value))
                .collect(),
            tools: nearest(&state.tools, scope, by_name)
                .into_iter()
                .map(|entry| Arc::clone(&entry.value))
                .collect(),
            listeners: nearest(&state.assemble_listeners, scope, by_name)
                .into_iter()
                .map(|entry| Arc::clone(&entry.value))
                .collect(),
            tool_order: nearest(&state.tool_orders, scope, by_name)
                .first()
                .map_or_else(Arc::default, |entry| Arc::clone(&entry.value)),
        }
    }
}

impl State {
    /// Where each section an assembly of `scope` starts from comes from.
    pub(super) fn section_origins(&self, scope: &Scope) -> Vec<SectionOrigin> {
        // The entries of each name, found once: a search for every winner
        // made 10,000 sections a hundred million comparisons.
        let mut by_name: FxHashMap<&Text, Vec<&SectionEntry>> = FxHashMap::default();
        for entry in &self.sections {
            by_name.entry(entry.section.name()).or_default().push(entry);
        }
        nearest(&self.sections, scope, |entry| {
            (entry.section.name(), &entry.layer)
        })
        .into_iter()
        .map(|winner| {
            let depth = scope.depth(winner.layer.as_ref());
            let same_name = by_name
                .get(winner.section.name())
                .map_or(&[][..], Vec::as_slice);
            let mut shadowed: Vec<(usize, &SectionEntry)> = (same_name.iter().copied())
                .filter_map(|entry| Some((scope.depth(entry.layer.as_ref())?, entry)))
                .filter(|(own, _)| Some(*own) < depth)
                .collect();
            shadowed.sort_by_key(|(depth, _)| std::cmp::Reverse(*depth));
            let section = &winner.section;
            SectionOrigin {
                name: section.name().clone(),
                order: section.order(),
                tool: section.tool().cloned(),
                complete: section.is_complete(),
                owner: section.owner().clone(),
                layer: winner.layer.clone(),
                shadows: shadowed
                    .into_iter()
                    .map(|(_, entry)| (entry.layer.clone(), entry.section.owner().clone()))
                    .collect(),
            }
        })
        .collect()
    }
}

/// The key a named entry is resolved by.
fn by_name<T>(entry: &Named<T>) -> (&Text, &Option<ScopeId>) {
    (&entry.name, &entry.layer)
}

/// Of `entries`, those an assembly of `scope` sees, in list order: each
/// name's entry of the nearest layer the chain holds.
fn nearest<'a, T>(
    entries: &'a [T],
    scope: &Scope,
    key: impl Fn(&'a T) -> (&'a Text, &'a Option<ScopeId>),
) -> Vec<&'a T> {
    if scope.layers().is_empty() {
        return entries
            .iter()
            .filter(|entry| key(entry).1.is_none())
            .collect();
    }
    let mut winners: FxHashMap<&str, (usize, usize)> = FxHashMap::default();
    for (at, entry) in entries.iter().enumerate() {
        let (name, layer) = key(entry);
        let Some(depth) = scope.depth(layer.as_ref()) else {
            continue;
        };
        let winner = winners.entry(name.as_str()).or_insert((depth, at));
        if depth > winner.0 {
            *winner = (depth, at);
        }
    }
    entries
        .iter()
        .enumerate()
        .filter(|(at, entry)| {
            winners.get(key(entry).0.as_str()).map(|winner| winner.1) == Some(*at)
        })
        .map(|(_, entry)| entry)
        .collect()
}

/// Turns a section (or context) to register into `layer` into its entry,
/// parsing fixed text once.
pub(super) fn section_entry(
    id: Id,
    kind: PartKind,
    section: PromptSection,
    owner: Owner,
    layer: Option<ScopeId>,
) -> Result<SectionEntry, RegistryError> {
    let PromptSection {
        name,
        order,
        text,
        tool,
        complete,
        ..
    } = section;
    let (text, template, provider) = match text {
        SectionText::Fixed(text) => {
            let template = Template::parse(&text).map_err(|errors| {
                RegistryError::Template(TemplateProblem::new(
                    kind,
                    name.to_string(),
                    owner.clone(),
                    errors,
                ))
            })?;
            (text, Some(Arc::new(template)), None)
        }
        SectionText::Provided(provider) => (Text::default(), None, Some(provider)),
    };
    let mut section = AssembledSection::owned_by(name, order, owner, text).with_template(template);
    section.set_tool(tool);
    section.set_kind(kind);
    section.set_complete(complete);
    Ok(SectionEntry {
        id,
        layer,
        section,
        provider,
    })
}

/// Removes the entry registered as `id` from `entries`; its name and
/// layer, when there was one.
fn take<T>(entries: &mut Vec<Named<T>>, id: Id) -> Option<(String, Option<ScopeId>)> {
    let at = entries.iter().position(|entry| entry.id == id)?;
    let entry = entries.remove(at);
    Some((entry.name.to_string(), entry.layer))
}
