//! `PromptAssembly`: the owned snapshot one assembly produces.
//!
//! Its parts live in the modules below, which import nothing from here:
//! the render plan that `Sections` carries reads sections and variables,
//! and must not import the assembly back.

pub(crate) mod section;
pub(crate) mod variables;

use std::sync::{Arc, OnceLock};

use serde::ser::SerializeStruct;

use crate::render::plan::RenderPlan;
use crate::{Extensions, ToolSchema};
pub use section::{AssembledSection, PartKind};
pub use variables::{Variable, Variables};

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
        self.iter().find(|section| section.name() == name)
    }

    /// The section named `name`, to change it. Only a hit copies a shared
    /// vector: asking for a missing name keeps sharing the registry's.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut AssembledSection> {
        let at = self.iter().position(|section| section.name() == name)?;
        Some(&mut self.to_mut()[at])
    }

    /// Inserts `section` at its place in `(order, name)` order, replacing
    /// and returning a section of the same name.
    pub fn insert(&mut self, section: AssembledSection) -> Option<AssembledSection> {
        let previous = self.remove(section.name());
        let sections = self.to_mut();
        let at = sections.partition_point(|existing| existing.key() < section.key());
        sections.insert(at, section);
        previous
    }

    /// Removes and returns the section named `name`.
    pub fn remove(&mut self, name: &str) -> Option<AssembledSection> {
        let at = self.iter().position(|section| section.name() == name)?;
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
