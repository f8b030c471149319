//! The assembly's parts outside its sections and tools: its variables,
//! with their values and owners, and its runtime contexts, with what
//! each renders to now.

use dsh_system_prompt::{PromptAssembly, render_context};

use super::sections::OwnerName;

/// One variable of the assembly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariableRow {
    /// Its name.
    pub name: String,
    /// Its value for this assembly; `None` when it has none.
    pub value: Option<String>,
    /// Who registered it, when known.
    pub owner: Option<OwnerName>,
}

/// One runtime context: not part of the system prompt, sent as a
/// message at the conversation's tail when it changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextRow {
    /// Its order among the contexts.
    pub order: i32,
    /// Its name (`todo`).
    pub name: String,
    /// The tool it is bound to, if any.
    pub tool: Option<String>,
    /// Who owns it.
    pub owner: OwnerName,
    /// The bytes it renders to now, in a fresh session (where the todo
    /// list is still empty); `None` when it does not render.
    pub bytes_now: Option<usize>,
}

/// Every variable of `assembly`, in its order.
pub(super) fn variable_rows(assembly: &PromptAssembly) -> Vec<VariableRow> {
    (assembly.variables.iter())
        .map(|variable| VariableRow {
            name: variable.name.to_owned(),
            value: variable.value.map(str::to_owned),
            owner: variable.owner.map(OwnerName::from),
        })
        .collect()
}

/// Every runtime context of `assembly`, each rendered alone.
pub(super) fn context_rows(assembly: &PromptAssembly) -> Vec<ContextRow> {
    (assembly.contexts.iter())
        .map(|context| {
            let mut alone = assembly.clone();
            alone.contexts = vec![context.clone()];
            ContextRow {
                order: context.order(),
                name: context.name().to_string(),
                tool: context.tool().map(ToString::to_string),
                owner: OwnerName::from(context.owner()),
                bytes_now: render_context(&alone).ok().map(|text| text.len()),
            }
        })
        .collect()
}
