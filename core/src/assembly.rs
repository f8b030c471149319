//! `PromptAssembly`: the owned snapshot one assembly produces.

use std::panic::Location;
use std::sync::{Arc, OnceLock};

use dsh_prompt_template::Template;
use rustc_hash::FxHashMap;
use serde::ser::{SerializeMap, SerializeStruct};

use crate::render::plan::RenderPlan;
use crate::{Extensions, Owner, Text, ToolSchema};

/// What a part of an assembly is: a section of the system prompt, or a
/// runtime context (rendered by [`render_context`](crate::render_context)
/// into a message at the conversation's tail, never into the system
/// prompt). Errors name a part by its kind: "context `todo`".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PartKind {
    /// A section of the system prompt.
    #[default]
    Section,
    /// A runtime context.
    Context,
}

impl std::fmt::Display for PartKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Section => "section",
            Self::Context => "context",
        })
    }
}

/// A section of an assembly: resolved text, not yet interpolated. A
/// runtime context is one too, of kind [`PartKind::Context`].
#[derive(Clone, Debug)]
pub struct AssembledSection {
    kind: PartKind,
    name: Text,
    order: i32,
    owner: Owner,
    tool: Option<Text>,
    text: Text,
    /// Whether the section is the whole prompt while it is active.
    complete: bool,
    /// The parse of `text`, when it is known to be valid (fixed texts are
    /// parsed once, at registration); `None` means "parse at render".
    template: Option<Arc<Template>>,
}

impl AssembledSection {
    /// A section, as a waterfall listener adds one. Its owner is the code
    /// that creates it.
    #[track_caller]
    pub fn new(name: impl Into<Text>, order: i32, text: impl Into<Text>) -> Self {
        let name = name.into();
        let owner = Owner::at(Location::caller(), name.clone());
        Self::owned_by(name, order, owner, text.into())
    }

    /// A section of `owner`, bound to no tool, its text parsed at render:
    /// the one constructor, which [`new`](Self::new) and the registry's
    /// entries both start from.
    pub(crate) fn owned_by(name: Text, order: i32, owner: Owner, text: Text) -> Self {
        Self {
            kind: PartKind::Section,
            name,
            order,
            owner,
            tool: None,
            text,
            complete: false,
            template: None,
        }
    }

    /// Builder: the parse of the text, known to be valid, so rendering
    /// need not parse it again.
    pub(crate) fn with_template(mut self, template: Option<Arc<Template>>) -> Self {
        self.template = template;
        self
    }

    /// Whether this is a section or a runtime context.
    pub fn kind(&self) -> PartKind {
        self.kind
    }

    /// Makes this part a runtime context (or a section again).
    pub fn set_kind(&mut self, kind: PartKind) {
        self.kind = kind;
    }

    /// Whether the section is complete: the whole prompt while it is
    /// active (see [`PromptSection::complete`](crate::PromptSection::complete)).
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    pub(crate) fn set_complete(&mut self, complete: bool) {
        self.complete = complete;
    }

    /// The section's name (`tool:bash`).
    pub fn name(&self) -> &Text {
        &self.name
    }

    /// The section's order.
    pub fn order(&self) -> i32 {
        self.order
    }

    /// Who contributed the section.
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// The tool the section is bound to, if any.
    pub fn tool(&self) -> Option<&Text> {
        self.tool.as_ref()
    }

    /// The section's text, before interpolation.
    pub fn text(&self) -> &Text {
        &self.text
    }

    pub(crate) fn template(&self) -> Option<&Template> {
        self.template.as_deref()
    }

    /// Replaces the section's text.
    pub fn set_text(&mut self, text: impl Into<Text>) {
        self.text = text.into();
        self.template = None;
    }

    /// Binds the section to a tool, or unbinds it.
    pub fn set_tool(&mut self, tool: Option<Text>) {
        self.tool = tool;
    }

    /// Replaces the section's owner.
    pub fn set_owner(&mut self, owner: Owner) {
        self.owner = owner;
    }

    /// Builder form of [`set_tool`](Self::set_tool).
    pub fn bound_to_tool(mut self, tool: impl Into<Text>) -> Self {
        self.tool = Some(tool.into());
        self
    }

    fn key(&self) -> (i32, &str) {
        (self.order, &self.name)
    }
}

/// The sections of an assembly, in render order: ascending `(order, name)`.
///
/// Shared with the registry until first mutated (copy on write), so an
/// assembly of fixed sections costs one reference count, not one copy per
/// section.
#[derive(Clone, Default)]
pub struct Sections(Arc<SectionList>);

/// A list of sections, and the render plan the registry compiled from it:
/// one reference count for both. The plan is set while the list is the
/// registry's, or the registry's with the texts of provided sections set,
/// and dropped at the first mutable access (`render::plan` states the
/// invariant this keeps).
#[derive(Default)]
pub(crate) struct SectionList {
    pub(crate) list: Vec<AssembledSection>,
    pub(crate) plan: OnceLock<Arc<RenderPlan>>,
}

impl SectionList {
    /// A list without a plan yet.
    pub(crate) fn new(list: Vec<AssembledSection>) -> Self {
        Self {
            list,
            plan: OnceLock::new(),
        }
    }
}

impl Clone for SectionList {
    /// A copy is made to be changed: it is no longer what was compiled.
    fn clone(&self) -> Self {
        Self::new(self.list.clone())
    }
}

impl std::fmt::Debug for Sections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Sections").field(&self.0.list).finish()
    }
}

