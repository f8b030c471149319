//! `render_prompt`: the one composition path from assembly to prompt text;
//! `check_prompt`: every problem a render would meet, found the same way.
//!
//! Two modules below this one render too, and nothing outside them does:
//! [`plan`] compiles a registry state's sections into literal runs and
//! variable indices (the fast path), and [`check`] collects every problem
//! of a failing render. Errors of all three are built by one function a
//! kind, in [`check`], so the first problem `check_prompt` finds is the
//! error `render_prompt` returns.

mod check;
pub(crate) mod plan;

use std::ops::Range;

use dsh_prompt_template::{Reference, Template};

use crate::{AssembledSection, Owner, PromptAssembly, RenderError, Text};
use plan::{RenderPlan, Step};

pub use check::check_prompt;

/// The blank line between two sections.
pub(crate) const SEPARATOR: &str = "\n\n";

/// The owner of the bytes of a rendered prompt that belong to no section:
/// the separators [`render_prompt`] puts between sections. For front ends
/// that attribute every byte of a prompt to its owner.
pub const SEPARATOR_OWNER: Owner = Owner {
    krate: Text::from_static(env!("CARGO_PKG_NAME")),
    item: Text::from_static("dsh_system_prompt::render_prompt"),
    file: Text::from_static(file!()),
    line: line!(),
};

/// Renders an assembly into the full system prompt.
///
/// Each section is interpolated strictly — an unknown reference, a
/// reference to a valueless variable, or malformed syntax is an error, never
/// a silently wrong prompt. Sections bound to a tool that is not in the
/// assembly are skipped; sections that are empty after interpolation are
/// dropped (nothing is trimmed); the rest are joined by one blank line.
///
/// ```
/// use dsh_system_prompt::{AssembleContext, PromptSection, SystemPrompt, render_prompt};
///
/// let prompt = SystemPrompt::empty();
/// let _model = prompt.variable("model", |_| Some("gpt-5".to_owned()))?;
/// let _persona = prompt.section(PromptSection::new("agent:persona", 0, "You are <<model>>."))?;
/// let assembly = prompt.assemble(&AssembleContext::default());
/// assert_eq!(render_prompt(&assembly)?, "You are gpt-5.");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn render_prompt(assembly: &PromptAssembly) -> Result<String, RenderError> {
    if let Some(plan) = RenderPlan::of(assembly)
        && let Some(rendered) = plan.render_or_recall(assembly, || render_planned(assembly, plan))
    {
        return rendered;
    }
    render(assembly, |_, _| {})
}

/// Renders along the registry's compiled plan. `None` when a fused section
/// references a valueless variable: the general path then reports it,
/// exactly as it would have without a plan.
fn render_planned(
    assembly: &PromptAssembly,
    plan: &RenderPlan,
) -> Option<Result<String, RenderError>> {
    let sections = &*assembly.sections;
    let literals = plan.literals();
    let mut capacity = literals.len() + literals.len() / 8;
    for &at in plan.general() {
        capacity += sections[at].text().len() + SEPARATOR.len();
    }
    let mut out = String::with_capacity(capacity);
    let mut copied = 0;
    for step in plan.steps() {
        match *step {
            Step::Literal(end) => {
                out.push_str(&literals[copied..end]);
                copied = end;
            }
            Step::Value(at) => out.push_str(assembly.variables.value_at(at)?),
            Step::Run => {
                if !out.is_empty() {
                    out.push_str(SEPARATOR);
                }
            }
            Step::Section(at) => {
                if let Err(error) = render_section(assembly, &sections[at], &mut out, |_, _| {}) {
                    return Some(Err(error));
                }
            }
        }
    }
    Some(Ok(out))
}

/// Renders an assembly's runtime contexts: each interpolated strictly, like
/// a section (errors name the context: "context `todo`"), those bound to
/// a tool not in the assembly skipped, empty ones dropped, the rest joined
/// by a blank line. Empty when there is nothing to say.
///
/// This is not part of the system prompt: the agent loop sends it as its
/// own message at the conversation's tail, when it changes.
///
/// ```
/// use dsh_system_prompt::{AssembleContext, PromptSection, SystemPrompt, render_context, render_prompt};
///
/// let prompt = SystemPrompt::empty();
/// let _persona = prompt.section(PromptSection::new("agent:persona", 0, "You are a coder."))?;
/// let _todo = prompt.context(PromptSection::provided("todo", 10, |_| "1. [>] Fix the bug".to_owned()))?;
/// let assembly = prompt.assemble(&AssembleContext::default());
/// assert_eq!(render_prompt(&assembly)?, "You are a coder.");
/// assert_eq!(render_context(&assembly)?, "1. [>] Fix the bug");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn render_context(assembly: &PromptAssembly) -> Result<String, RenderError> {
    let mut out = String::new();
    for context in &assembly.contexts {
        render_section(assembly, context, &mut out, |_, _| {})?;
    }
    Ok(out)
}

