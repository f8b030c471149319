//! Validation: every rule the macros check at build time, one function a
//! rule, each reporting at the offending token.
//!
//! Validation never stops at the first mistake. Rules push into an
//! [`Errors`] collector and the invocation fails once, with all of them, so
//! the user fixes every mistake of an attribute in one compile.

use std::collections::HashSet;
use std::fmt::Display;

use dsh_prompt_template::{
    SECTION_NAME_GRAMMAR, Template, VARIABLE_NAME_GRAMMAR, is_section_name, is_variable_name,
};
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{
    Error, Expr, FnArg, GenericArgument, GenericParam, Ident, Lit, LitInt, LitStr, PathArguments,
    ReturnType, Signature, Type, UnOp,
};

use crate::ast::{
    self, Item, Section, SectionInput, SectionName, SectionText, Variable, VariableInput,
};
use crate::attr::{
    self, ArgValue, COMPLETE, NAME, ORDER, PROMPT_TEMPLATE, PROMPT_VARIABLE, Part, TOOL,
};
use crate::source::source;

/// The errors of one macro invocation.
///
/// Like serde_derive's context, it panics when dropped without being
/// [`finish`](Errors::finish)ed: a rule whose errors are never reported
/// would be a silent bug in this crate.
struct Errors {
    errors: Option<Vec<Error>>,
}

impl Errors {
    fn new() -> Self {
        Self {
            errors: Some(Vec::new()),
        }
    }

    /// Reports `message` at `span`.
    fn at(&mut self, span: Span, message: impl Display) {
        self.push(Error::new(span, message));
    }

    /// Reports `message` over all of `tokens` (first to last token, which
    /// works on stable, unlike joining spans).
    fn over(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.push(Error::new_spanned(tokens, message));
    }

    fn push(&mut self, error: Error) {
        if let Some(errors) = &mut self.errors {
            errors.push(error);
        }
    }

    /// `Ok(value)` when no rule failed, else every error, combined.
    fn finish<T>(mut self, value: T) -> syn::Result<T> {
        let errors = self.errors.take().unwrap_or_default();
        let mut errors = errors.into_iter();
        match errors.next() {
            None => Ok(value),
            Some(mut combined) => {
                combined.extend(errors);
                Err(combined)
            }
        }
    }
}

impl Drop for Errors {
    fn drop(&mut self) {
        if self.errors.is_some() && !std::thread::panicking() {
            panic!("validation errors dropped without being reported");
        }
    }
}

impl SectionInput {
    /// Checks a `#[prompt_section]` (or, for `part` [`CONTEXT`],
    /// `#[prompt_context]`): its arguments, its item, and the template
    /// syntax of a literal text.
    pub(crate) fn validate(self, part: Part) -> syn::Result<Section> {
        let mut errors = Errors::new();
        let args = section_args(&self.args, part, &mut errors);
        let attr = part.attr;
        let cfgs = self.item.cfgs();
        let (ident, text) = match &self.item {
            Item::Const(item) => {
                check_text_type(&item.ty, "const", part, &mut errors);
                (item.ident.clone(), fixed_text(&item.expr, &mut errors))
            }
            Item::Static(item) => {
                if let syn::StaticMutability::Mut(token) = &item.mutability {
                    errors.at(
                        token.span,
                        format!(
                            "a `#[{attr}]` static cannot be `mut`: the registry reads it at any time; \
                             remove `mut`"
                        ),
                    );
                }
                check_text_type(&item.ty, "static", part, &mut errors);
                (item.ident.clone(), fixed_text(&item.expr, &mut errors))
            }
            Item::Fn(item) => {
                check_signature(&item.sig, attr, &mut errors);
                check_section_return(&item.sig, part, &mut errors);
                (item.sig.ident.clone(), SectionText::Provided)
            }
            Item::Other(_) => {
                reject_item(
                    &self.item,
                    attr,
                    "a `const` or `static` of type `&str`, or to a `fn(cx: &AssembleContext) -> String`",
                    &mut errors,
                );
                // Never used: the invocation fails.
                (
                    Ident::new("__dsh_rejected", Span::call_site()),
                    SectionText::Provided,
                )
            }
        };
        errors.finish(Section {
            ident,
            cfgs,
            order: args.order,
            name: args.name,
            tool: args.tool,
            complete: args.complete,
            text,
        })
    }
}

