//! Assembling: one state, resolved for one caller's scope, then the
//! waterfall, then the complete section and the tool order.

use std::sync::Arc;

use super::{SystemPrompt, ToolProvider};
use crate::render::plan::RenderPlan;
use crate::render::shows;
use crate::{
    AssembleContext, AssembledSection, Extensions, PromptAssembly, Sections, ToolSchema, Variables,
};

impl SystemPrompt {
    /// Assembles the prompt for one caller.
    ///
    /// The caller's [`Scope`](crate::Scope) picks, of each name, the
    /// contribution of the nearest layer. Sections come in `(order, name)`
    /// order with their texts resolved against `cx` (not yet
    /// interpolated), every variable is resolved, tools are collected, then
    /// the waterfall listeners run. When a complete section is active, it
    /// is then the only section. Last, the tools are placed by the nearest
    /// [`ToolOrder`](crate::ToolOrder) (by name without one). The result is an owned
    /// snapshot; [`render_prompt`](crate::render_prompt) turns it into
    /// text.
    pub fn assemble(&self, cx: &AssembleContext) -> PromptAssembly {
        let state = self.inner.state.load();
        let resolved = state.resolved(cx.scope());
        let plan = (resolved.sections.plan)
            .get_or_init(|| RenderPlan::compile(&resolved.sections.list, &resolved.layout));
        let sections = if resolved.provided.is_empty() {
            Sections::registry(Arc::clone(&resolved.sections))
        } else {
            // The plan renders provided sections the general way, from the
            // list it is given, so it still describes this copy. The list
            // is copied (each section a few reference counts: names,
            // owners and texts are `Text`), not the prose.
            let mut sections = resolved.sections.list.clone();
            for (at, provider) in &resolved.provided {
                sections[*at].set_text(provider(cx));
            }
            Sections::provided(sections, Arc::clone(plan))
        };
        // What a complete section is before the listeners could touch it.
        // (Here and for the contexts, an empty list is made directly:
        // collecting from nothing still calls `collect` and copies its
        // vector back through memory.)
        let mut complete: Vec<AssembledSection> = match resolved.complete.as_slice() {
            [] => Vec::new(),
            complete => complete.iter().map(|&at| sections[at].clone()).collect(),
        };
        let values = resolved
            .variables
            .iter()
            .map(|provider| provider(cx))
            .collect();
        let contexts = match resolved.contexts.as_slice() {
            [] => Vec::new(),
            contexts => contexts
                .iter()
                .map(|(context, provider)| {
                    let mut context = context.clone();
                    if let Some(provider) = provider {
                        context.set_text(provider(cx));
                    }
                    context
                })
                .collect(),
        };
        let mut assembly = PromptAssembly {
            sections,
            variables: Variables::with_layout(Arc::clone(&resolved.layout), values),
            tools: collect_tools(&resolved.tools, cx),
            contexts,
            extensions: Extensions::new(),
        };
        for listener in &resolved.listeners {
            if listener(cx, &mut assembly).is_break() {
                break;
            }
        }
        // A complete section bound to a tool the assembly lacks does not
        // show: it is not the prompt then (an empty prompt would be). Nor
        // is one whose provider has no text for this caller: a complete
        // section that speaks only to some callers (the compaction
        // request's instruction) leaves every other prompt alone.
        complete.retain(|section| shows(&assembly, section) && !section.text().is_empty());
        if !complete.is_empty() {
            *assembly.sections.to_mut() = complete;
        }
        resolved.tool_order.sort(&mut assembly.tools);
        assembly
    }
}

/// Every provider's tools, in registration order. The first provider's
/// `Vec` is kept as it is: collecting through `flat_map` would allocate a
/// new vector and grow it step by step, on every assembly.
fn collect_tools(providers: &[ToolProvider], cx: &AssembleContext) -> Vec<Arc<ToolSchema>> {
    let mut providers = providers.iter();
    let Some(first) = providers.next() else {
        return Vec::new();
    };
    let mut tools = first(cx);
    for provider in providers {
        tools.extend(provider(cx));
    }
    tools
}
