//! The typed model of each macro's input, and of what validation accepted.
//!
//! Every node is the original syn node, so that diagnostics and generated
//! code can carry the user's spans.

use proc_macro2::TokenStream;
use syn::{Attribute, Ident, LitStr, Visibility};

use crate::attr::Args;

/// The item an attribute is applied to, as syn parses it.
pub(crate) enum Item {
    Const(syn::ItemConst),
    Static(syn::ItemStatic),
    Fn(syn::ItemFn),
    /// Any other item; validation rejects it at its keyword.
    Other(syn::Item),
}

impl Item {
    fn parse(tokens: TokenStream) -> syn::Result<Self> {
        Ok(match syn::parse2::<syn::Item>(tokens)? {
            syn::Item::Const(item) => Self::Const(item),
            syn::Item::Static(item) => Self::Static(item),
            syn::Item::Fn(item) => Self::Fn(item),
            other => Self::Other(other),
        })
    }

    /// The item's `#[cfg(…)]` attributes, which every generated item copies:
    /// an item configured away takes its registration with it.
    pub(crate) fn cfgs(&self) -> Vec<Attribute> {
        let attrs = match self {
            Self::Const(item) => &item.attrs,
            Self::Static(item) => &item.attrs,
            Self::Fn(item) => &item.attrs,
            Self::Other(_) => return Vec::new(),
        };
        attrs
            .iter()
            .filter(|attr| attr.path().is_ident("cfg"))
            .cloned()
            .collect()
    }
}

/// `#[prompt_section(args)] item`, as written.
pub(crate) struct SectionInput {
    pub(crate) args: Args,
    pub(crate) item: Item,
}

impl SectionInput {
    pub(crate) fn parse(args: TokenStream, item: TokenStream) -> syn::Result<Self> {
        Ok(Self {
            args: Args::parse(args)?,
            item: Item::parse(item)?,
        })
    }
}

/// `#[prompt_variable(args)] item`, as written. The attribute takes no
/// arguments; they are kept to report them.
pub(crate) struct VariableInput {
    pub(crate) args: TokenStream,
    pub(crate) item: Item,
}

impl VariableInput {
    pub(crate) fn parse(args: TokenStream, item: TokenStream) -> syn::Result<Self> {
        Ok(Self {
            args,
            item: Item::parse(item)?,
        })
    }
}

/// A valid `#[prompt_section]`.
pub(crate) struct Section {
    /// The const, static or fn that holds or computes the text.
    pub(crate) ident: Ident,
    pub(crate) cfgs: Vec<Attribute>,
    pub(crate) order: i32,
    /// The explicit name; `None` derives it from the item's path.
    pub(crate) name: Option<SectionName>,
    pub(crate) tool: Option<LitStr>,
    /// The `complete` flag's key, when given: the section is the whole
    /// prompt while it is active.
    pub(crate) complete: Option<Ident>,
    pub(crate) text: SectionText,
}

/// An explicit section name: the literal, for its span, and its value,
/// read once.
pub(crate) struct SectionName {
    pub(crate) literal: LitStr,
    pub(crate) value: String,
}

/// Where a valid section's text comes from.
pub(crate) enum SectionText {
    /// A `const` or `static`. When its initializer is a string literal,
    /// `references` holds one ident per distinct `<<name>>` in it, spanned
    /// at the literal, for Rust to resolve to the variables' marker types.
    Fixed { references: Vec<Ident> },
    /// A `fn(&AssembleContext) -> String`.
    Provided,
}

/// A valid `#[prompt_variable]`.
pub(crate) struct Variable {
    /// The fn, and the name of its marker type.
    pub(crate) ident: Ident,
    pub(crate) vis: Visibility,
    pub(crate) cfgs: Vec<Attribute>,
    /// The variable's name: the fn's name without `r#`.
    pub(crate) name: String,
}

/// A valid `prompt_template!` literal.
pub(crate) struct Template {
    pub(crate) literal: LitStr,
}