impl VariableInput {
    /// Checks a `#[prompt_variable]`: no arguments, a fn with the variable
    /// signature, and a name that can be referenced as `<<name>>`.
    pub(crate) fn validate(&self) -> syn::Result<Variable> {
        let mut errors = Errors::new();
        if !self.args.is_empty() {
            errors.over(
                &self.args,
                format!(
                    "`#[{PROMPT_VARIABLE}]` takes no arguments: the variable is named after its fn; \
                     remove the arguments"
                ),
            );
        }
        let Item::Fn(item) = &self.item else {
            reject_item(
                &self.item,
                PROMPT_VARIABLE,
                "a `fn(cx: &AssembleContext) -> Option<String>`",
                &mut errors,
            );
            // Never used: the invocation fails.
            return errors.finish(Variable {
                ident: Ident::new("__dsh_rejected", Span::call_site()),
                vis: syn::Visibility::Inherited,
                cfgs: Vec::new(),
                name: String::new(),
            });
        };
        check_signature(&item.sig, PROMPT_VARIABLE, &mut errors);
        check_variable_return(&item.sig, &mut errors);
        let name = item.sig.ident.unraw().to_string();
        check_variable_name(&item.sig.ident, &name, &mut errors);
        errors.finish(Variable {
            ident: item.sig.ident.clone(),
            vis: item.vis.clone(),
            cfgs: self.item.cfgs(),
            name,
        })
    }
}

/// Checks `prompt_template!("…")`: one string literal, valid template
/// syntax.
pub(crate) fn template(tokens: TokenStream) -> Result<ast::Template, (Option<LitStr>, Error)> {
    let literal = match syn::parse2::<LitStr>(tokens.clone()) {
        Ok(literal) => literal,
        Err(_) => {
            let message = format!(
                "`{PROMPT_TEMPLATE}!` takes one string literal, like `{PROMPT_TEMPLATE}!(\"You work in <<cwd>>.\")`"
            );
            let error = if tokens.is_empty() {
                Error::new(Span::call_site(), message)
            } else {
                Error::new_spanned(tokens, message)
            };
            return Err((None, error));
        }
    };
    let mut errors = Errors::new();
    check_template(&literal, &mut errors);
    errors
        .finish(())
        .map(|()| ast::Template {
            literal: literal.clone(),
        })
        .map_err(|error| (Some(literal), error))
}

/// The checked arguments of `#[prompt_section]`. Values of arguments that
/// failed are defaults; they are never used, because the invocation fails.
struct SectionArgs {
    order: i32,
    name: Option<SectionName>,
    tool: Option<LitStr>,
    /// The `complete` flag's key, for its span.
    complete: Option<Ident>,
}

/// Each argument is one of `order`, `name`, `tool`, given once, as
/// `key = value`, or the `complete` flag (a section's only), given once,
/// alone; `order` is required.
fn section_args(args: &attr::Args, part: Part, errors: &mut Errors) -> SectionArgs {
    let mut checked = SectionArgs {
        order: 0,
        name: None,
        tool: None,
        complete: None,
    };
    // At most four keys: a list, not a set.
    let mut seen: Vec<&'static str> = Vec::with_capacity(attr::SECTION_ARGUMENTS.len());
    let mut unknown = false;
    for arg in &args.entries {
        let Some(key) = known_key(&arg.key, part, errors) else {
            unknown = true;
            continue;
        };
        if seen.contains(&key) {
            errors.over(
                &arg.key,
                format!("duplicate `{}` argument `{key}`; give it once", part.attr),
            );
            continue;
        }
        seen.push(key);
        checked.take(key, arg, part, errors);
    }
    // An unknown argument may be a misspelled `order` (`ordr = 1`): then
    // "missing `order`" would be a second error for one mistake.
    if !seen.contains(&ORDER) && !unknown {
        missing_order(args, part, errors);
    }
    checked
}

