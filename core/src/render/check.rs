//! `check_prompt`: every problem of every section, where a render stops at
//! the first.

use dsh_prompt_template::{ParseErrors, Reference, Template, position_of};

use crate::render::lookup;
use crate::{AssembledSection, PromptAssembly, RenderError, RenderErrors, closest};

/// Checks everything [`render_prompt`](crate::render_prompt) checks, and
/// reports every problem instead of the first: every syntax error and
/// every unknown or valueless reference of every section that would
/// render, each naming its section, its owner and its place in the
/// section's text, with the suggestion a typo deserves.
///
/// The errors come in render order, a section's syntax errors before its
/// references, and the runtime contexts' after the sections'; the first
/// is the error `render_prompt` returns (or, when only contexts have
/// problems, the one [`render_context`](crate::render_context) returns). A section
/// bound to a tool that is not in the assembly is not checked: it is not
/// rendered. A malformed section's references are still checked, as if its
/// malformed parts were plain text.
///
/// Nothing is rendered, so checking a good assembly costs a lookup per
/// reference; call it when a render has failed, or to validate ahead of
/// time.
///
/// ```
/// use dsh_system_prompt::{AssembleContext, PromptSection, RenderError, SystemPrompt, check_prompt};
///
/// let prompt = SystemPrompt::empty();
/// let _model = prompt.variable("model", |_| Some("gpt-5".to_owned()))?;
/// let _persona = prompt.section(PromptSection::provided("agent:persona", 0, |_| {
///     "You are <<modle>> in <<cwd>>.".to_owned()
/// }))?;
/// let errors = check_prompt(&prompt.assemble(&AssembleContext::default())).unwrap_err();
/// let spans: Vec<_> = errors.iter().map(|error| error.span()).collect();
/// assert_eq!(spans, [Some(8..17), Some(21..28)]);
/// assert!(matches!(
///     errors.first(),
///     RenderError::UnknownVariable { suggestion: Some(name), .. } if name == "model"
/// ));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn check_prompt(assembly: &PromptAssembly) -> Result<(), RenderErrors> {
    let mut errors: Vec<RenderError> = complete_conflict(assembly).into_iter().collect();
    for section in assembly.sections.iter().chain(&assembly.contexts) {
        if let Some(tool) = section.tool()
            && !assembly.has_tool(tool)
        {
            continue;
        }
        let text = section.text().as_str();
        let parsed;
        let template = match section.template() {
            Some(template) => template,
            None => {
                let (template, syntax) = Template::parse_recovering(text);
                if let Some(syntax) = syntax {
                    errors.push(syntax_error(section, syntax));
                }
                parsed = template;
                &parsed
            }
        };
        for reference in template.references(text) {
            if let Err(error) = lookup(assembly, section, &reference) {
                errors.push(error);
            }
        }
    }
    RenderErrors::new(errors).map_or(Ok(()), Err)
}

/// The error of an assembly that shows two complete sections, which
/// cannot both be the whole prompt; `None` for any other. A complete
/// section bound to a tool the assembly lacks does not show, and one with
/// no text is not active, so neither is counted.
pub(super) fn complete_conflict(assembly: &PromptAssembly) -> Option<RenderError> {
    let mut complete = (assembly.sections.iter()).filter(|section| {
        section.is_complete() && !section.text().is_empty() && super::shows(assembly, section)
    });
    let (first, second) = (complete.next()?, complete.next()?);
    Some(RenderError::CompleteSections {
        section: first.name().to_string(),
        owner: first.owner().clone(),
        other: second.name().to_string(),
        other_owner: second.owner().clone(),
    })
}

/// The error of a section whose text is malformed.
#[cold]
pub(super) fn syntax_error(section: &AssembledSection, errors: ParseErrors) -> RenderError {
    RenderError::Template {
        kind: section.kind(),
        section: section.name().to_string(),
        owner: section.owner().clone(),
        errors,
    }
}

/// The error of a reference that has no value: unknown, or registered and
/// valueless for this assembly.
#[cold]
pub(super) fn reference_error(
    assembly: &PromptAssembly,
    section: &AssembledSection,
    reference: &Reference<'_>,
) -> RenderError {
    let position = position_of(section.text(), reference.offset);
    // `<<` + name + `>>`.
    let span = reference.offset..reference.offset + reference.name.len() + 4;
    let section_name = section.name().to_string();
    let owner = section.owner().clone();
    if assembly.variables.contains(reference.name) {
        return RenderError::ValuelessVariable {
            kind: section.kind(),
            section: section_name,
            owner,
            reference: reference.name.to_owned(),
            position,
            span,
            variable_owner: assembly.variables.owner(reference.name).cloned(),
        };
    }
    let mut registered: Vec<String> = assembly.variables.names().map(str::to_owned).collect();
    registered.sort_unstable();
    RenderError::UnknownVariable {
        kind: section.kind(),
        section: section_name,
        owner,
        reference: reference.name.to_owned(),
        position,
        span,
        suggestion: closest(reference.name, &registered).cloned(),
        registered,
    }
}
