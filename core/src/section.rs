//! What contributors register: sections, their owners, tool schemas.

use std::fmt;
use std::panic::Location;
use std::sync::Arc;

use dsh_prompt_template::escape_literal;
use serde::{Deserialize, Serialize};

use crate::{AssembleContext, ScopeId, Text};

/// Who contributed a section or variable, for diagnostics: the crate, the
/// item, and where it is declared.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Owner {
    /// The owning crate (`dsh-tool-bash`), or `runtime` for a contribution
    /// registered by code whose crate is unknown.
    pub krate: Text,
    /// The owning item (`dsh_tool_bash::EXIT_CODE_HABIT`), or a description
    /// of the runtime source (`agent coder persona`).
    pub item: Text,
    /// The file that declares or registers it.
    pub file: Text,
    /// The line in `file`.
    pub line: u32,
}

impl Owner {
    /// An owner with every field given.
    pub fn new(
        krate: impl Into<Text>,
        item: impl Into<Text>,
        file: impl Into<Text>,
        line: u32,
    ) -> Self {
        Self {
            krate: krate.into(),
            item: item.into(),
            file: file.into(),
            line,
        }
    }

    /// The owner of a runtime registration: the code at `location`.
    pub(crate) fn at(location: &'static Location<'static>, item: Text) -> Self {
        Self::new("runtime", item, location.file(), location.line())
    }