/// The argument key `path` names, when it is one `#[prompt_section]`
/// knows; else the error that lists the keys.
fn known_key(path: &syn::Path, part: Part, errors: &mut Errors) -> Option<&'static str> {
    let key = path.get_ident().and_then(|key| {
        let key = key.to_string();
        attr::SECTION_ARGUMENTS
            .into_iter()
            .find(|known| *known == key)
    });
    if key.is_none() {
        errors.over(
            path,
            format!(
                "unknown `{}` argument `{}`; expected {}",
                part.attr,
                source(path),
                expected_arguments(part)
            ),
        );
    }
    key
}

impl SectionArgs {
    /// Checks the value of `arg`, whose key is `key`, given for the first
    /// time, and keeps it.
    fn take(&mut self, key: &'static str, arg: &attr::Arg, part: Part, errors: &mut Errors) {
        if key == COMPLETE {
            self.complete = complete_flag(arg, part, errors);
            return;
        }
        let ArgValue::Given(value) = &arg.value else {
            errors.over(
                arg,
                format!("`{key}` takes a value; write it as `{}`", example(key)),
            );
            return;
        };
        match key {
            ORDER => {
                if let Some(order) = order_value(value, errors) {
                    self.order = order;
                }
            }
            NAME => self.name = section_name(value, part, errors),
            _ => self.tool = tool_name(value, part, errors),
        }
    }
}

/// The error for arguments without `order`, over them, or over the
/// attribute when it has none.
fn missing_order(args: &attr::Args, part: Part, errors: &mut Errors) {
    let Part { attr, noun } = part;
    let message = format!(
        "missing `{attr}` argument `{ORDER}`; add `{ORDER} = N`, where {noun}s render in \
         ascending `({ORDER}, {NAME})`{}",
        if noun == "section" {
            " (tool guidance uses 100..=199)"
        } else {
            ""
        }
    );
    if args.tokens.is_empty() {
        // No argument token to point at: the attribute itself is the
        // place to add it.
        errors.at(Span::call_site(), message);
    } else {
        errors.over(&args.tokens, message);
    }
}

/// The arguments `part` takes, as diagnostics list them: "`order`,
/// `name`, `tool` or `complete`" (a context is never complete).
fn expected_arguments(part: Part) -> String {
    let keys = attr::SECTION_ARGUMENTS
        .into_iter()
        .filter(|&key| key != COMPLETE || part.noun == "section")
        .map(|key| format!("`{key}`"));
    dsh_prompt_template::series(keys, "or")
}

/// The `complete` flag's key, when it is given alone, to a section: a
/// context is never part of the system prompt, so it cannot be all of it.
fn complete_flag(arg: &attr::Arg, part: Part, errors: &mut Errors) -> Option<Ident> {
    let Part { attr, noun } = part;
    if noun != "section" {
        errors.over(
            arg,
            format!(
                "a `#[{attr}]` cannot be `{COMPLETE}`: a {noun} is never part of the system \
                 prompt, so it cannot be the whole of it; remove `{COMPLETE}`, or declare a \
                 `#[prompt_section]`"
            ),
        );
        return None;
    }
    match &arg.value {
        ArgValue::Malformed(rest) if rest.is_empty() => arg.key.get_ident().cloned(),
        _ => {
            errors.over(
                arg,
                format!("`{COMPLETE}` is a flag and takes no value; write it alone: `{COMPLETE}`"),
            );
            None
        }
    }
}

/// How an argument is written, for "write it as" messages.
fn example(key: &str) -> &'static str {
    match key {
        ORDER => "order = 105",
        NAME => "name = \"tool:bash\"",
        _ => "tool = \"bash\"",
    }
}

