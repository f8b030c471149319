//! The registry's state: one immutable value, replaced whole on every
//! change (writers clone it, change the clone, and publish it), with what
//! assemblies share derived from it once.

use std::sync::{Arc, OnceLock};

use dsh_prompt_template::{Template, is_section_name, is_variable_name};

use super::{AssembleListener, ChangeListener, Contribution, Id, ToolProvider, VariableProvider};
use crate::assembly::{Compiled, VariableLayout};
use crate::section::{SectionText, TextProvider};
use crate::{AssembledSection, Owner, PartKind, PromptSection, RegistryError, Text};

/// One consistent registry state. Replaced whole on every change, so an
/// assembly never sees half of a registration.
#[derive(Clone, Default)]
pub(super) struct State {
    /// Sorted by `(order, name)`.
    pub(super) sections: Vec<SectionEntry>,
    /// The runtime contexts, sorted by `(order, name)`; each of kind
    /// [`PartKind::Context`](crate::PartKind::Context).
    pub(super) contexts: Vec<SectionEntry>,
    /// Sorted by name.
    pub(super) variables: Vec<VariableEntry>,
    pub(super) tools: Vec<(Id, ToolProvider)>,
    pub(super) assemble_listeners: Vec<(Id, AssembleListener)>,
    pub(super) change_listeners: Vec<(Id, ChangeListener)>,
    /// Derived: the sections as an assembly holds them, shared by every
    /// assembly until one changes them.
    pub(super) assembled: Arc<Vec<AssembledSection>>,
    /// Derived: which entries of `assembled` need their text provided.
    pub(super) provided: Vec<(usize, TextProvider)>,
    /// Derived: the variable names and owners, shared by every assembly.
    pub(super) layout: Arc<VariableLayout>,
    /// Derived, at the first assembly: `assembled` compiled for rendering.
    pub(super) plan: OnceLock<Compiled>,
}

#[derive(Clone)]
pub(super) struct SectionEntry {
    pub(super) id: Id,
    pub(super) section: AssembledSection,
    pub(super) provider: Option<TextProvider>,
}

#[derive(Clone)]
pub(super) struct VariableEntry {
    pub(super) id: Id,
    pub(super) name: Text,
    pub(super) owner: Option<Owner>,
    pub(super) provider: VariableProvider,
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
        self.assembled = Arc::new(
            self.sections
                .iter()
                .map(|entry| entry.section.clone())
                .collect(),
        );
        self.provided = self
            .sections
            .iter()
            .enumerate()
            .filter_map(|(at, entry)| Some((at, entry.provider.clone()?)))
            .collect();
        self.plan = OnceLock::new();
        self.layout = Arc::new(VariableLayout::new(
            self.variables
                .iter()
                .map(|entry| (entry.name.clone(), entry.owner.clone())),
        ));
    }

    pub(super) fn remove(&mut self, id: Id) -> Option<Contribution> {
        if let Some(at) = self.sections.iter().position(|entry| entry.id == id) {
            let entry = self.sections.remove(at);
            return Some(Contribution::Section {
                name: entry.section.name().to_string(),
            });
        }
        if let Some(at) = self.contexts.iter().position(|entry| entry.id == id) {
            let entry = self.contexts.remove(at);
            return Some(Contribution::Context {
                name: entry.section.name().to_string(),
            });
        }
        if let Some(at) = self.variables.iter().position(|entry| entry.id == id) {
            let entry = self.variables.remove(at);
            return Some(Contribution::Variable {
                name: entry.name.to_string(),
            });
        }
        if take(&mut self.tools, id) {
            return Some(Contribution::Tools);
        }
        if take(&mut self.assemble_listeners, id) {
            return Some(Contribution::AssembleListener);
        }
        if take(&mut self.change_listeners, id) {
            return Some(Contribution::ChangeListener);
        }
        None
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

    /// A section or context to register: a good name, not taken among
    /// its kind (sections and contexts are two namespaces).
    pub(super) fn check_part(
        &self,
        kind: PartKind,
        section: &PromptSection,
    ) -> Result<(), RegistryError> {
        if !is_section_name(&section.name) {
            return Err(RegistryError::InvalidSectionName {
                name: section.name.to_string(),
            });
        }
        match self
            .parts(kind)
            .iter()
            .find(|entry| *entry.section.name() == section.name)
        {
            Some(existing) => Err(match kind {
                PartKind::Section => RegistryError::DuplicateSection {
                    name: section.name.to_string(),
                    existing: existing.section.owner().clone(),
                },
                PartKind::Context => RegistryError::DuplicateContext {
                    name: section.name.to_string(),
                    existing: existing.section.owner().clone(),
                },
            }),
            None => Ok(()),
        }
    }

    pub(super) fn check_variable(&self, name: &str) -> Result<(), RegistryError> {
        if !is_variable_name(name) {
            return Err(RegistryError::InvalidVariableName {
                name: name.to_owned(),
            });
        }
        match self.variables.iter().find(|entry| entry.name == name) {
            Some(existing) => Err(RegistryError::DuplicateVariable {
                name: name.to_owned(),
                existing: existing.owner.clone(),
            }),
            None => Ok(()),
        }
    }
}

/// Turns a section (or context) to register into its entry, parsing fixed
/// text once.
pub(super) fn section_entry(
    id: Id,
    kind: PartKind,
    section: PromptSection,
    owner: Owner,
) -> Result<SectionEntry, RegistryError> {
    let PromptSection {
        name,
        order,
        text,
        tool,
        ..
    } = section;
    let (text, template, provider) = match text {
        SectionText::Fixed(text) => {
            let template = Template::parse(&text).map_err(|errors| RegistryError::Template {
                kind,
                section: name.to_string(),
                owner: owner.clone(),
                errors,
            })?;
            (text, Some(Arc::new(template)), None)
        }
        SectionText::Provided(provider) => (Text::default(), None, Some(provider)),
    };
    let mut section = AssembledSection::owned_by(name, order, owner, text).with_template(template);
    section.set_tool(tool);
    section.set_kind(kind);
    Ok(SectionEntry {
        id,
        section,
        provider,
    })
}

/// Removes the entry registered as `id` from `entries`; whether there was one.
fn take<T>(entries: &mut Vec<(Id, T)>, id: Id) -> bool {
    match entries.iter().position(|(entry, _)| *entry == id) {
        Some(at) => {
            entries.remove(at);
            true
        }
        None => false,
    }
}
