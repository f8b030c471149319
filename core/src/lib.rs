//! System-prompt assembly for LLM agents, where every fact in the prompt has
//! exactly one owner.
//!
//! Contributors register into one [`SystemPrompt`] registry: ordered
//! [sections](PromptSection) of text, named [variables](SystemPrompt::variable)
//! referenced from section text as `<<name>>`, [tool schemas](ToolSchema),
//! and listeners. Once per step, the agent loop calls
//! [`assemble`](SystemPrompt::assemble) with an [`AssembleContext`] that says
//! whom the prompt is for, and [`render_prompt`] turns the resulting
//! [`PromptAssembly`] into the full system prompt. There is no other
//! composition path.
//!
//! ```
//! use dsh_system_prompt::{AssembleContext, PromptSection, SystemPrompt, ToolSchema, render_prompt};
//! use std::sync::Arc;
//!
//! let prompt = SystemPrompt::empty();
//! let _model = prompt.variable("model", |_| Some("gpt-5".into()))?;
//! let _persona = prompt.section(PromptSection::new("agent:persona", 0, "You are a coding agent running <<model>>."))?;
//! let _habit = prompt.section(
//!     PromptSection::new("tool:bash", 105, "Check the `[exit code: N]` marker of every result.")
//!         .bound_to_tool("bash"),
//! )?;
//! let bash = Arc::new(ToolSchema::new("bash", "Runs a command.", serde_json::json!({"type": "object"})));
//! let _tools = prompt.tools("tools", move |_| vec![bash.clone()])?;
//!
//! let assembly = prompt.assemble(&AssembleContext::default());
//! assert_eq!(
//!     render_prompt(&assembly)?,
//!     "You are a coding agent running gpt-5.\n\nCheck the `[exit code: N]` marker of every result."
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Static contributions
//!
//! Tool crates declare their contributions as items, checked at build time:
//!
//! ```
//! use dsh_system_prompt::{AssembleContext, prompt_section, prompt_variable};
//!
//! #[prompt_variable]
//! fn shell(_cx: &AssembleContext) -> Option<String> {
//!     Some("bash".to_owned())
//! }
//!
//! #[prompt_section(name = "example:shell", order = 110)]
//! const SHELL_HABIT: &str = "Commands run in <<shell>>.";
//! # fn main() {}
//! ```
//!
//! [`SystemPrompt::new`] installs every static contribution of the linked
//! crates, sorted by `(order, name)` whatever the link order.
//!
//! What the build checks: attribute arguments, `order` in `i32`, section
//! and variable names, item kinds and signatures, the syntax of every
//! template literal (all errors at once, with line:column), that every
//! `<<name>>` in a literal resolves by Rust name resolution to a
//! `#[prompt_variable]` in scope (a variable of another crate is imported
//! with `use owner_crate::name;`), and duplicate names within one crate.
//!
//! What remains for run time, because stable Rust cannot see it at build
//! time:
//!
//! - **Duplicates across crates.** Each crate is compiled on its own; no
//!   compilation sees every crate's names. `SystemPrompt::new` checks them,
//!   and fails with both declarations' crates and file:line.
//! - **References in text produced at run time** — personas from config,
//!   `fn` sections, `prompt_template!` text. Their values do not exist at
//!   build time; [`render_prompt`] checks them strictly.
//! - **Linking.** `inventory` only sees crates the final binary links. A
//!   crate whose only contributions are static is never referenced by name,
//!   so write `use some_tool_crate as _;` in the binary to link it.
#![deny(missing_docs)]

mod assembly;
mod context;
mod error;
pub mod inspect;
mod registry;
mod render;
mod scope;
mod section;
mod sentences;
mod statics;
pub mod suggestion;
mod text;
mod tool_order;

/// The examples of the macros' documentation (`dsh-system-prompt-macros`,
/// `src/examples/`), doc-tested here: the macro crate cannot test them
/// without this facade as a dev-dependency, which a proc-macro crate builds
/// a second time, for the host. Test names: `macro_examples::<Macro>`.
#[cfg(doctest)]
mod macro_examples {
    #[doc = include_str!("../../macros/src/examples/prompt_section.md")]
    struct PromptSection;
    #[doc = include_str!("../../macros/src/examples/prompt_context.md")]
    struct PromptContext;
    #[doc = include_str!("../../macros/src/examples/prompt_variable.md")]
    struct PromptVariable;
    #[doc = include_str!("../../macros/src/examples/prompt_template.md")]
    struct PromptTemplate;
}

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

pub use assembly::{AssembledSection, PartKind, PromptAssembly, Sections, Variable, Variables};
pub use context::{AssembleContext, Extensions};
pub use dsh_prompt_template as template;
pub use dsh_system_prompt_macros::{
    prompt_context, prompt_section, prompt_template, prompt_variable,
};
pub use error::{
    BoxError, NameKind, ReferenceSite, RegistryError, RenderError, RenderErrors, TemplateProblem,
};
pub use registry::{ChangeAction, ChangeEvent, Contribution, Registration, SystemPrompt};
pub use render::{render_context, render_prompt};
pub use scope::{Scope, ScopeId};
pub use section::{Owner, PromptSection, SectionText, TextProvider, ToolSchema};
pub use sentences::{MIN_SENTENCE_WORDS, RepeatedSentence, repeated_sentences};
pub use text::Text;
pub use tool_order::{ToolOrder, ToolOrderError, UNLISTED_TOOLS};