/// The rendered prompt with each section's byte range, so callers can
/// attribute bytes (and tokens) to owners.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedPrompt {
    /// The full system prompt, as [`render_prompt`] returns it.
    pub text: String,
    /// The sections that rendered, in order, without the separators.
    pub sections: Vec<RenderedSection>,
}

/// Where one section landed in a [`RenderedPrompt`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedSection {
    /// The section's name.
    pub name: Text,
    /// Who contributed it.
    pub owner: Owner,
    /// Its bytes in [`RenderedPrompt::text`].
    pub range: Range<usize>,
}

/// Renders like [`render_prompt`], and also returns each rendered
/// section's byte range.
pub fn render_prompt_with_spans(assembly: &PromptAssembly) -> Result<RenderedPrompt, RenderError> {
    let mut sections = Vec::with_capacity(assembly.sections.len());
    let text = render(assembly, |section, range| {
        sections.push(RenderedSection {
            name: section.name().clone(),
            owner: section.owner().clone(),
            range,
        });
    })?;
    Ok(RenderedPrompt { text, sections })
}

fn render(
    assembly: &PromptAssembly,
    mut rendered: impl FnMut(&AssembledSection, Range<usize>),
) -> Result<String, RenderError> {
    let sections = &*assembly.sections;
    if let Some(error) = check::complete_conflict(assembly) {
        return Err(error);
    }
    // Values usually make the prompt longer than its texts; reserve for the
    // texts and some growth so most prompts need a single allocation.
    let texts: usize = sections.iter().map(|section| section.text().len()).sum();
    let mut out = String::with_capacity(texts + texts / 8 + SEPARATOR.len() * sections.len());

    for section in sections {
        render_section(assembly, section, &mut out, &mut rendered)?;
    }
    Ok(out)
}

/// Whether a section shows in an assembly's prompt: it is bound to no tool,
/// or to one the assembly has.
pub(crate) fn shows(assembly: &PromptAssembly, section: &AssembledSection) -> bool {
    section.tool().is_none_or(|tool| assembly.has_tool(tool))
}

/// Appends one section, with its separator, unless it is bound to a tool
/// that is not in the assembly or is empty after interpolation.
fn render_section(
    assembly: &PromptAssembly,
    section: &AssembledSection,
    out: &mut String,
    mut rendered: impl FnMut(&AssembledSection, Range<usize>),
) -> Result<(), RenderError> {
    if !shows(assembly, section) {
        return Ok(());
    }
    let before = out.len();
    if before > 0 {
        out.push_str(SEPARATOR);
    }
    let start = out.len();
    interpolate(assembly, section, out)?;
    if out.len() == start {
        // Empty after interpolation: drop it, and its separator.
        out.truncate(before);
    } else {
        rendered(section, start..out.len());
    }
    Ok(())
}

fn interpolate(
    assembly: &PromptAssembly,
    section: &AssembledSection,
    out: &mut String,
) -> Result<(), RenderError> {
    let text = section.text().as_str();
    let lookup = |reference: &Reference<'_>| lookup(assembly, section, reference);
    match section.template() {
        Some(template) => template.render_into(text, out, lookup),
        None => {
            let template =
                Template::parse(text).map_err(|errors| check::syntax_error(section, errors))?;
            template.render_into(text, out, lookup)
        }
    }
}

/// The value of a reference, or the error that names what is wrong with
/// it: the lookup of the render and of [`check_prompt`] alike.
fn lookup<'a>(
    assembly: &'a PromptAssembly,
    section: &AssembledSection,
    reference: &Reference<'_>,
) -> Result<&'a str, RenderError> {
    match assembly.variables.get(reference.name) {
        Some(Some(value)) => Ok(value),
        _ => Err(check::reference_error(assembly, section, reference)),
    }
}
