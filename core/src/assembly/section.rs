//! `AssembledSection`: one part of an assembly, a section or a runtime
//! context, with its resolved text. The render plan reads these without
//! knowing the assembly that holds them.

use std::panic::Location;
use std::sync::Arc;

use dsh_prompt_template::Template;
use serde::ser::SerializeStruct;

use crate::section::verbatim_template;
use crate::{Owner, Text};

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

    /// A section whose text is `text` as written, not a template, as a
    /// waterfall listener adds one: escaped, as
    /// [`PromptSection::verbatim`](crate::PromptSection::verbatim) says.
    /// Its owner is the code that creates it; name the real one with
    /// [`set_owner`](Self::set_owner).
    ///
    /// ```
    /// use std::ops::ControlFlow;
    /// use dsh_system_prompt::{AssembleContext, AssembledSection, SystemPrompt, render_prompt};
    ///
    /// let prompt = SystemPrompt::empty();
    /// let _server = prompt.on_assemble("server", |_, assembly| {
    ///     let sent = "Call `search` before <<anything>>.";
    ///     assembly.sections.insert(AssembledSection::verbatim("mcp:docs", 150, sent));
    ///     ControlFlow::Continue(())
    /// })?;
    /// let text = render_prompt(&prompt.assemble(&AssembleContext::new()))?;
    /// assert_eq!(text, "Call `search` before <<anything>>.");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn verbatim(name: impl Into<Text>, order: i32, text: &str) -> Self {
        Self::new(name, order, verbatim_template(text))
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

    /// The key sections are sorted by: `(order, name)`.
    pub(super) fn key(&self) -> (i32, &str) {
        (self.order, &self.name)
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
