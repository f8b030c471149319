//! Assembling: one state, resolved for one caller, then the waterfall.

use std::sync::Arc;

use super::{Id, SystemPrompt, ToolProvider};
use crate::render::plan::RenderPlan;
use crate::{AssembleContext, Extensions, PromptAssembly, Sections, ToolSchema, Variables};

impl SystemPrompt {
    /// Assembles the prompt for one caller.
    ///
    /// Sections come in `(order, name)` order with their texts resolved
    /// against `cx` (not yet interpolated), every registered variable is
    /// resolved, tools are collected, then the waterfall listeners run. The
    /// result is an owned snapshot; [`render_prompt`](crate::render_prompt)
    /// turns it into text.
    pub fn assemble(&self, cx: &AssembleContext) -> PromptAssembly {
        let state = self.inner.state.load();
        let plan = state
            .plan
            .get_or_init(|| RenderPlan::compile(&state.assembled, &state.layout));
        let sections = if state.provided.is_empty() {
            Sections::compiled(Arc::clone(&state.assembled), Arc::clone(plan))
        } else {
            // Provided sections are not in the plan's fused runs: it renders
            // them from the sections it is given, with their new text. The
            // list is copied (each section a few reference counts: names,
            // owners and texts are `Text`), not the prose.
            let mut sections = Vec::clone(&state.assembled);
            for (at, provider) in &state.provided {
                sections[*at].set_text(provider(cx));
            }
            Sections::compiled(Arc::new(sections), Arc::clone(plan))
        };
        let values = state
            .variables
            .iter()
            .map(|entry| (entry.provider)(cx))
            .collect();
        let contexts = state
            .contexts
            .iter()
            .map(|entry| {
                let mut context = entry.section.clone();
                if let Some(provider) = &entry.provider {
                    context.set_text(provider(cx));
                }
                context
            })
            .collect();
        let mut assembly = PromptAssembly {
            sections,
            variables: Variables::with_layout(Arc::clone(&state.layout), values),
            tools: collect_tools(&state.tools, cx),
            contexts,
            extensions: Extensions::new(),
        };
        for (_, listener) in &state.assemble_listeners {
            if listener(cx, &mut assembly).is_break() {
                break;
            }
        }
        assembly
    }
}

/// Every provider's tools, in registration order. The first provider's
/// `Vec` is kept as it is: collecting through `flat_map` would allocate a
/// new vector and grow it step by step, on every assembly.
fn collect_tools(providers: &[(Id, ToolProvider)], cx: &AssembleContext) -> Vec<Arc<ToolSchema>> {
    let mut providers = providers.iter();
    let Some((_, first)) = providers.next() else {
        return Vec::new();
    };
    let mut tools = first(cx);
    for (_, provider) in providers {
        tools.extend(provider(cx));
    }
    tools
}
