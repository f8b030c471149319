//! What the integration tests of `dsh-system-prompt` read out of an
//! assembly, as plain values to compare.

use dsh_system_prompt::PromptAssembly;

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
