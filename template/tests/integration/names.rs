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

/// `is_name` holds for every name of `accepted` and none of `rejected`.
fn assert_names(is_name: fn(&str) -> bool, accepted: &[&str], rejected: &[&str]) {
    for name in accepted {
        assert!(is_name(name), "{name}");
    }
    for name in rejected {
        assert!(!is_name(name), "{name:?}");
    }
}

/// A one-character name is a name exactly when `starts` holds for it.
fn assert_first_characters(is_name: fn(&str) -> bool, starts: fn(char) -> bool) {
    for c in characters() {
        assert_eq!(is_name(&c.to_string()), starts(c), "{c:?}");
    }
}

/// After the name `first`, a character continues a name exactly when
/// `continues` holds for it: at the end (`{first}{c}`) and inside
/// (`{first}{c}{first}`).
fn assert_later_characters(is_name: fn(&str) -> bool, first: &str, continues: fn(char) -> bool) {
    for c in characters() {
        assert_eq!(is_name(&format!("{first}{c}")), continues(c), "{c:?}");
        assert_eq!(
            is_name(&format!("{first}{c}{first}")),
            continues(c),
            "{c:?}"
        );
    }
}

#[test]
fn the_grammars_are_stated_for_error_messages() {
    assert_eq!(VARIABLE_NAME_GRAMMAR, "[a-z][a-z0-9_]*");
    assert_eq!(SECTION_NAME_GRAMMAR, "[A-Za-z][A-Za-z0-9_.:/-]*");
}

#[test]
fn variable_names_accept_the_documented_examples() {
    assert_names(
        is_variable_name,
        &["model", "cwd", "git_branch2", "a", "a_", "x9"],
        &[
            "", "Model", "mOdel", "2fa", "_x", "a-b", "a b", "a.b", "a:b", "modèle", " a",
        ],
    );
}

#[test]
fn a_variable_name_starts_with_a_lowercase_ascii_letter() {
    assert_first_characters(is_variable_name, |c| c.is_ascii_lowercase());
}

#[test]
fn a_variable_name_continues_with_lowercase_letters_digits_or_underscores() {
    assert_later_characters(is_variable_name, "a", |c| {
        c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'
    });
}

#[test]
fn section_names_accept_the_documented_examples() {
    assert_names(
        is_section_name,
        &[
            "tool:bash",
            "agent:persona",
            "dsh_tool_bash::EXIT_CODE_HABIT",
            "A",
            "v1.2-rc",
            "project:crates/net/AGENTS.md",
        ],
        &[
            "",
            ":bash",
            "1tool",
            "_x",
            "-x",
            "tool bash",
            "/bash",
            "outil:répertoire",
        ],
    );
}

#[test]
fn a_section_name_starts_with_an_ascii_letter() {
    assert_first_characters(is_section_name, |c| c.is_ascii_alphabetic());
}

#[test]
fn a_section_name_continues_with_letters_digits_or_separators() {
    assert_later_characters(is_section_name, "A", |c| {
        c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '/' | '-')
    });
}

#[test]
fn every_variable_name_is_a_section_name() {
    for name in ["model", "git_branch2", "a_"] {
        assert!(is_variable_name(name) && is_section_name(name), "{name}");
    }
}
