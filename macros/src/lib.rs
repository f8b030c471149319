//! The build-time DSL of `dsh-system-prompt`: `#[prompt_section]`,
//! `#[prompt_variable]` and `prompt_template!`.
//!
//! Use these macros through `dsh-system-prompt`, which re-exports them and
//! holds the registry their generated code targets; this crate is its
//! implementation detail.
//!
//! Each macro parses its input into a typed model (`ast.rs`, `attr.rs`),
//! validates it, collecting every mistake (`valid.rs`; `source.rs` quotes
//! the user's syntax in messages), and expands it (`expand.rs`, which never
//! fails). On a mistake the user's item is still
//! emitted, unchanged, beside the errors, so that one mistake gives one
//! error. The attributes' expansions can be recorded in a file
//! (`record.rs`), for the build benchmark.
#![deny(missing_docs)]

use proc_macro::TokenStream;

mod ast;
mod attr;
mod expand;
mod record;
mod source;
mod valid;

/// Declares a prompt section: a named, ordered piece of the system prompt,
/// installed by `SystemPrompt::new()`.
///
#[doc = include_str!("examples/prompt_section.md")]
///
/// Arguments: `order = N` (required, an `i32`; sections render in
/// ascending `(order, name)`), `name = "…"` (a section name, like
/// `tool:bash`), `tool = "…"` (the tool the section is bound to), and the
/// flag `complete` (the section is then the whole prompt, as
/// `PromptSection::complete` makes it; one complete section a crate, a
/// second fails to build).
///
/// The item is a `const` or `static` of type `&str`, or a
/// `fn(cx: &AssembleContext) -> String`. When the text is a string
/// literal, its template syntax is checked at build time, and each
/// `<<name>>` in it must resolve, by Rust name resolution, to a
/// `#[prompt_variable]` in scope (import one from another module or crate
/// with `use`). Two sections with the same explicit `name` in one crate
/// fail to build.
#[proc_macro_attribute]
pub fn prompt_section(args: TokenStream, item: TokenStream) -> TokenStream {
    part(attr::SECTION, args, item)
}

/// Declares a runtime context: a named, ordered part written exactly like
/// a [`prompt_section`] (same arguments but `complete`, same items, the
/// same build-time checks of its template and `<<name>>` references),
/// which is **not** part of the system prompt. `render_context` renders
/// the contexts of an assembly, and the agent loop sends that snapshot as
/// a message at the conversation's tail when it changes, so what changes
/// from step to step never breaks the provider's cache of the system
/// prompt.
///
#[doc = include_str!("examples/prompt_context.md")]
///
/// Two contexts with the same explicit `name` in one crate fail to build;
/// a context may share its name with a section.
#[proc_macro_attribute]
pub fn prompt_context(args: TokenStream, item: TokenStream) -> TokenStream {
    part(attr::CONTEXT, args, item)
}

/// `#[prompt_section]` and `#[prompt_context]`: one parse, one validation,
/// one expansion, named for `part`.
fn part(part: attr::Part, args: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let expansion = match ast::SectionInput::parse(args.into(), item.clone())
        .and_then(|input| input.validate(part))
    {
        Ok(section) => expand::section(item, &section, part),
        Err(error) => expand::rejected(item, &error),
    };
    record::expansion(expansion).into()
}

/// Declares a prompt variable, referenced from section text as `<<name>>`,
/// where `name` is the fn's name.
///
#[doc = include_str!("examples/prompt_variable.md")]
///
/// A variable is a Rust item: a section in another module or crate
/// references it after importing it (`use owner_crate::git_branch;`). Two
/// variables with the same name in one crate fail to build.
#[proc_macro_attribute]
pub fn prompt_variable(args: TokenStream, item: TokenStream) -> TokenStream {
    record::expansion(variable(args.into(), item.into())).into()
}

/// `#[prompt_variable]`: parse, validate, expand.
fn variable(
    args: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    let input = match ast::VariableInput::parse(args, item.clone()) {
        Ok(input) => input,
        Err(error) => return expand::rejected(item, &error),
    };
    match input.validate() {
        Ok(variable) => expand::variable(item, &variable),
        Err(error) => expand::rejected_variable(item, &input, &error),
    }
}

/// Checks the template syntax of a string literal at build time and
/// expands to that literal, a `&'static str`: for template text that is
/// put together at run time.
///
#[doc = include_str!("examples/prompt_template.md")]
///
/// Only the syntax is checked here; the references are checked when the
/// text is rendered.
#[proc_macro]
pub fn prompt_template(input: TokenStream) -> TokenStream {
    match valid::template(input.into()) {
        Ok(template) => expand::template(&template),
        Err((literal, error)) => expand::rejected_template(literal.as_ref(), &error),
    }
    .into()
}
