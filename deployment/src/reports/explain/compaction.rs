//! The compaction of an explanation: the agent's context budget, and
//! what the compaction request is told — the sections of an assembly
//! made for it, which never render into the agent's prompt.

use dsh_agent_loop::{ContextBudget, compaction_context};
use dsh_system_prompt::SystemPrompt;
use dsh_system_prompt::inspect::render_prompt_with_spans;

use super::sections::OwnerName;
use crate::measure::tokens::Size;

/// The agent's context budget and its compaction request's prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Compaction {
    /// The budget: the context window, and where the loop compacts.
    pub budget: ContextBudget,
    /// Each section of the compaction request's prompt, in its order;
    /// `None` when that prompt does not render.
    pub sections: Option<Vec<CompactionRow>>,
}

/// One section of the compaction request's prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionRow {
    /// Its order.
    pub order: i32,
    /// Its name (`compaction:instruction`).
    pub name: String,
    /// Who owns it.
    pub owner: OwnerName,
    /// Its bytes and tokens, counted with the budget's tokenizer.
    pub size: Size,
}

impl Compaction {
    /// Whether the loop compacts only when asked (`/compact`): no context
    /// window is known for the model.
    pub fn on_request_only(&self) -> bool {
        self.budget.window().is_none()
    }
}

/// `prompt`'s compaction request, under `budget`.
pub(super) fn compaction(prompt: &SystemPrompt, budget: ContextBudget) -> Compaction {
    let assembly = prompt.assemble(&compaction_context());
    let sections = render_prompt_with_spans(&assembly).ok().map(|rendered| {
        let tokenizer = budget.tokenizer();
        (rendered.sections.iter())
            .filter_map(|section| {
                let part = assembly.sections.get(&section.name)?;
                Some(CompactionRow {
                    order: part.order(),
                    name: section.name.to_string(),
                    owner: OwnerName::from(part.owner()),
                    size: Size {
                        bytes: section.range.len(),
                        tokens: (rendered.text.get(section.range.clone()))
                            .map_or(0, |text| tokenizer.count(text)),
                    },
                })
            })
            .collect()
    });
    Compaction { budget, sections }
}
