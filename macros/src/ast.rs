//! The typed model of each macro's input, and of what validation accepted.
//!
//! Every node is the original syn node, so that diagnostics and generated
//! code can carry the user's spans.

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use quote::ToTokens;
use syn::parse::Parser;
use syn::{Attribute, Ident, Lit, LitStr, Visibility};

use crate::attr::Args;

/// The item an attribute is applied to.
pub(crate) enum Item {
    /// The common shape of a section, recognized token by token: see
    /// [`TextItem`].
    Text(TextItem),
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
            Self::Text(item) => return item.cfgs.clone(),
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

/// `const NAME: &str = "…";` or `static NAME: &'static str = "…";`, with any
/// outer attributes and visibility: a section's text as nearly every
/// section writes it, read token by token instead of by syn's item parser,
/// which in an unoptimized proc macro costs several times more (see
/// `benches/BUILD_RESULTS.md`). Validation treats it as the same item parsed
/// by syn would be: its type is `&str`, its text a string literal. Any other
/// shape, however close, is left to syn.
pub(crate) struct TextItem {
    /// `const` or `static`.
    pub(crate) keyword: Ident,
    pub(crate) ident: Ident,
    pub(crate) cfgs: Vec<Attribute>,
    pub(crate) literal: LitStr,
}

impl TextItem {
    fn recognize(tokens: &TokenStream) -> Option<Self> {
        let mut tokens = tokens.clone().into_iter().peekable();
        let mut cfgs = Vec::new();
        // Outer attributes; only `#[cfg(…)]` is kept, parsed by syn (rare).
        while let Some(TokenTree::Punct(pound)) = tokens.peek() {
            if pound.as_char() != '#' {
                return None;
            }
            let pound = tokens.next()?;
            let TokenTree::Group(group) = tokens.next()? else {
                return None;
            };
            if group.delimiter() != Delimiter::Bracket {
                return None;
            }
            let mut inner = group.stream().into_iter();
            let is_cfg = matches!(inner.next(), Some(TokenTree::Ident(path)) if path == "cfg")
                && !matches!(inner.next(), Some(TokenTree::Punct(colon)) if colon.as_char() == ':');
            if is_cfg {
                let mut attr = pound.into_token_stream();
                attr.extend([TokenTree::Group(group)]);
                cfgs.extend(Attribute::parse_outer.parse2(attr).ok()?);
            }
        }
        // Each comparison of an `Ident` with a string renders it; render once.
        let mut keyword = next_ident(&mut tokens)?;
        let mut keyword_text = keyword.to_string();
        if keyword_text == "pub" {
            if let Some(TokenTree::Group(group)) = tokens.peek() {
                let restricted = group.delimiter() == Delimiter::Parenthesis
                    && matches!(
                        group.stream().into_iter().next(),
                        Some(TokenTree::Ident(scope))
                            if ["crate", "self", "super", "in"].contains(&scope.to_string().as_str())
                    );
                if !restricted {
                    return None;
                }
                tokens.next();
            }
            keyword = next_ident(&mut tokens)?;
            keyword_text = keyword.to_string();
        }
        if keyword_text != "const" && keyword_text != "static" {
            return None;
        }
        let ident = next_ident(&mut tokens)?;
        if matches!(ident.to_string().as_str(), "_" | "mut") {
            return None;
        }
        // `: &str` or `: &'static str`.
        next_punct(&mut tokens, ':')?;
        next_punct(&mut tokens, '&')?;
        let mut ty = tokens.next()?;
        if let TokenTree::Punct(quote) = &ty {
            if quote.as_char() != '\'' || quote.spacing() != Spacing::Joint {
                return None;
            }
            if next_ident(&mut tokens)? != "static" {
                return None;
            }
            ty = tokens.next()?;
        }
        if !matches!(&ty, TokenTree::Ident(ty) if ty == "str") {
            return None;
        }
        next_punct(&mut tokens, '=')?;
        let TokenTree::Literal(literal) = tokens.next()? else {
            return None;
        };
        let Lit::Str(literal) = Lit::new(literal) else {
            return None;
        };
        next_punct(&mut tokens, ';')?;
        if tokens.next().is_some() {
            return None;
        }
        Some(Self {
            keyword,
            ident,
            cfgs,
            literal,
        })
    }
}

fn next_ident(tokens: &mut impl Iterator<Item = TokenTree>) -> Option<Ident> {
    match tokens.next()? {
        TokenTree::Ident(ident) => Some(ident),
        _ => None,
    }
}

/// The next token is the punctuation `ch`. Its spacing does not matter:
/// what may follow it is checked token by token (`==` fails at the second
/// `=`, where a literal is expected).
fn next_punct(tokens: &mut impl Iterator<Item = TokenTree>, ch: char) -> Option<()> {
    match tokens.next()? {
        TokenTree::Punct(punct) if punct.as_char() == ch => Some(()),
        _ => None,
    }
}

/// `#[prompt_section(args)] item`, as written.
pub(crate) struct SectionInput {
    pub(crate) args: Args,
    pub(crate) item: Item,
}

impl SectionInput {
    pub(crate) fn parse(args: TokenStream, item: TokenStream) -> syn::Result<Self> {
        let args = Args::parse(args)?;
        let item = match TextItem::recognize(&item) {
            Some(text) => Item::Text(text),
            None => Item::parse(item)?,
        };
        Ok(Self { args, item })
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

#[cfg(test)]
mod tests {
    use quote::ToTokens;

    use super::{Item, TextItem};
    use crate::attr::Args;

    fn tokens(text: &str) -> proc_macro2::TokenStream {
        text.parse().unwrap()
    }

    /// What the token reader accepts, syn reads as the same const or
    /// static, with the same ident, literal and `cfg`s.
    #[test]
    fn text_items_read_as_syn_reads_them() {
        for text in [
            r#"const A: &str = "a <<b>>";"#,
            r#"pub static A: &'static str = r"a";"#,
            r#"/// Doc.
               #[cfg(test)] #[allow(dead_code)] pub(crate) const r#type: &str = "a";"#,
            r#"pub(in crate::m) const A: &str = "a";"#,
        ] {
            let text_item = TextItem::recognize(&tokens(text)).expect(text);
            let (ident, attrs, expr) = match Item::parse(tokens(text)).unwrap() {
                Item::Const(item) => (item.ident, item.attrs, item.expr),
                Item::Static(item) => (item.ident, item.attrs, item.expr),
                _ => panic!("{text}: not a const or static"),
            };
            assert_eq!(text_item.ident, ident);
            assert_eq!(
                text_item.literal.to_token_stream().to_string(),
                expr.to_token_stream().to_string()
            );
            let cfgs: Vec<String> = attrs
                .iter()
                .filter(|attr| attr.path().is_ident("cfg"))
                .map(|attr| attr.to_token_stream().to_string())
                .collect();
            let text_cfgs: Vec<String> = text_item
                .cfgs
                .iter()
                .map(|attr| attr.to_token_stream().to_string())
                .collect();
            assert_eq!(text_cfgs, cfgs);
        }
    }

    /// Any other shape is left to syn, and to validation's messages.
    #[test]
    fn other_items_are_left_to_syn() {
        for text in [
            r#"const A: String = "a";"#,
            r#"const A: &mut str = "a";"#,
            r#"const A: &'a str = "a";"#,
            r#"static mut A: &str = "a";"#,
            r#"const _: &str = "a";"#,
            r#"const A: &str = concat!("a");"#,
            r#"const A: &str = b"a";"#,
            r#"const A: &str = "a""#,
            r#"pub(foo) const A: &str = "a";"#,
            r#"#![cfg(test)] const A: &str = "a";"#,
            r#"fn a(cx: &AssembleContext) -> String { String::new() }"#,
        ] {
            assert!(TextItem::recognize(&tokens(text)).is_none(), "{text}");
        }
    }

    /// Arguments read token by token are what syn's parse gives.
    #[test]
    fn arguments_read_as_syn_reads_them() {
        use syn::parse::Parser;
        use syn::punctuated::Punctuated;
        for text in [
            r#"order = 5"#,
            r#"name = "tool:bash", order = 105, tool = "bash","#,
            r#"order = 5i32, order = 6"#,
        ] {
            let recognized = Args::recognize(&tokens(text)).expect(text);
            let parsed = Punctuated::<crate::attr::Arg, syn::Token![,]>::parse_terminated
                .parse2(tokens(text))
                .unwrap();
            assert_eq!(
                recognized.to_token_stream().to_string(),
                parsed.to_token_stream().to_string()
            );
        }
        for text in [
            r#"order = -5"#,
            r#"ordr = 5"#,
            r#"order"#,
            r#"order = (5)"#,
            r#"order == 5"#,
        ] {
            assert!(Args::recognize(&tokens(text)).is_none(), "{text}");
        }
    }
}
