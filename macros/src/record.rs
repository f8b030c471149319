//! Recording the attributes' expansions: with `DSH_MACROS_EXPANSION` set
//! to a file, each expansion of `#[prompt_section]`, `#[prompt_context]`
//! and `#[prompt_variable]` (the user's item and what the attribute adds)
//! is appended to it as one line of Rust.
//!
//! The build benchmark (`benches/build-bench/run.sh`) compiles a crate of
//! the attributes once with it set, and measures the recorded file as the
//! macros' output without running them: a copy of the expansion written by
//! hand would drift from `expand.rs`. Unset, as in every other build, it
//! costs one look-up of the variable per crate.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::OnceLock;

use proc_macro2::TokenStream;
use quote::quote;

/// The environment variable naming the file expansions are appended to.
const VARIABLE: &str = "DSH_MACROS_EXPANSION";

/// `expansion`, appended to the file `DSH_MACROS_EXPANSION` names when it
/// is set; when that file cannot be written, the expansion and an error
/// saying so, since a recording that silently misses items would measure
/// another crate.
pub(crate) fn expansion(expansion: TokenStream) -> TokenStream {
    // Read once: the macro crate stays loaded for the whole crate.
    static FILE: OnceLock<Option<PathBuf>> = OnceLock::new();
    let Some(path) = FILE.get_or_init(|| std::env::var_os(VARIABLE).map(PathBuf::from)) else {
        return expansion;
    };
    let written = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| writeln!(file, "{expansion}"));
    match written {
        Ok(()) => expansion,
        Err(error) => {
            let message = format!(
                "cannot append this expansion to `{}` ({VARIABLE}): {error}",
                path.display()
            );
            quote! {
                #expansion
                ::core::compile_error!(#message);
            }
        }
    }
}
