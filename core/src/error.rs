//! The errors of registration and rendering.

use std::ops::Range;

use dsh_prompt_template::{ESCAPE_HINT, ErrorList, ParseErrors, Position, quoted_list};

use crate::scope::in_layer;
use crate::{Owner, PartKind, ScopeId};

/// A boxed error, as change listeners return it.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Registration failed; the registry is unchanged.
///
/// Its owners are boxed: an [`Owner`] names a crate, an item and a place,
/// and unboxed they made every `Result` of registration carry two hundred
/// bytes for an error built only on the failure path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// A contribution of that kind and name is already registered in that
    /// layer.
    #[error(
        "{kind} `{name}` is already registered{} by {existing}; {kind} names are unique {}",
        in_layer(.layer),
        within(.layer)
    )]
    Duplicate {
        /// What was registered twice.
        kind: NameKind,
        /// The name registered twice.
        name: String,
        /// The layer; `None` is the global one.
        layer: Option<ScopeId>,
        /// Who registered it first.
        existing: Box<Owner>,
    },
    /// That layer already has a tool order.
    #[error(
        "a tool order is already set {} by {existing}; a layer has one tool order: drop that \
         `Registration` first, or set this one in another scope",
        match .layer {
            Some(layer) => format!("in scope `{layer}`"),
            None => "in the global layer".to_owned(),
        }
    )]
    ToolOrderTwice {
        /// The layer; `None` is the global one.
        layer: Option<ScopeId>,
        /// Who set the order there.
        existing: Box<Owner>,
    },
    /// Two crates declare a static contribution of the same name.
    #[error(
        "{kind} `{name}` is declared twice: by {first} and by {second}; \
         rename one of them (names are unique across every linked crate)"
    )]
    DuplicateStatic {
        /// A section, a context or a variable.
        kind: NameKind,
        /// The name declared twice.
        name: String,
        /// One declaration.
        first: Box<Owner>,
        /// The other declaration.
        second: Box<Owner>,
    },
    /// A section name outside the grammar.
    #[error(
        "invalid section name `{name}`: a section name matches `{}`",
        dsh_prompt_template::SECTION_NAME_GRAMMAR
    )]
    InvalidSectionName {
        /// The rejected name.
        name: String,
    },
    /// A variable name outside the grammar.
    #[error(
        "invalid variable name `{name}`: a variable name matches `{}`, so it can be referenced as `<<name>>`",
        dsh_prompt_template::VARIABLE_NAME_GRAMMAR
    )]
    InvalidVariableName {
        /// The rejected name.
        name: String,
    },
    /// A fixed section (or context) text with malformed template syntax,
    /// found when it is registered.
    #[error(transparent)]
    Template(Box<TemplateProblem>),
    /// A change listener refused the registration, which was rolled back.
    #[error("registration of {contribution} was rolled back: a change listener failed: {source}")]
    ChangeListener {
        /// What was being registered.
        contribution: String,
        /// The listener's error.
        #[source]
        source: BoxError,
    },
    /// A change listener tried to register into the registry it listens to.
    #[error(
        "a change listener tried to register {contribution} into the registry that is notifying it; \
         register from outside the listener"
    )]
    Reentrant {
        /// What was being registered.
        contribution: String,
    },
}

/// The kinds of contribution whose names are unique in a layer, as
/// [`RegistryError::Duplicate`] names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NameKind {
    /// A section of the system prompt.
    Section,
    /// A runtime context.
    Context,
    /// A variable.
    Variable,
    /// A tool provider.
    ToolProvider,
    /// A waterfall listener.
    WaterfallListener,
}

impl From<PartKind> for NameKind {
    fn from(kind: PartKind) -> Self {
        match kind {
            PartKind::Section => Self::Section,
            PartKind::Context => Self::Context,
        }
    }
}

impl std::fmt::Display for NameKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Section => "section",
            Self::Context => "context",
            Self::Variable => "variable",
            Self::ToolProvider => "tool provider",
            Self::WaterfallListener => "waterfall listener",
        })
    }
}

fn registered_by(owner: &Option<Owner>) -> String {
    owner
        .as_ref()
        .map(|owner| format!(" (registered by {owner})"))
        .unwrap_or_default()
}

/// "within a scope" or "in the global layer": where a name must be unique.
fn within(layer: &Option<ScopeId>) -> &'static str {
    match layer {
        Some(_) => "within a scope (a scope may shadow the global layer's names)",
        None => "in the global layer (a scope may shadow them)",
    }
}

/// A part whose text has malformed template syntax: which part, whose,
/// and every syntax error of its text. One payload, whenever the syntax
/// is checked: [`RegistryError::Template`] for a fixed text, checked when
/// it is registered, and [`RenderError::Template`] for one checked when
/// it is rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} `{section}` ({owner}) has malformed template syntax:\n{errors}")]
#[non_exhaustive]
pub struct TemplateProblem {
    /// Section or context.
    pub kind: PartKind,
    /// The section.
    pub section: String,
    /// Who contributed it.
    pub owner: Owner,
    /// Every syntax error of its text.
    pub errors: ParseErrors,
}

impl TemplateProblem {
    /// The problem of part `section` of `kind`, owned by `owner`, whose
    /// text has `errors`.
    pub(crate) fn new(
        kind: PartKind,
        section: impl Into<String>,
        owner: Owner,
        errors: ParseErrors,
    ) -> Box<Self> {
        Box::new(Self {
            kind,
            section: section.into(),
            owner,
            errors,
        })
    }
}

