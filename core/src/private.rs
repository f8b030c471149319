//! Support for the code the macros generate. Not public API: anything here
//! may change in any release.

pub use crate::AssembleContext;
pub use crate::statics::{StaticContext, StaticOwner, StaticSection, StaticText, StaticVariable};
pub use inventory;

/// Implemented by the marker type `#[prompt_variable]` declares beside each
/// variable function, so that a `<<name>>` in a section literal is checked
/// by Rust's own name resolution.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a prompt variable",
    label = "referenced as `<<…>>` in a prompt section, but not declared with `#[prompt_variable]`",
    note = "declare it with `#[prompt_variable] fn name(cx: &AssembleContext) -> Option<String>`, \
            or import the variable from the crate that owns it (`use owner_crate::name;`)"
)]
pub trait PromptVariable {}

/// Compiles only when `T` is a prompt variable.
pub const fn assert_prompt_variable<T: PromptVariable + ?Sized>() {}

/// What a `#[prompt_variable]` fn may return: `Option<String>` (no value
/// for this assembly is `None`), or `String` (always a value).
pub trait IntoVariableValue {
    /// The value as the registry stores it.
    fn into_variable_value(self) -> Option<String>;
}

impl IntoVariableValue for Option<String> {
    fn into_variable_value(self) -> Option<String> {
        self
    }
}

impl IntoVariableValue for String {
    fn into_variable_value(self) -> Option<String> {
        Some(self)
    }
}

/// Writes the section constructors `#[prompt_section]` calls, one a kind
/// of text: one call with literal arguments, which is fewer tokens for
/// the compiler to parse, resolve and check than the struct literal it
/// stands for, once per section (see `benches/BUILD_RESULTS.md`). The
/// parameters, in the order the macro writes the arguments, are stated
/// here once for both. `""` as `name` or `tool` stands for none: the
/// macro rejects an empty one, so it never means a name.
macro_rules! section_constructors {
    ($($(#[$doc:meta])* $constructor:ident($text:ty) => $variant:ident;)*) => {$(
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)] // One a field; the macro writes the call.
        pub const fn $constructor(
            name: &'static str,
            order: i32,
            tool: &'static str,
            text: $text,
            krate: &'static str,
            module: &'static str,
            item: &'static str,
            file: &'static str,
            line: u32,
        ) -> StaticSection {
            StaticSection {
                name: non_empty(name),
                order,
                tool: non_empty(tool),
                text: StaticText::$variant(text),
                owner: StaticOwner {
                    krate,
                    module,
                    item,
                    file,
                    line,
                },
                complete: false,
            }
        }
    )*};
}

section_constructors! {
    /// A section whose text is a `const` or `static`, as `#[prompt_section]`
    /// writes it.
    fixed_section(&'static str) => Fixed;
    /// A section whose text a fn computes, as `#[prompt_section]` writes it.
    provided_section(fn(&AssembleContext) -> String) => Provided;
}

const fn non_empty(text: &'static str) -> Option<&'static str> {
    if text.is_empty() { None } else { Some(text) }
}