    /// `file:line`.
    pub fn location(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` of {} ({}:{})",
            self.item, self.krate, self.file, self.line
        )
    }
}

/// A text provider: computes a section's text for one assembly.
pub type TextProvider = Arc<dyn Fn(&AssembleContext) -> String + Send + Sync>;

/// Where a section's text comes from.
#[derive(Clone)]
pub enum SectionText {
    /// The same text at every assembly. Its template syntax is checked when
    /// the section is registered.
    Fixed(Text),
    /// Text computed at each assembly from that assembly's context. Its
    /// template syntax is checked when it is rendered.
    Provided(TextProvider),
}

impl fmt::Debug for SectionText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fixed(text) => f.debug_tuple("Fixed").field(text).finish(),
            Self::Provided(_) => f.write_str("Provided(..)"),
        }
    }
}

/// A section to register: a named, ordered piece of the system prompt.
///
/// Sections render in ascending `(order, name)`. Order bands: negative
/// orders render before the persona, `0` is the agent's persona, tool
/// guidance uses `100..=199`.
///
/// ```
/// use dsh_system_prompt::{PromptSection, SystemPrompt};
///
/// let prompt = SystemPrompt::empty();
/// let _habit = prompt.section(
///     PromptSection::new("tool:bash", 105, "Check the `[exit code: N]` marker.")
///         .bound_to_tool("bash"),
/// )?;
/// # Ok::<(), dsh_system_prompt::RegistryError>(())
/// ```
#[derive(Clone, Debug)]
pub struct PromptSection {
    pub(crate) name: Text,
    pub(crate) order: i32,
    pub(crate) text: SectionText,
    pub(crate) tool: Option<Text>,
    pub(crate) owner: Option<Owner>,
    pub(crate) complete: bool,
}

impl PromptSection {
    /// A section whose text is the same at every assembly.
    pub fn new(name: impl Into<Text>, order: i32, text: impl Into<Text>) -> Self {
        Self::with_text(name, order, SectionText::Fixed(text.into()))
    }

    /// A section whose text is `text` as written, not a template: for
    /// text from outside the binary (an instruction file, an editor's own
    /// prompt, an MCP server's instructions), which was never written for
    /// dsh's grammar. It is escaped ([`escape_literal`]), so every `<<`
    /// renders as written and `cat <<EOF` or `<<model>>` in it is never a
    /// reference. Name its owner with [`owned_by`](Self::owned_by): the
    /// file, the client, the server.
    ///
    /// ```
    /// use dsh_system_prompt::{AssembleContext, PromptSection, SystemPrompt, render_prompt};
    ///
    /// let prompt = SystemPrompt::empty();
    /// let _file = prompt.section(PromptSection::verbatim(
    ///     "project:AGENTS.md",
    ///     200,
    ///     "Run `cat <<EOF` and write <<tests>> first.",
    /// ))?;
    /// let text = render_prompt(&prompt.assemble(&AssembleContext::new()))?;
    /// assert_eq!(text, "Run `cat <<EOF` and write <<tests>> first.");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn verbatim(name: impl Into<Text>, order: i32, text: &str) -> Self {
        Self::new(name, order, verbatim_template(text))
    }

    /// A section whose text is computed at each assembly.
    pub fn provided(
        name: impl Into<Text>,
        order: i32,
        text: impl Fn(&AssembleContext) -> String + Send + Sync + 'static,
    ) -> Self {
        Self::with_text(name, order, SectionText::Provided(Arc::new(text)))
    }

    /// A section with its text source given.
    pub fn with_text(name: impl Into<Text>, order: i32, text: SectionText) -> Self {
        Self {
            name: name.into(),
            order,
            text,
            tool: None,
            owner: None,
            complete: false,
        }
    }

    /// Binds the section to a tool: it renders only when a tool of that name
    /// is in the final assembly, so guidance never outlives its tool.
    pub fn bound_to_tool(mut self, tool: impl Into<Text>) -> Self {
        self.tool = Some(tool.into());
        self
    }

    /// Marks the section complete: while it is active for an assembly's
    /// scope, it is the whole prompt — after the waterfall, every other
    /// section is discarded, and so are the listeners' edits of it. For an
    /// agent whose prompt must be exactly one text. A complete section
    /// bound to a tool the final assembly lacks does not show, so it is
    /// not active; nor is a provided one whose text is empty for the
    /// caller (so a complete section may speak only to the callers it is
    /// for: the agent loop's compaction instruction). Two complete sections active at once fail to render
    /// ([`RenderError::CompleteSections`](crate::RenderError::CompleteSections)).
    pub fn complete(mut self) -> Self {
        self.complete = true;
        self
    }

    /// Names the section's owner. Without one, the owner is the code that
    /// registers the section.
    pub fn owned_by(mut self, owner: Owner) -> Self {
        self.owner = Some(owner);
        self
    }

    /// The section's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The section's order.
    pub fn order(&self) -> i32 {
        self.order
    }
}

/// The template text that renders as `text`, as written: the one rule of
/// a verbatim section ([`PromptSection::verbatim`],
/// [`AssembledSection::verbatim`](crate::AssembledSection::verbatim)).
pub(crate) fn verbatim_template(text: &str) -> Text {
    escape_literal(text).into_owned().into()
}

/// A tool as the model is told about it: name, description, and a
/// JSON-schema object for its parameters.
///
/// Assemblies hold tools as `Arc<ToolSchema>`: a snapshot shares the
/// schemas, and mutating one (through [`Arc::make_mut`] or
/// [`PromptAssembly::tool_mut`](crate::PromptAssembly::tool_mut)) copies
/// only that tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    /// The tool's name, as the model calls it.
    pub name: String,
    /// What the tool does and when to use it: the tool's whole contract.
    pub description: String,
    /// A JSON-schema object describing the arguments.
    pub parameters: serde_json::Value,
}

impl ToolSchema {
    /// A tool schema.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: serde_json::Value,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }
}

/// Where one section of a scope's assemblies comes from
/// ([`section_origins`](crate::inspect::section_origins)). Defined beside
/// the other section types, so that the registry, which builds it, need
/// not import `inspect`, which reads the registry.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SectionOrigin {
    /// The section's name.
    pub name: Text,
    /// Its order.
    pub order: i32,
    /// The tool it is bound to, if any.
    pub tool: Option<Text>,
    /// Whether it is complete (see
    /// [`PromptSection::complete`](crate::PromptSection::complete)).
    pub complete: bool,
    /// Who registered it.
    pub owner: Owner,
    /// The layer it is registered in; `None` is the global one.
    pub layer: Option<ScopeId>,
    /// The sections of the same name in outer layers it shadows, nearest
    /// first: each one's layer and owner.
    pub shadows: Vec<(Option<ScopeId>, Owner)>,
}