/// `order` is an integer literal, optionally negative, unsuffixed or
/// suffixed `i32`, that fits `i32`.
fn order_value(value: &Expr, errors: &mut Errors) -> Option<i32> {
    let (negative, literal) = match unwrap_expr(value) {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Int(literal),
            ..
        }) => (false, literal),
        Expr::Unary(syn::ExprUnary {
            op: UnOp::Neg(_),
            expr,
            ..
        }) => match unwrap_expr(expr) {
            Expr::Lit(syn::ExprLit {
                lit: Lit::Int(literal),
                ..
            }) => (true, literal),
            _ => return not_an_integer(value, errors),
        },
        _ => return not_an_integer(value, errors),
    };
    if !matches!(literal.suffix(), "" | "i32") {
        errors.over(
            literal,
            format!(
                "`{ORDER}` is an `i32`; remove the suffix `{}` from `{literal}`",
                literal.suffix()
            ),
        );
        return None;
    }
    match integer_value(literal, negative) {
        Some(order) => Some(order),
        None => {
            errors.over(
                value,
                format!(
                    "`{ORDER} = {}` does not fit in an `i32`; use an order from {} to {}",
                    source(value),
                    i32::MIN,
                    i32::MAX
                ),
            );
            None
        }
    }
}

/// The literal's value, when it fits `i32`. syn reads `order = -5` as one
/// literal `-5` or as `-` applied to `5`, depending on context; both work.
fn integer_value(literal: &LitInt, negative: bool) -> Option<i32> {
    let value = literal.base10_parse::<i128>().ok()?;
    i32::try_from(if negative { -value } else { value }).ok()
}

fn not_an_integer(value: &Expr, errors: &mut Errors) -> Option<i32> {
    errors.over(
        value,
        format!(
            "`{ORDER}` takes an integer literal, like `{ORDER} = 105`; found `{}`",
            source(value)
        ),
    );
    None
}

/// `name` is a string literal in the section-name grammar.
fn section_name(value: &Expr, part: Part, errors: &mut Errors) -> Option<SectionName> {
    let noun = part.noun;
    let literal = string_literal(value, NAME, errors)?;
    let name = literal.value();
    if name.is_empty() {
        errors.over(
            &literal,
            format!(
                "`{NAME}` is empty; name the {noun}, like `{NAME} = \"tool:bash\"`, or remove `{NAME}` \
                 to name it after the item's path"
            ),
        );
    } else if !is_section_name(&name) {
        errors.over(
            &literal,
            format!(
                "invalid {noun} name `{name}`; a {noun} name matches `{SECTION_NAME_GRAMMAR}`, like `tool:bash`"
            ),
        );
    }
    Some(SectionName {
        literal,
        value: name,
    })
}

/// `tool` is a non-empty string literal.
fn tool_name(value: &Expr, part: Part, errors: &mut Errors) -> Option<LitStr> {
    let noun = part.noun;
    let literal = string_literal(value, TOOL, errors)?;
    if literal.value().is_empty() {
        errors.over(
            &literal,
            format!(
                "`{TOOL}` is empty; name the tool the {noun} is bound to, like `{TOOL} = \"bash\"`, \
                 or remove `{TOOL}`"
            ),
        );
    }
    Some(literal)
}

fn string_literal(value: &Expr, key: &str, errors: &mut Errors) -> Option<LitStr> {
    match unwrap_expr(value) {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(literal),
            ..
        }) => Some(literal.clone()),
        _ => {
            errors.over(
                value,
                format!(
                    "`{key}` takes a string literal, like `{}`; found `{}`",
                    example(key),
                    source(value)
                ),
            );
            None
        }
    }
}

/// Looks through the invisible groups of `macro_rules!` fragments and
/// through parentheses.
fn unwrap_expr(mut expr: &Expr) -> &Expr {
    loop {
        match expr {
            Expr::Group(group) => expr = &group.expr,
            Expr::Paren(paren) => expr = &paren.expr,
            _ => return expr,
        }
    }
}

