//! Expansion of validated input. Nothing here fails: every check is in
//! `valid.rs`.
//!
//! What the generated code looks like, and why:
//!
//! - The user's item first, exactly as written.
//! - Registration through `inventory::submit!`, which wraps it in
//!   `const _: () = { … };`, so no name leaks into the user's module; other
//!   support items are in `const _` blocks too. Paths are absolute, through
//!   the facade (`::dsh_system_prompt::__private`), so the user's imports
//!   cannot change their meaning and the user depends on one crate.
//! - A section's `<<name>>` checks are `assert_prompt_variable::<name>()`
//!   calls in the block of the submitted value, so they cost no constant of
//!   their own (build time is per item: see `benches/BUILD_RESULTS.md`).
//! - Tokens carry the call site's span, except where an error should land
//!   on the user's code (a `<<name>>` that does not resolve lands on the
//!   literal) and `line!()`, which takes the item's line.
//! - A section's value is one call of a `const fn` constructor with literal
//!   arguments, not the struct literal it returns: fewer tokens to build,
//!   carry across the compiler's bridge, parse and resolve, per section.
//! - A section with an explicit name, and every variable, also declares a
//!   hidden `#[macro_export]` macro named after it. Exported macros live in
//!   the crate root whatever module declares them, so a second declaration
//!   of the same name anywhere in the crate is rustc's E0428 ("defined
//!   multiple times"), at the name. A section declares it in the block of
//!   its submitted value, a variable in a `const _` block. A complete
//!   section declares one more, `__dsh_prompt_complete_section`: one
//!   complete section a crate.

use std::sync::OnceLock;

