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

/// One name grammar, and what it must accept and refuse.
struct Grammar {
    name: &'static str,
    /// The grammar as error messages state it, and as it must be.
    stated: &'static str,
    want_stated: &'static str,
    is_name: fn(&str) -> bool,
    /// The documented examples, and names it refuses.
    accepted: &'static [&'static str],
    rejected: &'static [&'static str],
    /// A one-character name is a name exactly when `starts` holds for it.
    starts: fn(char) -> bool,
    /// After the name `first`, a character continues a name exactly when
    /// `continues` holds for it: at the end (`{first}{c}`) and inside
    /// (`{first}{c}{first}`).
    first: &'static str,
    continues: fn(char) -> bool,
}

const GRAMMARS: [Grammar; 2] = [
    Grammar {
        name: "variable names",
        stated: VARIABLE_NAME_GRAMMAR,
        want_stated: "[a-z][a-z0-9_]*",
        is_name: is_variable_name,
        accepted: &["model", "cwd", "git_branch2", "a", "a_", "x9"],
        rejected: &[
            "", "Model", "mOdel", "2fa", "_x", "a-b", "a b", "a.b", "a:b", "modèle", " a",
        ],
        // A variable name starts with a lowercase ASCII letter...
        starts: |c| c.is_ascii_lowercase(),
        // ...and continues with lowercase letters, digits or underscores.
        first: "a",
        continues: |c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_',
    },
    Grammar {
        name: "section names",
        stated: SECTION_NAME_GRAMMAR,
        want_stated: "[A-Za-z][A-Za-z0-9_.:/-]*",
        is_name: is_section_name,
        accepted: &[
            "tool:bash",
            "agent:persona",
            "dsh_tool_bash::EXIT_CODE_HABIT",
            "A",
            "v1.2-rc",
            "project:crates/net/AGENTS.md",
        ],
        rejected: &[
            "",
            ":bash",
            "1tool",
            "_x",
            "-x",
            "tool bash",
            "/bash",
            "outil:répertoire",
        ],
        // A section name starts with an ASCII letter...
        starts: |c| c.is_ascii_alphabetic(),
        // ...and continues with letters, digits or separators.
        first: "A",
        continues: |c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '/' | '-'),
    },
];

#[test]
fn each_grammar_accepts_exactly_its_names() {
    for grammar in &GRAMMARS {
        let Grammar { name, is_name, .. } = *grammar;
        assert_eq!(grammar.stated, grammar.want_stated, "{name}");
        for accepted in grammar.accepted {
            assert!(is_name(accepted), "{name}: {accepted}");
        }
        for rejected in grammar.rejected {
            assert!(!is_name(rejected), "{name}: {rejected:?}");
        }
        let first = grammar.first;
        for c in characters() {
            let (starts, continues) = ((grammar.starts)(c), (grammar.continues)(c));
            assert_eq!(is_name(&c.to_string()), starts, "{name}: {c:?}");
            assert_eq!(is_name(&format!("{first}{c}")), continues, "{name}: {c:?}");
            assert_eq!(
                is_name(&format!("{first}{c}{first}")),
                continues,
                "{name}: {c:?}"
            );
        }
    }
}

#[test]
fn every_variable_name_is_a_section_name() {
    for name in ["model", "git_branch2", "a_"] {
        assert!(is_variable_name(name) && is_section_name(name), "{name}");
    }
}
