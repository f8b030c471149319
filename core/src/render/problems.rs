//! Every problem of a part, found once a render has failed: where the
//! render stops at a part's first problem, this reads the whole part.

use dsh_prompt_template::{ParseErrors, Position, Positions, Reference, Template, position_of};

use crate::render::shows;
use crate::suggestion::closest;
use crate::{AssembledSection, PromptAssembly, ReferenceSite, RenderError, TemplateProblem};

/// Appends every problem of `part` to `errors`: its syntax errors, then
/// each unknown or valueless reference in the order they appear (in a
/// malformed text, as if its malformed parts were plain text). A part
/// that does not show has none: it is not rendered.
#[cold]
pub(super) fn of_part(
    assembly: &PromptAssembly,
    part: &AssembledSection,
    errors: &mut Vec<RenderError>,
) {
    if !shows(assembly, part) {
        return;
    }
    let text = part.text().as_str();
    let parsed;
    let template = match part.template() {
        Some(template) => template,
        None => {
            let (template, syntax) = Template::parse_recovering(text);
            if let Some(syntax) = syntax {
                errors.push(syntax_error(part, syntax));
            }
            parsed = template;
            &parsed
        }
    };
    // References come in order: their positions cost one pass over the
    // text, however many are wrong (a position each from the start was
    // quadratic: 16,000 bad references took minutes).
    let mut positions = Positions::new(text);
    for reference in template.references(text) {
        if !matches!(assembly.variables.get(reference.name), Some(Some(_))) {
            let position = positions.at(reference.offset);
            errors.push(reference_error_at(assembly, part, &reference, position));
        }
    }
}

/// The error of an assembly that shows two complete sections, which
/// cannot both be the whole prompt; `None` for any other. A complete
/// section bound to a tool the assembly lacks does not show, and one with
/// no text is not active, so neither is counted.
pub(super) fn complete_conflict(assembly: &PromptAssembly) -> Option<RenderError> {
    let mut complete = (assembly.sections.iter()).filter(|section| {
        section.is_complete() && !section.text().is_empty() && shows(assembly, section)
    });
    let (first, second) = (complete.next()?, complete.next()?);
    Some(RenderError::CompleteSections {
        section: first.name().to_string(),
        owner: Box::new(first.owner().clone()),
        other: second.name().to_string(),
        other_owner: Box::new(second.owner().clone()),
    })
}

/// The error of a section whose text is malformed.
#[cold]
pub(super) fn syntax_error(section: &AssembledSection, errors: ParseErrors) -> RenderError {
    RenderError::Template(TemplateProblem::new(
        section.kind(),
        section.name().to_string(),
        section.owner().clone(),
        errors,
    ))
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
    reference_error_at(assembly, section, reference, position)
}

/// [`reference_error`], its position known.
#[cold]
fn reference_error_at(
    assembly: &PromptAssembly,
    section: &AssembledSection,
    reference: &Reference<'_>,
    position: Position,
) -> RenderError {
    let site = Box::new(ReferenceSite {
        kind: section.kind(),
        section: section.name().to_string(),
        owner: section.owner().clone(),
        reference: reference.name.to_owned(),
        position,
        // `<<` + name + `>>`.
        span: reference.offset..reference.offset + reference.name.len() + 4,
    });
    if assembly.variables.contains(reference.name) {
        return RenderError::ValuelessVariable {
            site,
            variable_owner: assembly.variables.owner(reference.name).cloned(),
        };
    }
    let mut registered: Vec<String> = assembly.variables.names().map(str::to_owned).collect();
    registered.sort_unstable();
    RenderError::UnknownVariable {
        site,
        suggestion: closest(reference.name, &registered).cloned(),
        registered,
    }
}