/// A `const` or `static` section holds `&str` (or `&'static str`).
fn check_text_type(ty: &Type, kind: &str, part: Part, errors: &mut Errors) {
    let Part { attr, noun } = part;
    if let Type::Reference(reference) = unwrap_type(ty)
        && reference.mutability.is_none()
        && is_path_to(&reference.elem, "str")
    {
        return;
    }
    let hint = if is_path_to(ty, "String") {
        "; for text computed at run time, use a `fn(cx: &AssembleContext) -> String`"
    } else {
        ""
    };
    errors.over(
        ty,
        format!(
            "a `#[{attr}]` {kind} holds the {noun} text: its type must be `&str`, found `{}`{hint}",
            source(ty)
        ),
    );
}

/// A literal text must be valid template syntax; returns the idents its
/// references resolve through. A text that is not a literal (a `concat!`,
/// another const) is checked when the registry is built.
fn fixed_text(expr: &Expr, errors: &mut Errors) -> SectionText {
    let references = match unwrap_expr(expr) {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(literal),
            ..
        }) => check_template(literal, errors),
        _ => Vec::new(),
    };
    SectionText::Fixed { references }
}

/// Every syntax error of the template is reported, each at the literal
/// (stable Rust has no spans inside a literal) with its line:column inside
/// the template. Returns one ident per distinct reference, spanned at the
/// literal, so that Rust's name resolution checks it.
fn check_template(literal: &LitStr, errors: &mut Errors) -> Vec<Ident> {
    let source = literal.value();
    let template = match Template::parse(&source) {
        Ok(template) => template,
        Err(syntax) => {
            for error in &syntax {
                errors.at(literal.span(), format!("invalid template: {error}"));
            }
            return Vec::new();
        }
    };
    let mut seen = HashSet::new();
    let mut idents = Vec::new();
    for reference in template.references(&source) {
        if !seen.insert(reference.name) {
            continue;
        }
        // Spanned at the literal: resolved like the user's own code, and an
        // unresolved name is reported there.
        let span = literal.span();
        match reference_ident(reference.name, span) {
            Ok(ident) => idents.push(ident),
            Err(error) => errors.push(error),
        }
    }
    idents
}

/// The ident a `<<name>>` resolves through. A keyword is written raw
/// (`<<type>>` is the variable `fn r#type`), except the few keywords no fn
/// can be named.
fn reference_ident(name: &str, span: Span) -> syn::Result<Ident> {
    if matches!(name, "self" | "super" | "crate") {
        return Err(Error::new(
            span,
            format!(
                "`<<{name}>>` cannot name a prompt variable: `{name}` is a Rust keyword that no fn can be named; \
                 rename the variable"
            ),
        ));
    }
    Ok(if is_keyword(name) {
        Ident::new_raw(name, span)
    } else {
        Ident::new(name, span)
    })
}

/// Strict and reserved keywords of every edition that a variable name
/// (`[a-z][a-z0-9_]*`) can spell.
fn is_keyword(name: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "do",
        "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl", "in",
        "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
        "return", "static", "struct", "trait", "true", "try", "type", "typeof", "unsafe",
        "unsized", "use", "virtual", "where", "while", "yield",
    ];
    KEYWORDS.contains(&name)
}

