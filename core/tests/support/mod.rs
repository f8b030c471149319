//! What the integration tests of `dsh-system-prompt` read out of an
//! assembly, as plain values to compare, and how they build one by hand.
#![allow(
    dead_code,
    reason = "each test binary that shares this module uses part of it"
)]

use dsh_system_prompt::{AssembledSection, PromptAssembly};

/// One section as plain values: name, order, text, bound tool.
pub(crate) type SectionRow = (String, i32, String, Option<String>);

/// One variable as plain values: name, value.
pub(crate) type VariableRow = (String, Option<String>);

/// The sections of `assembly`, in render order.
pub(crate) fn section_rows(assembly: &PromptAssembly) -> Vec<SectionRow> {
    assembly
        .sections
        .iter()
        .map(|section| {
            (
                section.name().to_string(),
                section.order(),
                section.text().to_string(),
                section.tool().map(ToString::to_string),
            )
        })
        .collect()
}

/// The variables of `assembly`, by name.
pub(crate) fn variable_rows(assembly: &PromptAssembly) -> Vec<VariableRow> {
    assembly
        .variables
        .iter()
        .map(|variable| (variable.name.to_owned(), variable.value.map(str::to_owned)))
        .collect()
}

/// An assembly of the given `(name, text)` sections, in that order, with
/// the given variables. Each section's owner is the caller's line.
#[track_caller]
pub(crate) fn assembly(
    sections: &[(&str, &str)],
    variables: &[(&str, Option<&str>)],
) -> PromptAssembly {
    let mut assembly = PromptAssembly::new();
    for (order, (name, text)) in sections.iter().enumerate() {
        assembly.sections.insert(AssembledSection::new(
            name.to_string(),
            order as i32,
            text.to_string(),
        ));
    }
    for (name, value) in variables {
        assembly
            .variables
            .set(name.to_string(), value.map(str::to_owned));
    }
    assembly
}
