//! The arguments of `#[prompt_section(…)]`, as written.
//!
//! Parsing here is only syntax: comma-separated `key = value` pairs (or a
//! bare `key`, which only the `complete` flag is). Which keys exist, which
//! are required, and what their values may be is decided in `valid.rs`, so
//! that every mistake is reported, not the first.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Expr, Path, Token};

/// The macros, as diagnostics name them.
pub(crate) const PROMPT_SECTION: &str = "prompt_section";
pub(crate) const PROMPT_CONTEXT: &str = "prompt_context";
pub(crate) const PROMPT_VARIABLE: &str = "prompt_variable";
pub(crate) const PROMPT_TEMPLATE: &str = "prompt_template";

/// `order = N`: where the section renders, an `i32`. Required.
pub(crate) const ORDER: &str = "order";
/// `name = "…"`: the section's name. Without it, the name is derived from
/// the item's path.
pub(crate) const NAME: &str = "name";
/// `tool = "…"`: the tool the section is bound to.
pub(crate) const TOOL: &str = "tool";
/// `complete`, a flag: while active, the section is the whole prompt.
/// Sections only; at most one in a crate.
pub(crate) const COMPLETE: &str = "complete";

/// What an attribute that declares a part (`#[prompt_section]`,
/// `#[prompt_context]`) is called, and what it calls the part, for its
/// diagnostics: the two take the same arguments and items.
#[derive(Clone, Copy)]
pub(crate) struct Part {
    /// The attribute's name.
    pub(crate) attr: &'static str,
    /// The part, as a noun: "section", "context".
    pub(crate) noun: &'static str,
}

/// `#[prompt_section]`.
pub(crate) const SECTION: Part = Part {
    attr: PROMPT_SECTION,
    noun: "section",
};

/// `#[prompt_context]`.
pub(crate) const CONTEXT: Part = Part {
    attr: PROMPT_CONTEXT,
    noun: "context",
};

/// Every `#[prompt_section]` argument, in the order diagnostics list them.
pub(crate) const SECTION_ARGUMENTS: [&str; 4] = [ORDER, NAME, TOOL, COMPLETE];

/// The arguments of one attribute, as written.
pub(crate) struct Args {
    /// The argument tokens, to span an error about the arguments as a whole
    /// (a missing argument has no token of its own).
    pub(crate) tokens: TokenStream,
    pub(crate) entries: Punctuated<Arg, Token![,]>,
}

impl Args {
    /// Parses `key = value, …`. Fails only on tokens that are not
    /// comma-separated arguments at all.
    pub(crate) fn parse(tokens: TokenStream) -> syn::Result<Self> {
        let entries = Punctuated::<Arg, Token![,]>::parse_terminated.parse2(tokens.clone())?;
        Ok(Self { tokens, entries })
    }
}

/// One argument: a key, then `= value` or something malformed.
pub(crate) struct Arg {
    pub(crate) key: Path,
    pub(crate) value: ArgValue,
}

pub(crate) enum ArgValue {
    /// `key = value`. The value is parsed as an expression, not as a meta
    /// literal, so that `-5` keeps the spans of both its tokens.
    Given(Expr),
    /// `key` alone, or `key(…)`: the tokens after the key, if any.
    Malformed(TokenStream),
}

impl Parse for Arg {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let key = input.call(Path::parse_mod_style)?;
        if input.parse::<Option<Token![=]>>()?.is_some() {
            return Ok(Self {
                key,
                value: ArgValue::Given(input.parse()?),
            });
        }
        let mut rest = TokenStream::new();
        while !input.is_empty() && !input.peek(Token![,]) {
            rest.extend(std::iter::once(input.parse::<proc_macro2::TokenTree>()?));
        }
        Ok(Self {
            key,
            value: ArgValue::Malformed(rest),
        })
    }
}

impl ToTokens for Arg {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        self.key.to_tokens(tokens);
        match &self.value {
            ArgValue::Given(value) => {
                <Token![=]>::default().to_tokens(tokens);
                value.to_tokens(tokens);
            }
            ArgValue::Malformed(rest) => rest.to_tokens(tokens),
        }
    }
}
