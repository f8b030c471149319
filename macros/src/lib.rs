//! Placeholder entry points, replaced by the real macros.
use proc_macro::TokenStream;

#[proc_macro_attribute]
pub fn prompt_section(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}

#[proc_macro_attribute]
pub fn prompt_variable(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}

#[proc_macro]
pub fn prompt_template(input: TokenStream) -> TokenStream {
    input
}