use proc_macro2::{Literal, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::{Ident, LitStr};

use crate::ast::{Item, Section, SectionText, Template, Variable, VariableInput};
use crate::attr::Part;

/// `#[prompt_section]` or `#[prompt_context]`: the item, then its
/// registration (a context's is the same value, wrapped).
///
/// The value is a call of `fixed_section` or `provided_section` with
/// literal arguments rather than the struct literal it returns: a third of
/// the tokens, and for rustc one path to resolve instead of eight (see
/// `benches/BUILD_RESULTS.md`). An absent `name` or `tool` is `""`, which
/// validation rejects as a value, so it never means a name.
pub(crate) fn section(item: TokenStream, section: &Section, part: Part) -> TokenStream {
    let Section {
        ident,
        cfgs,
        order,
        name,
        tool,
        complete,
        text,
    } = section;
    let order = Literal::i32_unsuffixed(*order);
    // Token trees, not token streams: each stream interpolated below would
    // cost a call across the compiler's bridge.
    let none = || Literal::string("");
    let name_value = name.as_ref().map_or_else(none, |name| name.literal.token());
    let tool = tool.as_ref().map_or_else(none, LitStr::token);
    let context = part.attr == crate::attr::PROMPT_CONTEXT;
    let (constructor, references) = match text {
        SectionText::Fixed { references } => ("fixed_section", references.as_slice()),
        SectionText::Provided => ("provided_section", &[][..]),
    };
    let constructor = Ident::new(constructor, Span::call_site());
    let Owner {
        krate,
        item: item_name,
        file,
        line,
    } = Owner::of(ident);
    let unique = name
        .as_ref()
        .map(|name| unique_macro(part.noun, &name.value, name.literal.span()));
    // One complete section a crate: a second is E0428 at its `complete`.
    let unique_complete = complete
        .as_ref()
        .map(|complete| unique_macro("complete", "section", complete.span()));
    let value = quote! {
        ::dsh_system_prompt::__private::#constructor(
            #name_value, #order, #tool, #ident,
            #(#krate)*, ::core::module_path!(), #item_name, #file, #line
        )
    };
    // A method call only on a complete section: the others pay no token.
    let value = if complete.is_some() {
        quote!(#value.complete())
    } else {
        value
    };
    let value = if context {
        quote!(::dsh_system_prompt::__private::StaticContext(#value))
    } else {
        value
    };
    // The reference checks are statements of the submitted value's block:
    // one constant to evaluate per section, not two. Without checks, no
    // block: one expression fewer for rustc to lower.
    let value = if references.is_empty() && unique.is_none() && unique_complete.is_none() {
        value
    } else {
        quote!({
            #unique
            #unique_complete
            #(::dsh_system_prompt::__private::assert_prompt_variable::<#references>();)*
            #value
        })
    };
    quote! {
        #item
        #(#cfgs)*
        ::dsh_system_prompt::__private::inventory::submit! { #value }
    }
}

/// `#[prompt_variable]`: the fn, its marker type, and its registration.
pub(crate) fn variable(item: TokenStream, variable: &Variable) -> TokenStream {
    let Variable {
        ident,
        vis,
        cfgs,
        name,
    } = variable;
    let marker = marker(ident, vis, cfgs);
    let owner = owner(ident);
    let unique = unique_in_crate("variable", name, ident.span(), cfgs);
    quote! {
        #item
        #marker
        #unique
        #(#cfgs)*
        const _: () = {
            fn __dsh_provide(
                cx: &::dsh_system_prompt::__private::AssembleContext,
            ) -> ::core::option::Option<::std::string::String> {
                ::dsh_system_prompt::__private::IntoVariableValue::into_variable_value(#ident(cx))
            }
            ::dsh_system_prompt::__private::inventory::submit! {
                ::dsh_system_prompt::__private::StaticVariable {
                    name: #name,
                    provider: __dsh_provide,
                    owner: #owner,
                }
            }
        };
    }
}

/// `prompt_template!`: the literal itself, a `&'static str`.
pub(crate) fn template(template: &Template) -> TokenStream {
    let literal = &template.literal;
    quote!(#literal)
}

/// An item the attribute rejected: the item unchanged, then the errors, so
/// that the mistake is the only error.
pub(crate) fn rejected(item: TokenStream, error: &syn::Error) -> TokenStream {
    let errors = error.to_compile_error();
    quote!(#item #errors)
}

/// A rejected `#[prompt_variable]` fn still declares its marker type, so
/// that sections referencing the variable resolve and the mistake in the
/// variable is the only error.
pub(crate) fn rejected_variable(
    item: TokenStream,
    input: &VariableInput,
    error: &syn::Error,
) -> TokenStream {
    let marker = match &input.item {
        Item::Fn(function) => marker(&function.sig.ident, &function.vis, &input.item.cfgs()),
        _ => TokenStream::new(),
    };
    let errors = error.to_compile_error();
    quote!(#item #marker #errors)
}

/// `prompt_template!` with errors: the errors, then the literal if there is
/// one, so that the expression still has its type.
pub(crate) fn rejected_template(literal: Option<&syn::LitStr>, error: &syn::Error) -> TokenStream {
    let errors = error.to_compile_error();
    quote!({ #errors #literal })
}

/// The type a `<<name>>` resolves to: a braced struct named like the fn.
/// A braced struct lives only in the type namespace, so it coexists with
/// the fn of the same name, and `use owner::name;` imports both. Its
/// visibility is the fn's, so the variable can be referenced wherever the
/// fn can be called.
///
/// The declaration is spanned at the fn's name, so that rustc's notes about
/// the type ("similarly named struct `model` defined here") point there.
fn marker(ident: &Ident, vis: &syn::Visibility, cfgs: &[syn::Attribute]) -> TokenStream {
    let declaration = quote_spanned! {ident.span()=>
        #[doc(hidden)]
        #[allow(
            non_camel_case_types,
            dead_code,
            missing_docs,
            missing_debug_implementations,
            unreachable_pub
        )]
        #vis struct #ident {}
    };
    quote! {
        #(#cfgs)*
        #declaration
        #(#cfgs)*
        const _: () = {
            impl ::dsh_system_prompt::__private::PromptVariable for #ident {}
        };
    }
}

/// The owner of a static contribution: crate, module, item, file, line.
///
/// Everything but the module is known here, so it is written as literals:
/// a builtin macro (`env!`, `file!`, `line!`) per field would be resolved
/// and expanded again for every item, which for a crate of many sections is
/// a measurable share of its build (see `benches/BUILD_RESULTS.md`). The
/// values are those the builtins would give: cargo sets `CARGO_PKG_NAME`
/// for the compiler the macro runs in, and a span's file and line are what
/// `file!()` and `line!()` report for it. `module_path!()` has no such
/// counterpart and stays.
struct Owner {
    /// A literal, or `env!` when not built by cargo; token trees, which
    /// `quote!` appends without a call across the compiler's bridge.
    krate: Vec<TokenTree>,
    item: String,
    file: String,
    line: Literal,
}

impl Owner {
    fn of(ident: &Ident) -> Self {
        // Read once: the macro crate stays loaded for the whole crate.
        static KRATE: OnceLock<Option<String>> = OnceLock::new();
        let krate = match KRATE.get_or_init(|| std::env::var("CARGO_PKG_NAME").ok()) {
            Some(name) => vec![Literal::string(name).into()],
            // Not built by cargo: the builtin reads whatever is there.
            None => quote!(::core::env!("CARGO_PKG_NAME")).into_iter().collect(),
        };
        let span = ident.span().unwrap();
        Self {
            krate,
            item: ident.unraw().to_string(),
            file: span.file(),
            line: Literal::u32_unsuffixed(u32::try_from(span.line()).unwrap_or(u32::MAX)),
        }
    }
}

/// A variable's owner, as the `StaticOwner` literal.
fn owner(ident: &Ident) -> TokenStream {
    let Owner {
        krate,
        item,
        file,
        line,
    } = Owner::of(ident);
    quote! {
        ::dsh_system_prompt::__private::StaticOwner {
            krate: #(#krate)*,
            module: ::core::module_path!(),
            item: #item,
            file: #file,
            line: #line,
        }
    }
}

/// [`unique_macro`] in a `const _` block of its own, under the item's
/// `cfg`s: a variable's, which has no value block to declare it in.
fn unique_in_crate(kind: &str, name: &str, span: Span, cfgs: &[syn::Attribute]) -> TokenStream {
    let unique = unique_macro(kind, name, span);
    quote_spanned! {span=>
        #(#cfgs)*
        const _: () = { #unique };
    }
}

/// A hidden exported macro named after the contribution, spanned at its
/// name: a second one of the same kind and name in the crate is E0428 at
/// that name.
///
/// It is declared in a block, never at item level. `#[macro_export]` puts
/// it at the crate root wherever it is declared, so the check is the same;
/// but a `macro_rules!` declared at item level also enters its module's
/// textual macro scope, which every later macro name in the module is
/// resolved through, one declaration after another: with one declaration
/// per section, resolving the module's macros grew with the square of its
/// sections (see `benches/BUILD_RESULTS.md`). A section's goes in the block
/// of its submitted value, where it costs no item of its own and the
/// tokens of a `const _` wrapper. `non_local_definitions` (a
/// `#[macro_export]` inside a body) is allowed on it.
fn unique_macro(kind: &str, name: &str, span: Span) -> TokenStream {
    let macro_name = format_ident!("__dsh_prompt_{}_{}", kind, mangle(name), span = span);
    // Every token at the name: rustc reports E0428 over the whole item.
    quote_spanned! {span=>
        #[doc(hidden)]
        #[macro_export]
        #[allow(non_local_definitions)]
        macro_rules! #macro_name { () => {} }
    }
}

/// Spells a section or variable name as identifier characters, one to one
/// (distinct names never collide): letters and digits stay, `_` doubles, and
/// `:`, `.`, `-` become `_colon_`, `_dot_`, `_dash_`. Any other character
/// (validation rules them out) becomes `_u<hex>_`.
fn mangle(name: &str) -> String {
    let mut mangled = String::with_capacity(name.len() + 8);
    for ch in name.chars() {
        match ch {
            'a'..='z' | 'A'..='Z' | '0'..='9' => mangled.push(ch),
            '_' => mangled.push_str("__"),
            ':' => mangled.push_str("_colon_"),
            '.' => mangled.push_str("_dot_"),
            '-' => mangled.push_str("_dash_"),
            other => mangled.push_str(&format!("_u{:x}_", u32::from(other))),
        }
    }
    mangled
}

#[cfg(test)]
mod tests {
    use super::mangle;

    #[test]
    fn mangling_reads_and_never_collides() {
        assert_eq!(mangle("tool:bash"), "tool_colon_bash");
        assert_eq!(mangle("tool_bash"), "tool__bash");
        assert_eq!(mangle("a.b-c"), "a_dot_b_dash_c");
        let names = [
            "a:b",
            "a_b",
            "a__b",
            "a_colon_b",
            "a::b",
            "a.b",
            "a-b",
            "a_dot_b",
            "ab",
        ];
        let mut mangled: Vec<String> = names.iter().map(|name| mangle(name)).collect();
        mangled.sort();
        mangled.dedup();
        assert_eq!(mangled.len(), names.len());
    }
}