impl Sections {
    /// The registry's sections, shared, with the plan compiled from them.
    pub(crate) fn registry(sections: Arc<SectionList>) -> Self {
        Self(sections)
    }

    /// The registry's sections with the texts of provided sections set,
    /// and the plan compiled from the registry's own.
    pub(crate) fn provided(list: Vec<AssembledSection>, plan: Arc<RenderPlan>) -> Self {
        Self(Arc::new(SectionList {
            list,
            plan: OnceLock::from(plan),
        }))
    }

    /// The plan compiled from these sections, while they are unchanged.
    pub(crate) fn plan(&self) -> Option<&RenderPlan> {
        self.0.plan.get().map(|plan| &**plan)
    }

    /// The section named `name`.
    pub fn get(&self, name: &str) -> Option<&AssembledSection> {
        self.iter().find(|section| section.name == name)
    }

    /// The section named `name`, to change it. Only a hit copies a shared
    /// vector: asking for a missing name keeps sharing the registry's.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut AssembledSection> {
        let at = self.iter().position(|section| section.name == name)?;
        Some(&mut self.to_mut()[at])
    }

    /// Inserts `section` at its place in `(order, name)` order, replacing
    /// and returning a section of the same name.
    pub fn insert(&mut self, section: AssembledSection) -> Option<AssembledSection> {
        let previous = self.remove(&section.name);
        let sections = self.to_mut();
        let at = sections.partition_point(|existing| existing.key() < section.key());
        sections.insert(at, section);
        previous
    }

    /// Removes and returns the section named `name`.
    pub fn remove(&mut self, name: &str) -> Option<AssembledSection> {
        let at = self.iter().position(|section| section.name == name)?;
        Some(self.to_mut().remove(at))
    }

    /// Keeps only the sections for which `keep` returns `true`.
    pub fn retain(&mut self, keep: impl FnMut(&AssembledSection) -> bool) {
        self.to_mut().retain(keep);
    }

    /// The sections as a vector, to change freely. Rendering follows the
    /// vector's order: keep it sorted, or [`insert`](Self::insert) instead.
    pub fn to_mut(&mut self) -> &mut Vec<AssembledSection> {
        let sections = Arc::make_mut(&mut self.0);
        sections.plan = OnceLock::new();
        &mut sections.list
    }
}

impl std::ops::Deref for Sections {
    type Target = [AssembledSection];

    fn deref(&self) -> &[AssembledSection] {
        &self.0.list
    }
}

impl<'a> IntoIterator for &'a Sections {
    type Item = &'a AssembledSection;
    type IntoIter = std::slice::Iter<'a, AssembledSection>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

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

/// One assembly of the system prompt: what one caller's model is told.
///
/// An owned snapshot: changing it never changes the registry or the next
/// assembly. Sections, variable names and tool schemas are shared with the
/// registry and copied only when changed, so a snapshot per step is cheap.
/// [`render_prompt`](crate::render_prompt) turns it into the prompt text.
#[derive(Clone, Debug, Default)]
pub struct PromptAssembly {
    /// The sections, in render order.
    pub sections: Sections,
    /// Every registered variable, resolved for this assembly.
    pub variables: Variables,
    /// The tools the model is told it can call. A section bound to a tool
    /// renders only when that tool is here.
    pub tools: Vec<Arc<ToolSchema>>,
    /// The runtime contexts, in `(order, name)` order: not part of the
    /// system prompt; [`render_context`](crate::render_context) renders
    /// them for the agent loop's context message.
    pub contexts: Vec<AssembledSection>,
    /// Typed fields other crates attach to an assembly.
    pub extensions: Extensions,
}

impl PromptAssembly {
    /// An empty assembly.
    pub fn new() -> Self {
        Self::default()
    }

    /// The tool named `name`.
    pub fn tool(&self, name: &str) -> Option<&ToolSchema> {
        self.tools
            .iter()
            .map(|tool| &**tool)
            .find(|tool| tool.name == name)
    }

    /// Whether a tool named `name` is in the assembly.
    pub fn has_tool(&self, name: &str) -> bool {
        self.tool(name).is_some()
    }

    /// The tool named `name`, to change it; only that tool is copied.
    pub fn tool_mut(&mut self, name: &str) -> Option<&mut ToolSchema> {
        let tool = self.tools.iter_mut().find(|tool| tool.name == name)?;
        Some(Arc::make_mut(tool))
    }

    /// Removes the tool named `name` (and with it the guidance bound to it);
    /// returns whether it was there.
    pub fn remove_tool(&mut self, name: &str) -> bool {
        let before = self.tools.len();
        self.tools.retain(|tool| tool.name != name);
        self.tools.len() != before
    }
}

impl serde::Serialize for AssembledSection {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut section = serializer.serialize_struct("AssembledSection", 5)?;
        section.serialize_field("name", &self.name)?;
        section.serialize_field("order", &self.order)?;
        section.serialize_field("owner", &self.owner)?;
        section.serialize_field("tool", &self.tool)?;
        section.serialize_field("text", &self.text)?;
        section.end()
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

impl serde::Serialize for PromptAssembly {
    /// `{ sections, variables, tools, contexts }`; extensions are not
    /// serialized.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut assembly = serializer.serialize_struct("PromptAssembly", 4)?;
        assembly.serialize_field("sections", &*self.sections)?;
        assembly.serialize_field("variables", &self.variables)?;
        assembly.serialize_field("tools", &self.tools)?;
        assembly.serialize_field("contexts", &self.contexts)?;
        assembly.end()
    }
}