/// A fn the macros register is a plain, synchronous, non-generic fn of
/// one parameter, `&AssembleContext`: the registry stores it as a
/// `fn(&AssembleContext) -> _` pointer and calls it at each assembly.
fn check_signature(sig: &Signature, macro_name: &str, errors: &mut Errors) {
    if let Some(token) = &sig.asyncness {
        errors.at(
            token.span,
            format!(
                "a `#[{macro_name}]` fn cannot be `async`: it is called synchronously at each assembly; \
                 remove `async`"
            ),
        );
    }
    if let syn::Safety::Unsafe(token) = &sig.safety {
        errors.at(
            token.span,
            format!(
                "a `#[{macro_name}]` fn cannot be `unsafe`: the registry calls it like any safe fn; remove `unsafe`"
            ),
        );
    }
    if let Some(abi) = &sig.abi {
        errors.over(
            abi,
            format!(
                "a `#[{macro_name}]` fn cannot have an `extern` ABI; remove `{}`",
                source(abi)
            ),
        );
    }
    for param in &sig.generics.params {
        let (what, ident) = match param {
            // Lifetimes are fine: `fn f<'a>(cx: &'a AssembleContext)` is
            // still a `fn(&AssembleContext)`.
            GenericParam::Lifetime(_) => continue,
            GenericParam::Type(param) => ("type", &param.ident),
            GenericParam::Const(param) => ("const", &param.ident),
        };
        errors.over(
            param,
            format!(
                "a `#[{macro_name}]` fn cannot be generic: the registry stores a plain fn pointer; \
                 remove the {what} parameter `{ident}`"
            ),
        );
    }
    let mut inputs = sig.inputs.iter();
    match inputs.next() {
        None => errors.at(
            sig.paren_token.span.join(),
            format!("a `#[{macro_name}]` fn takes the assembly's context: add the parameter `cx: &AssembleContext`"),
        ),
        Some(FnArg::Receiver(receiver)) => errors.over(
            receiver,
            format!(
                "a `#[{macro_name}]` fn cannot take `{}`: make it a free fn taking `cx: &AssembleContext`",
                source(receiver)
            ),
        ),
        Some(FnArg::Typed(param)) => check_context_type(&param.ty, macro_name, errors),
    }
    for extra in inputs {
        errors.over(
            extra,
            format!(
                "a `#[{macro_name}]` fn takes exactly one parameter, `cx: &AssembleContext`; remove `{}`",
                source(extra)
            ),
        );
    }
}

/// The parameter is `&AssembleContext`: shared, by reference.
fn check_context_type(ty: &Type, macro_name: &str, errors: &mut Errors) {
    if let Type::Reference(reference) = unwrap_type(ty)
        && is_path_to(&reference.elem, "AssembleContext")
    {
        if let Some(token) = &reference.mutability {
            errors.at(
                token.span,
                format!(
                    "a `#[{macro_name}]` fn takes the context by shared reference, `&AssembleContext`; remove `mut`"
                ),
            );
        }
        return;
    }
    errors.over(
        ty,
        format!(
            "a `#[{macro_name}]` fn takes the assembly's context: the parameter type must be `&AssembleContext`, \
             found `{}`",
            source(ty)
        ),
    );
}

/// A section fn returns its text as `String`.
fn check_section_return(sig: &Signature, part: Part, errors: &mut Errors) {
    let Part { attr, noun } = part;
    match &sig.output {
        ReturnType::Default => errors.at(
            sig.paren_token.span.close(),
            format!("a `#[{attr}]` fn returns the {noun} text: add `-> String`"),
        ),
        ReturnType::Type(_, ty) if is_path_to(ty, "String") => {}
        ReturnType::Type(_, ty) => errors.over(
            ty,
            format!(
                "a `#[{attr}]` fn returns the {noun} text as `String`, found `{}`",
                source(ty)
            ),
        ),
    }
}

/// A variable fn returns `Option<String>` (`None`: no value for this
/// assembly) or `String` (always a value).
fn check_variable_return(sig: &Signature, errors: &mut Errors) {
    let expected = "`Option<String>` (`None` when there is no value for this assembly) or `String`";
    let ty = match &sig.output {
        ReturnType::Default => {
            errors.at(
                sig.paren_token.span.close(),
                format!(
                    "a `#[{PROMPT_VARIABLE}]` fn returns the variable's value: add `-> Option<String>` (or `-> String`)"
                ),
            );
            return;
        }
        ReturnType::Type(_, ty) => ty,
    };
    if is_path_to(ty, "String") {
        return;
    }
    // `Option<X>`: point at `X` when only `X` is wrong.
    let offending = match option_argument(ty) {
        Some(inner) if is_path_to(inner, "String") => return,
        Some(inner) => inner,
        None => ty,
    };
    errors.over(
        offending,
        format!(
            "a `#[{PROMPT_VARIABLE}]` fn returns {expected}, found `{}`",
            source(ty)
        ),
    );
}

