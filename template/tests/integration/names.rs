//! The name grammars: variables `[a-z][a-z0-9_]*`, sections
//! `[A-Za-z][A-Za-z0-9_.:-]*`, checked against every ASCII character and
//! some non-ASCII ones.

use dsh_prompt_template::{
    SECTION_NAME_GRAMMAR, VARIABLE_NAME_GRAMMAR, is_section_name, is_variable_name,
};

/// Every ASCII character and a few non-ASCII look-alikes.
fn characters() -> impl Iterator<Item = char> {
    (0u8..128)
        .map(char::from)
        .chain(['é', 'ß', 'ı', 'Ａ', 'а', '٣', '\u{0}'])
}

#[test]
fn the_grammars_are_stated_for_error_messages() {
    assert_eq!(VARIABLE_NAME_GRAMMAR, "[a-z][a-z0-9_]*");
    assert_eq!(SECTION_NAME_GRAMMAR, "[A-Za-z][A-Za-z0-9_.:-]*");
}

#[test]
fn variable_names_accept_the_documented_examples() {
    for name in ["model", "cwd", "git_branch2", "a", "a_", "x9"] {
        assert!(is_variable_name(name), "{name}");
    }
    for name in [
        "", "Model", "mOdel", "2fa", "_x", "a-b", "a b", "a.b", "a:b", "modèle", " a",
    ] {
        assert!(!is_variable_name(name), "{name:?}");
    }
}

#[test]
fn a_variable_name_starts_with_a_lowercase_ascii_letter() {
    for c in characters() {
        assert_eq!(
            is_variable_name(&c.to_string()),
            c.is_ascii_lowercase(),
            "{c:?}"
        );
    }
}

#[test]
fn a_variable_name_continues_with_lowercase_letters_digits_or_underscores() {
    for c in characters() {
        let expected = c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
        assert_eq!(is_variable_name(&format!("a{c}")), expected, "{c:?}");
        assert_eq!(is_variable_name(&format!("a{c}b")), expected, "{c:?}");
    }
}

#[test]
fn section_names_accept_the_documented_examples() {
    for name in [
        "tool:bash",
        "agent:persona",
        "dsh_tool_bash::EXIT_CODE_HABIT",
        "A",
        "v1.2-rc",
    ] {
        assert!(is_section_name(name), "{name}");
    }
    for name in [
        "",
        ":bash",
        "1tool",
        "_x",
        "-x",
        "tool bash",
        "tool/bash",
        "outil:répertoire",
    ] {
        assert!(!is_section_name(name), "{name:?}");
    }
}

#[test]
fn a_section_name_starts_with_an_ascii_letter() {
    for c in characters() {
        assert_eq!(
            is_section_name(&c.to_string()),
            c.is_ascii_alphabetic(),
            "{c:?}"
        );
    }
}

#[test]
fn a_section_name_continues_with_letters_digits_or_separators() {
    for c in characters() {
        let expected = c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-');
        assert_eq!(is_section_name(&format!("A{c}")), expected, "{c:?}");
    }
}

#[test]
fn every_variable_name_is_a_section_name() {
    for name in ["model", "git_branch2", "a_"] {
        assert!(is_variable_name(name) && is_section_name(name), "{name}");
    }
}
