//! The errors of registration and rendering.

use std::ops::Range;

use dsh_prompt_template::{ESCAPE_HINT, ErrorList, ParseErrors, Position};

use crate::scope::in_layer;
use crate::{Owner, PartKind, ScopeId};

/// A boxed error, as change listeners return it.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Registration failed; the registry is unchanged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// A section of that name is already registered in that layer.
    #[error(
        "section `{name}` is already registered{} by {existing}; section names are unique {}",
        in_layer(.layer),
        within(.layer)
    )]
    DuplicateSection {
        /// The name registered twice.
        name: String,
        /// The layer; `None` is the global one.
        layer: Option<ScopeId>,
        /// Who registered it first.
        existing: Owner,
    },
    /// A runtime context of that name is already registered in that layer.
    #[error(
        "context `{name}` is already registered{} by {existing}; context names are unique {}",
        in_layer(.layer),
        within(.layer)
    )]
    DuplicateContext {
        /// The name registered twice.
        name: String,
        /// The layer; `None` is the global one.
        layer: Option<ScopeId>,
        /// Who registered it first.
        existing: Owner,
    },
    /// A variable of that name is already registered in that layer.
    #[error(
        "variable `{name}` is already registered{}{}; variable names are unique {}",
        in_layer(.layer),
        owned_by(.existing),
        within(.layer)
    )]
    DuplicateVariable {
        /// The name registered twice.
        name: String,
        /// The layer; `None` is the global one.
        layer: Option<ScopeId>,
        /// Who registered it first, when known.
        existing: Option<Owner>,
    },
    /// A tool provider or waterfall listener of that name is already
    /// registered in that layer.
    #[error(
        "{contribution} `{name}` is already registered{} by {existing}; names are unique {}",
        in_layer(.layer),
        within(.layer)
    )]
    DuplicateName {
        /// `tool provider` or `waterfall listener`.
        contribution: &'static str,
        /// The name registered twice.
        name: String,
        /// The layer; `None` is the global one.
        layer: Option<ScopeId>,
        /// Who registered it first.
        existing: Owner,
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
        existing: Owner,
    },
    /// Two crates declare a static contribution of the same name.
    #[error(
        "{kind} `{name}` is declared twice: by {first} and by {second}; \
         rename one of them (names are unique across every linked crate)"
    )]
    DuplicateStatic {
        /// `section` or `variable`.
        kind: &'static str,
        /// The name declared twice.
        name: String,
        /// One declaration.
        first: Owner,
        /// The other declaration.
        second: Owner,
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
    /// A fixed section (or context) text with malformed template syntax.
    #[error("{kind} `{section}` ({owner}) has malformed template syntax:\n{errors}")]
    Template {
        /// Section or context.
        kind: PartKind,
        /// The section.
        section: String,
        /// Who contributed it.
        owner: Owner,
        /// Every syntax error of its text.
        errors: ParseErrors,
    },
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

fn owned_by(owner: &Option<Owner>) -> String {
    owner
        .as_ref()
        .map(|owner| format!(" by {owner}"))
        .unwrap_or_default()
}

/// Rendering failed: the prompt would have been wrong, so there is none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RenderError {
    /// A reference to a variable that is not registered.
    #[error(
        "{kind} `{section}` ({owner}) references unknown variable `<<{reference}>>` at {position}; {}{}",
        registered_list(.registered),
        did_you_mean(.suggestion)
    )]
    UnknownVariable {
        /// Section or context.
        kind: PartKind,
        /// The section whose text holds the reference.
        section: String,
        /// Who contributed the section.
        owner: Owner,
        /// The referenced name.
        reference: String,
        /// Where the reference is inside the section's text.
        position: Position,
        /// The reference's bytes (`<<name>>`) in the section's text.
        span: Range<usize>,
        /// The registered variables, sorted.
        registered: Vec<String>,
        /// The registered variable closest to the reference, if any is close.
        suggestion: Option<String>,
    },
    /// A reference to a registered variable that has no value for this
    /// assembly.
    #[error(
        "{kind} `{section}` ({owner}) references `<<{reference}>>` at {position}, \
         but variable `{reference}` has no value for this assembly{}",
        registered_by(.variable_owner)
    )]
    ValuelessVariable {
        /// Section or context.
        kind: PartKind,
        /// The section whose text holds the reference.
        section: String,
        /// Who contributed the section.
        owner: Owner,
        /// The referenced name.
        reference: String,
        /// Where the reference is inside the section's text.
        position: Position,
        /// The reference's bytes (`<<name>>`) in the section's text.
        span: Range<usize>,
        /// Who registered the variable, when known.
        variable_owner: Option<Owner>,
    },
    /// A section's text has malformed template syntax.
    #[error("{kind} `{section}` ({owner}) has malformed template syntax:\n{errors}")]
    Template {
        /// Section or context.
        kind: PartKind,
        /// The section.
        section: String,
        /// Who contributed it.
        owner: Owner,
        /// Every syntax error of its text.
        errors: ParseErrors,
    },
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
        owner: Owner,
        /// The second one.
        other: String,
        /// Who contributed the second one.
        other_owner: Owner,
    },
}

impl RenderError {
    /// The section the error is about.
    pub fn section(&self) -> &str {
        match self {
            Self::UnknownVariable { section, .. }
            | Self::ValuelessVariable { section, .. }
            | Self::Template { section, .. }
            | Self::CompleteSections { section, .. } => section,
        }
    }

    /// Who contributed the section the error is about.
    pub fn owner(&self) -> &Owner {
        match self {
            Self::UnknownVariable { owner, .. }
            | Self::ValuelessVariable { owner, .. }
            | Self::Template { owner, .. }
            | Self::CompleteSections { owner, .. } => owner,
        }
    }

    /// The bytes of the reference the error is about, inside the section's
    /// text; `None` for [`Template`](Self::Template), whose every syntax
    /// error has a span of its own.
    pub fn span(&self) -> Option<Range<usize>> {
        match self {
            Self::UnknownVariable { span, .. } | Self::ValuelessVariable { span, .. } => {
                Some(span.clone())
            }
            Self::Template { .. } | Self::CompleteSections { .. } => None,
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
                reference,
                variable_owner,
                ..
            } => Some(format!(
                "variable `{reference}`{} has no value for this assembly; \
                 drop `<<{reference}>>`, or {ESCAPE_HINT}",
                registered_by(variable_owner)
            )),
            Self::Template { .. } => None,
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
    let names: Vec<String> = registered.iter().map(|name| format!("`{name}`")).collect();
    format!("registered variables: {}", names.join(", "))
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    suggestion
        .as_ref()
        .map(|name| format!(" (did you mean `<<{name}>>`?)"))
        .unwrap_or_default()
}
