//! `render_prompt`: the one composition path from assembly to prompt text,
//! which fails with every problem of the prompt.
//!
//! A render writes parts until one fails; [`problems`] then reads that
//! part and every later one whole, so a failure reports every problem.
//! Errors are built by one function a kind, in [`problems`].
//!
//! [`render_prompt`] first tries the registry's [`plan`]: the state's
//! fixed sections compiled into literal runs and variable indices. What
//! the plan cannot render, it leaves to the general path, so every error
//! still comes from [`problems`]; `plan` states when a plan may render.

pub(crate) mod plan;
mod problems;

use std::ops::Range;

use dsh_prompt_template::{Reference, Template};

use crate::{AssembledSection, Owner, PromptAssembly, RenderError, RenderErrors, Text};
use plan::RenderPlan;

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
/// A prompt that cannot render fails with every problem ([`RenderErrors`]),
/// in render order: two complete sections first, then section by section
/// a section's syntax errors before its references, each naming its
/// section, its owner and its place in the section's text
/// ([`RenderError::span`]), with the suggestion a typo deserves. A
/// malformed section's references are checked too, as if its malformed
/// parts were plain text; a section bound to a tool that is not in the
/// assembly is not checked, since it does not render.
///
/// ```
/// use dsh_system_prompt::{AssembleContext, PromptSection, RenderError, SystemPrompt, render_prompt};
///
/// let prompt = SystemPrompt::empty();
/// let _model = prompt.variable("model", |_| Some("gpt-5".into()))?;
/// let _persona = prompt.section(PromptSection::provided("agent:persona", 0, |_| {
///     "You are <<modle>> in <<cwd>>.".to_owned()
/// }))?;
/// let errors = render_prompt(&prompt.assemble(&AssembleContext::default())).unwrap_err();
/// let spans: Vec<_> = errors.iter().map(|error| error.span()).collect();
/// assert_eq!(spans, [Some(8..17), Some(21..28)]);
/// assert!(matches!(
///     errors.first(),
///     RenderError::UnknownVariable { suggestion: Some(name), .. } if name == "model"
/// ));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// ```
/// use dsh_system_prompt::{AssembleContext, PromptSection, SystemPrompt, render_prompt};
///
/// let prompt = SystemPrompt::empty();
/// let _model = prompt.variable("model", |_| Some("gpt-5".into()))?;
/// let _persona = prompt.section(PromptSection::new("agent:persona", 0, "You are <<model>>."))?;
/// let assembly = prompt.assemble(&AssembleContext::default());
/// assert_eq!(render_prompt(&assembly)?, "You are gpt-5.");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn render_prompt(assembly: &PromptAssembly) -> Result<String, RenderErrors> {
    if let Some(prompt) = render_planned(assembly) {
        return Ok(prompt);
    }
    render(assembly, |_, _| {})
}

/// The plan that may render `assembly`, if any: the one its sections
/// carry, when its variables have the plan's layout (`plan` states the
/// invariant).
pub(crate) fn plan_of(assembly: &PromptAssembly) -> Option<&RenderPlan> {
    let plan = assembly.sections.plan()?;
    plan.indexes(&assembly.variables).then_some(plan)
}

/// Renders `assembly` along its plan; `None` when it has none, or when the
/// general path must render it instead: a failing section, or two complete
/// sections shown, which only the general path reports.
pub(crate) fn render_planned(assembly: &PromptAssembly) -> Option<String> {
    let plan = plan_of(assembly)?;
    if plan.may_show_two_complete() && problems::complete_conflict(assembly).is_some() {
        return None;
    }
    plan.render(&assembly.sections, &assembly.variables, |section, out| {
        render_section(assembly, section, out, |_, _| {}).ok()
    })
}

/// Renders an assembly's runtime contexts: each interpolated strictly, like
/// a section (errors name the context: "context `todo`"; a failure
/// reports every problem, as [`render_prompt`] does), those bound to a
/// tool not in the assembly skipped, empty ones dropped, the rest joined
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
pub fn render_context(assembly: &PromptAssembly) -> Result<String, RenderErrors> {
    render_parts(assembly, &assembly.contexts, Vec::new(), |_, _| {})
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
pub fn render_prompt_with_spans(assembly: &PromptAssembly) -> Result<RenderedPrompt, RenderErrors> {
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

/// Renders an assembly's sections, or finds every problem of them.
fn render(
    assembly: &PromptAssembly,
    rendered: impl FnMut(&AssembledSection, Range<usize>),
) -> Result<String, RenderErrors> {
    let conflict = problems::complete_conflict(assembly).into_iter().collect();
    render_parts(assembly, &assembly.sections, conflict, rendered)
}

/// Renders `parts` in order until one fails; from then on, nothing is
/// rendered and every problem of that part and of the parts after it is
/// collected, so a failure reports every problem, in render order, at no
/// cost to a render that succeeds. `errors` are problems found before any
/// part (two complete sections).
fn render_parts(
    assembly: &PromptAssembly,
    parts: &[AssembledSection],
    mut errors: Vec<RenderError>,
    mut rendered: impl FnMut(&AssembledSection, Range<usize>),
) -> Result<String, RenderErrors> {
    // Values usually make the prompt longer than its texts; reserve for the
    // texts and some growth so most prompts need a single allocation.
    let texts: usize = parts.iter().map(|part| part.text().len()).sum();
    let mut out = String::with_capacity(texts + texts / 8 + SEPARATOR.len() * parts.len());
    for part in parts {
        if errors.is_empty() && render_section(assembly, part, &mut out, &mut rendered).is_ok() {
            continue;
        }
        problems::of_part(assembly, part, &mut errors);
    }
    RenderErrors::new(errors).map_or(Ok(out), Err)
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
                Template::parse(text).map_err(|errors| problems::syntax_error(section, errors))?;
            template.render_into(text, out, lookup)
        }
    }
}

/// The value of a reference, or the error that names what is wrong with
/// it: the lookup of the render and of its report of every problem alike.
fn lookup<'a>(
    assembly: &'a PromptAssembly,
    section: &AssembledSection,
    reference: &Reference<'_>,
) -> Result<&'a str, RenderError> {
    match assembly.variables.get(reference.name) {
        Some(Some(value)) => Ok(value),
        _ => Err(problems::reference_error(assembly, section, reference)),
    }
}
