//! `PromptTokens`: what an agent sends before any message, in tokens —
//! each section of its system prompt, the separators, each tool schema.
//!
//! Counted only when a command asks (`dsh prompt --format explain|json`,
//! `dsh check` for an agent with `max_prompt_tokens`), never while
//! assembling or rendering. The prompt is encoded once, whole, and each
//! token is the section's it starts in
//! ([`Tokenizer::count_ranges`]), so the sections and separators add up to
//! the prompt's count; each tool schema is its canonical JSON
//! ([`canonical_request::tool_json`]), counted alone.

use std::collections::HashMap;
use std::sync::Arc;

use dsh_agent_loop::Tokenizer;
use dsh_system_prompt::ToolSchema;
use dsh_system_prompt::inspect::RenderedPrompt;
use serde::Serialize;

use crate::measure::canonical_request;

/// The tokens of one agent's system prompt and tool schemas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptTokens {
    /// The tokenizer they were counted with.
    pub tokenizer: Tokenizer,
    /// Each rendered section's, in the prompt's order.
    pub sections: Vec<usize>,
    /// The blank lines between sections (what starts outside every
    /// section).
    pub separators: usize,
    /// The whole system prompt's.
    pub system: usize,
    /// Each tool schema's, in the assembly's order.
    pub tools: Vec<usize>,
}

/// A size in bytes and tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Size {
    /// Bytes.
    pub bytes: usize,
    /// Tokens.
    pub tokens: usize,
}

/// One part of [`PromptTokens::largest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part<'a> {
    /// A section of the system prompt, by name.
    Section(&'a str),
    /// A tool's schema, by the tool's name.
    ToolSchema(&'a str),
}

impl PromptTokens {
    /// Counts `prompt` and `tools` with `tokenizer`.
    pub fn count(tokenizer: Tokenizer, prompt: &RenderedPrompt, tools: &[Arc<ToolSchema>]) -> Self {
        let counts = tokenizer.count_sections(prompt);
        Self {
            tokenizer,
            separators: counts.outside(),
            system: counts.total,
            sections: counts.in_ranges,
            tools: tools
                .iter()
                .map(|tool| tokenizer.count(&canonical_request::tool_json(tool)))
                .collect(),
        }
    }

    /// The bytes and tokens of section `name` in `prompt` (the prompt
    /// these tokens counted), when it rendered.
    pub fn section_size(&self, prompt: &RenderedPrompt, name: &str) -> Option<Size> {
        let at = (prompt.sections.iter()).position(|section| section.name == name)?;
        Some(Size {
            bytes: prompt.sections[at].range.len(),
            tokens: *self.sections.get(at)?,
        })
    }

    /// The bytes and tokens of every section of `prompt` that rendered,
    /// by name: for a report of every section, where asking
    /// [`section_size`](Self::section_size) for each would search the
    /// prompt each time.
    pub fn section_sizes<'p>(&self, prompt: &'p RenderedPrompt) -> HashMap<&'p str, Size> {
        let mut sizes = HashMap::with_capacity(prompt.sections.len());
        for (section, tokens) in prompt.sections.iter().zip(&self.sections) {
            let size = Size {
                bytes: section.range.len(),
                tokens: *tokens,
            };
            // The first of a name, as `section_size` finds it.
            sizes.entry(section.name.as_ref()).or_insert(size);
        }
        sizes
    }

    /// All the tool schemas'.
    pub fn tools_total(&self) -> usize {
        self.tools.iter().sum()
    }

    /// The system prompt's and the tool schemas' together: what the agent
    /// sends before any message.
    pub fn total(&self) -> usize {
        self.system + self.tools_total()
    }

    /// The `n` largest sections and tool schemas, largest first (of equal
    /// ones, the earlier): what to shorten first.
    pub fn largest<'a>(
        &self,
        prompt: &'a RenderedPrompt,
        tools: &'a [Arc<ToolSchema>],
        n: usize,
    ) -> Vec<(Part<'a>, usize)> {
        let sections = prompt
            .sections
            .iter()
            .zip(&self.sections)
            .map(|(section, tokens)| (Part::Section(&section.name), *tokens));
        let tools = tools
            .iter()
            .zip(&self.tools)
            .map(|(tool, tokens)| (Part::ToolSchema(tool.name.as_str()), *tokens));
        let mut parts: Vec<_> = sections.chain(tools).collect();
        // Stable: equal parts keep the prompt's order.
        parts.sort_by_key(|(_, tokens)| std::cmp::Reverse(*tokens));
        parts.truncate(n);
        parts
    }
}

#[cfg(test)]
mod tests {
    use dsh_system_prompt::{
        AssembleContext, PromptSection, SystemPrompt, inspect::render_prompt_with_spans,
    };

    use super::*;

    #[test]
    fn the_parts_add_up_to_the_whole() -> Result<(), Box<dyn std::error::Error>> {
        let prompt = SystemPrompt::empty();
        let _a = prompt.section(PromptSection::new("a", 0, "You are a careful agent."))?;
        let _b = prompt.section(PromptSection::new(
            "b",
            1,
            "Check the `[exit code: N]` marker on every result.",
        ))?;
        let tool = Arc::new(ToolSchema::new(
            "read",
            "Reads a file.",
            serde_json::json!({"type": "object"}),
        ));
        let _tools = prompt.tools("tools", {
            let tool = Arc::clone(&tool);
            move |_| vec![Arc::clone(&tool)]
        })?;
        let assembly = prompt.assemble(&AssembleContext::default());
        let rendered = render_prompt_with_spans(&assembly)?;
        let tokenizer = Tokenizer::for_model("gpt-5");
        let tokens = PromptTokens::count(tokenizer, &rendered, &assembly.tools);

        assert_eq!(tokens.system, tokenizer.count(&rendered.text));
        assert_eq!(
            tokens.sections.iter().sum::<usize>() + tokens.separators,
            tokens.system
        );
        assert_eq!(
            tokens.tools,
            [tokenizer.count(&canonical_request::tool_json(&tool))]
        );
        assert_eq!(tokens.total(), tokens.system + tokens.tools[0]);
        let largest = tokens.largest(&rendered, &assembly.tools, 2);
        assert_eq!(largest.len(), 2);
        assert!(largest[0].1 >= largest[1].1);
        assert_eq!(largest[0], (Part::ToolSchema("read"), tokens.tools[0]));
        Ok(())
    }
}