/// `X` of `Option<X>`.
fn option_argument(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = unwrap_type(ty) else {
        return None;
    };
    let segment = path.path.segments.last()?;
    if path.qself.is_some() || segment.ident != "Option" {
        return None;
    }
    let PathArguments::AngleBracketed(arguments) = &segment.arguments else {
        return None;
    };
    match arguments.args.iter().collect::<Vec<_>>().as_slice() {
        [GenericArgument::Type(inner)] => Some(inner),
        _ => None,
    }
}

/// A variable's name is its fn's name, referenced as `<<name>>`.
fn check_variable_name(ident: &Ident, name: &str, errors: &mut Errors) {
    if is_variable_name(name) {
        return;
    }
    let candidate = name.trim_start_matches('_').to_ascii_lowercase();
    let hint = if is_variable_name(&candidate) {
        format!(" (rename it `{candidate}`)")
    } else {
        String::new()
    };
    errors.at(
        ident.span(),
        format!(
            "invalid variable name `{name}`: a variable is named after its fn and referenced as `<<name>>`, \
             so the fn's name must match `{VARIABLE_NAME_GRAMMAR}`{hint}"
        ),
    );
}

/// The macros apply only to the items they can register; any other item is
/// rejected at its keyword.
fn reject_item(item: &Item, macro_name: &str, expected: &str, errors: &mut Errors) {
    let (keyword, what): (TokenStream, &str) = match item {
        Item::Const(item) => (item.const_token.to_token_stream(), "a `const`"),
        Item::Static(item) => (item.static_token.to_token_stream(), "a `static`"),
        Item::Fn(item) => (item.sig.fn_token.to_token_stream(), "a fn"),
        Item::Other(item) => other_item_keyword(item),
    };
    errors.over(
        keyword,
        format!("`#[{macro_name}]` cannot be applied to {what}; apply it to {expected}"),
    );
}

/// The keyword that introduces an item, and what the item is.
fn other_item_keyword(item: &syn::Item) -> (TokenStream, &'static str) {
    match item {
        syn::Item::Struct(item) => (item.struct_token.to_token_stream(), "a struct"),
        syn::Item::Enum(item) => (item.enum_token.to_token_stream(), "an enum"),
        syn::Item::Union(item) => (item.union_token.to_token_stream(), "a union"),
        syn::Item::Impl(item) => (item.impl_token.to_token_stream(), "an impl block"),
        syn::Item::Trait(item) => (item.trait_token.to_token_stream(), "a trait"),
        syn::Item::TraitAlias(item) => (item.trait_token.to_token_stream(), "a trait alias"),
        syn::Item::Type(item) => (item.type_token.to_token_stream(), "a type alias"),
        syn::Item::Mod(item) => (item.mod_token.to_token_stream(), "a module"),
        syn::Item::Use(item) => (item.use_token.to_token_stream(), "a `use` declaration"),
        syn::Item::ExternCrate(item) => (item.extern_token.to_token_stream(), "an `extern crate`"),
        syn::Item::ForeignMod(item) => (item.abi.to_token_stream(), "an `extern` block"),
        syn::Item::Macro(item) => (item.mac.path.to_token_stream(), "a macro item"),
        other => (other.to_token_stream(), "this item"),
    }
}

/// Whether `ty` is a path ending in `name` with no generic arguments
/// (`String`, `std::string::String`). The check is syntactic: the type
/// checker catches a different type of the same name in generated code.
fn is_path_to(ty: &Type, name: &str) -> bool {
    let Type::Path(path) = unwrap_type(ty) else {
        return false;
    };
    path.qself.is_none()
        && path
            .path
            .segments
            .last()
            .is_some_and(|segment| segment.ident == name && segment.arguments.is_none())
}

fn unwrap_type(mut ty: &Type) -> &Type {
    loop {
        match ty {
            Type::Group(group) => ty = &group.elem,
            Type::Paren(paren) => ty = &paren.elem,
            _ => return ty,
        }
    }
}
