//! Inspection, for front ends that explain a prompt: where each section
//! comes from ([`section_origins`]), and where each rendered section
//! landed in the prompt ([`render_prompt_with_spans`]), so every byte (and
//! token) can be attributed to its owner, the separators to
//! [`SEPARATOR_OWNER`].
//!
//! An agent needs none of it: [`render_prompt`](crate::render_prompt) is
//! the prompt.
//!
//! ```
//! use dsh_system_prompt::inspect::{render_prompt_with_spans, section_origins};
//! use dsh_system_prompt::{AssembleContext, PromptSection, Scope, SystemPrompt};
//!
//! let prompt = SystemPrompt::empty();
//! let _a = prompt.section(PromptSection::new("a", 0, "First."))?;
//! let _b = prompt.section(PromptSection::new("b", 1, "Second."))?;
//! let rendered = render_prompt_with_spans(&prompt.assemble(&AssembleContext::default()))?;
//! assert_eq!(&rendered.text[rendered.sections[1].range.clone()], "Second.");
//! let origins = section_origins(&prompt, &Scope::global());
//! assert_eq!(origins[0].layer, None);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use crate::render::{
    RenderedPrompt, RenderedSection, SEPARATOR_OWNER, render_prompt_with_spans,
};

pub use crate::section::SectionOrigin;
use crate::{Scope, SystemPrompt};

/// Where each section of the assemblies of `scope` comes from — its
/// layer, and the sections of outer layers it shadows — in render order,
/// before any waterfall listener runs. For front ends that explain a
/// prompt, and for code that shadows a section keeping its order and tool.
pub fn section_origins(prompt: &SystemPrompt, scope: &Scope) -> Vec<SectionOrigin> {
    prompt.section_origins(scope)
}
