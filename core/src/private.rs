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
