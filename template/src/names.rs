//! The grammars of variable and section names.

/// The grammar of a variable name, for error messages.
pub const VARIABLE_NAME_GRAMMAR: &str = "[a-z][a-z0-9_]*";

/// The grammar of a section name, for error messages.
pub const SECTION_NAME_GRAMMAR: &str = "[A-Za-z][A-Za-z0-9_.:/-]*";

/// Whether `name` is a valid variable name: `[a-z][a-z0-9_]*`.
///
/// ```
/// use dsh_prompt_template::is_variable_name;
///
/// assert!(is_variable_name("model"));
/// assert!(is_variable_name("git_branch2"));
/// assert!(!is_variable_name("Model"));
/// assert!(!is_variable_name("2fa"));
/// assert!(!is_variable_name(""));
/// ```
pub fn is_variable_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Whether `name` is a valid section name: an ASCII letter, then ASCII
/// letters, digits, `_`, `.`, `:`, `/` or `-` (`tool:bash`, `agent:persona`,
/// `my_crate::guidance::HABIT`, `project:crates/net/AGENTS.md` — a
/// project's instruction file is named by its path).
///
/// ```
/// use dsh_prompt_template::is_section_name;
///
/// assert!(is_section_name("tool:bash"));
/// assert!(is_section_name("dsh_tool_bash::EXIT_CODE_HABIT"));
/// assert!(is_section_name("project:crates/net/AGENTS.md"));
/// assert!(!is_section_name("tool bash"));
/// assert!(!is_section_name(":bash"));
/// assert!(!is_section_name(""));
/// ```
pub fn is_section_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'/' | b'-'))
}