/// Where a reference is: the part whose text holds it, and its place in
/// that text. Shared by the errors of a reference.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReferenceSite {
    /// Section or context.
    pub kind: PartKind,
    /// The section whose text holds the reference.
    pub section: String,
    /// Who contributed the section.
    pub owner: Owner,
    /// The referenced name.
    pub reference: String,
    /// Where the reference is inside the section's text.
    pub position: Position,
    /// The reference's bytes (`<<name>>`) in the section's text.
    pub span: Range<usize>,
}

/// Rendering failed: the prompt would have been wrong, so there is none.
///
/// Its sites and owners are boxed, as [`RegistryError`]'s are: a render
/// returns `Result<_, RenderError>` part by part, and the error is built
/// only on the failure path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RenderError {
    /// A reference to a variable that is not registered.
    #[error(
        "{} `{}` ({}) references unknown variable `<<{}>>` at {}; {}{}",
        .site.kind,
        .site.section,
        .site.owner,
        .site.reference,
        .site.position,
        registered_list(.registered),
        did_you_mean(.suggestion)
    )]
    UnknownVariable {
        /// Where the reference is.
        site: Box<ReferenceSite>,
        /// The registered variables, sorted.
        registered: Vec<String>,
        /// The registered variable closest to the reference, if any is close.
        suggestion: Option<String>,
    },
    /// A reference to a registered variable that has no value for this
    /// assembly.
    #[error(
        "{} `{}` ({}) references `<<{}>>` at {}, but variable `{}` has no value for this \
         assembly{}",
        .site.kind,
        .site.section,
        .site.owner,
        .site.reference,
        .site.position,
        .site.reference,
        registered_by(.variable_owner)
    )]
    ValuelessVariable {
        /// Where the reference is.
        site: Box<ReferenceSite>,
        /// Who registered the variable, when known.
        variable_owner: Option<Owner>,
    },
    /// A section's text has malformed template syntax, found when it is
    /// rendered (a provided text, or one a listener set).
    #[error(transparent)]
    Template(Box<TemplateProblem>),
    /// Two complete sections are active in one assembly: each says it is
    /// the whole prompt.
    #[error(
        "sections `{section}` ({owner}) and `{other}` ({other_owner}) are both complete; \
         a complete section is the whole prompt, so only one may be active in an assembly"
    )]
    CompleteSections {
        /// The first complete section, in render order.
        section: String,
        /// Who contributed it.
        owner: Box<Owner>,
        /// The second one.
        other: String,
        /// Who contributed the second one.
        other_owner: Box<Owner>,
    },
}

impl RenderError {
    /// The section the error is about.
    pub fn section(&self) -> &str {
        match self {
            Self::UnknownVariable { site, .. } | Self::ValuelessVariable { site, .. } => {
                &site.section
            }
            Self::Template(problem) => &problem.section,
            Self::CompleteSections { section, .. } => section,
        }
    }

    /// Who contributed the section the error is about.
    pub fn owner(&self) -> &Owner {
        match self {
            Self::UnknownVariable { site, .. } | Self::ValuelessVariable { site, .. } => {
                &site.owner
            }
            Self::Template(problem) => &problem.owner,
            Self::CompleteSections { owner, .. } => owner,
        }
    }

    /// The bytes of the reference the error is about, inside the section's
    /// text; `None` for [`Template`](Self::Template), whose every syntax
    /// error has a span of its own.
    pub fn span(&self) -> Option<Range<usize>> {
        match self {
            Self::UnknownVariable { site, .. } | Self::ValuelessVariable { site, .. } => {
                Some(site.span.clone())
            }
            Self::Template(_) | Self::CompleteSections { .. } => None,
        }
    }

    /// How to fix a reference error, for front ends that show the problem
    /// and its fix apart: the suggestion and the registered variables of an
    /// unknown reference, the variable's owner of a valueless one, and the
    /// escape. `None` for [`Template`](Self::Template): each syntax error
    /// has its own [`help`](dsh_prompt_template::ParseError::help).
    pub fn help(&self) -> Option<String> {
        match self {
            Self::UnknownVariable {
                registered,
                suggestion,
                ..
            } => {
                let list = registered_list(registered);
                Some(match suggestion {
                    Some(name) => format!("did you mean `<<{name}>>`? {list}; {ESCAPE_HINT}"),
                    None => format!("{list}; {ESCAPE_HINT}"),
                })
            }
            Self::ValuelessVariable {
                site,
                variable_owner,
            } => Some(format!(
                "variable `{reference}`{} has no value for this assembly; \
                 drop `<<{reference}>>`, or {ESCAPE_HINT}",
                registered_by(variable_owner),
                reference = site.reference,
            )),
            Self::Template(_) => None,
            Self::CompleteSections { other, .. } => Some(format!(
                "unregister one of them, or shadow `{other}` in the scope with a section \
                 that is not complete"
            )),
        }
    }
}

/// Every problem of an assembly's render, in render order: section by
/// section, a section's syntax errors before its reference errors, and
/// references in the order they appear. Never empty.
///
/// [`render_prompt`](crate::render_prompt) and
/// [`render_context`](crate::render_context) fail with it. The list is the
/// grammar's [`ErrorList`], the shape of every all-problems report.
pub type RenderErrors = ErrorList<RenderError>;

fn registered_list(registered: &[String]) -> String {
    if registered.is_empty() {
        return "no variables are registered".to_owned();
    }
    format!("registered variables: {}", quoted_list(registered))
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    suggestion
        .as_ref()
        .map(|name| format!(" (did you mean `<<{name}>>`?)"))
        .unwrap_or_default()
}
