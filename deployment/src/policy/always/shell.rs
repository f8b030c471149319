//! A bash command read with tree-sitter-bash: the simple commands in it,
//! and whether it is nothing but simple commands an "always" answer can
//! cover.
//!
//! tree-sitter gives the structure; the words are then checked again by
//! hand against bash's own quoting rules (what `$`, a backquote, a quote
//! or an operator character does where it stands), so that a place where
//! the grammar and bash might read a word differently makes the command
//! not [`Reading::plain`] rather than covered.

use tree_sitter::{Node, Parser};

/// The longest command parsed. tree-sitter's error recovery can take
/// more than linear time on long malformed input; a longer command is
/// remembered by its exact text.
const MAX_PARSED_BYTES: usize = 64 * 1024;

/// Bash's reserved words that the grammar parses as a command's name
/// (`time ls`, `coproc ls`) or could: written bare in a command's
/// place, they are not a program, and the command is not plain.
pub(super) const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "in", "function", "time", "coproc",
];

/// One word of a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Word {
    /// A word the text alone fixes: its value, quotes and escapes removed
    /// (`'ls'` and `l\s` are `ls`).
    Literal(String),
    /// A word bash computes as it runs: a `$NAME` in it, a glob, a brace
    /// or a tilde, an ANSI-C string.
    Expanded,
}

impl Word {
    /// The word's value, when the text fixes it.
    pub(super) fn literal(&self) -> Option<&str> {
        match self {
            Word::Literal(value) => Some(value),
            Word::Expanded => None,
        }
    }
}

/// A simple command: its program and arguments, never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SimpleCommand {
    /// The words: the program first.
    pub(super) words: Vec<Word>,
}

impl SimpleCommand {
    /// The program, when its word is literal.
    pub(super) fn program(&self) -> Option<&str> {
        self.words.first().and_then(Word::literal)
    }

    /// The words after the program.
    pub(super) fn arguments(&self) -> &[Word] {
        self.words.get(1..).unwrap_or_default()
    }

    /// Every word's value, when each is literal.
    pub(super) fn argv(&self) -> Option<Vec<&str>> {
        self.words.iter().map(Word::literal).collect()
    }
}

/// A command as read.
#[derive(Debug, Clone, Default)]
pub(super) struct Reading {
    /// Every simple command found anywhere: also inside substitutions,
    /// subshells and functions, and in a command with syntax errors (as
    /// far as the parser recovered it). For rejecting, where seeing more
    /// is safe.
    pub(super) seen: Vec<SimpleCommand>,
    /// The simple commands, in order, when the command is nothing else:
    /// simple commands joined by `;`, a newline, `&&`, `||`, `|` or `|&`,
    /// without variable assignments, with no substitution, no `${…}`
    /// or arithmetic expansion, no heredoc, no comment, no background
    /// `&`, and no redirection but reading (`<`, `<<<`), duplicating or
    /// closing a descriptor (`2>&1`, `>&-`) and writing to `/dev/null`.
    /// `None` otherwise, and when the command does not parse.
    pub(super) plain: Option<Vec<SimpleCommand>>,
}

/// Reads `command`. Never fails: what is not understood is not plain.
pub(super) fn read(command: &str) -> Reading {
    if command.len() > MAX_PARSED_BYTES {
        return Reading::default();
    }
    // Bash separates words only by spaces, tabs and newlines; a carriage
    // return, another control character or another blank the grammar
    // might take for a separator is part of a word to bash.
    let unusual =
        |c: char| (c.is_whitespace() || c.is_control()) && !matches!(c, ' ' | '\t' | '\n');
    let mut parser = Parser::new();
    if parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .is_err()
    {
        return Reading::default();
    }
    let Some(tree) = parser.parse(command, None) else {
        return Reading::default();
    };
    let root = tree.root_node();
    Reading {
        seen: seen(root, command),
        plain: if root.has_error() || command.contains(unusual) {
            None
        } else {
            plain(root, command)
        },
    }
}

/// A node's text; `None` for a range that is not a `str` boundary, which
/// tree-sitter does not give for valid UTF-8.
fn text<'s>(node: Node<'_>, source: &'s str) -> Option<&'s str> {
    source.get(node.byte_range())
}

/// Every simple command in the tree, in a pre-order walk (a cursor, not
/// recursion: a long `&&` chain nests as deep as it is long).
fn seen(root: Node<'_>, source: &str) -> Vec<SimpleCommand> {
    let mut found = Vec::new();
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        match node.kind() {
            "command" => {
                let simple = simple(node, source);
                if !simple.words.is_empty() {
                    found.push(SimpleCommand {
                        words: simple.words,
                    });
                }
            }
            // `export`, `declare`, `local`, `unset`…: the parser's own nodes,
            // seen by their first word.
            "declaration_command" | "unset_command" => {
                if let Some(word) = node.child(0).and_then(|first| text(first, source)) {
                    found.push(SimpleCommand {
                        words: vec![Word::Literal(word.to_owned())],
                    });
                }
            }
            _ => {}
        }
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return found;
            }
        }
    }
}

/// The simple commands of a command that is nothing but them, in order;
/// `None` at the first thing that is not.
fn plain(root: Node<'_>, source: &str) -> Option<Vec<SimpleCommand>> {
    let mut commands = Vec::new();
    // Children pushed in reverse, so commands come off in source order.
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        match node.kind() {
            "program" | "list" | "pipeline" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
                for child in children.into_iter().rev() {
                    if child.is_named() {
                        stack.push(child);
                    } else if !matches!(child.kind(), ";" | "&&" | "||" | "|" | "|&") {
                        return None;
                    }
                }
            }
            "redirected_statement" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
                for child in children.into_iter().rev() {
                    if is_redirect(child.kind()) {
                        if !harmless_redirect(child, source) {
                            return None;
                        }
                    } else if child.is_named() {
                        stack.push(child);
                    } else {
                        return None;
                    }
                }
            }
            "command" => {
                let simple = simple(node, source);
                if !simple.plain || simple.words.is_empty() {
                    return None;
                }
                commands.push(SimpleCommand {
                    words: simple.words,
                });
            }
            _ => return None,
        }
    }
    (!commands.is_empty()).then_some(commands)
}

/// A `command` node read: its words, and whether nothing in it keeps it
/// from being plain.
struct Simple {
    words: Vec<Word>,
    plain: bool,
}

/// Reads one `command` node: `command_name`, then arguments and
/// redirections; a variable assignment or anything else makes it not
/// plain.
fn simple(node: Node<'_>, source: &str) -> Simple {
    let mut words = Vec::new();
    let mut plain = true;
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        let kind = child.kind();
        let word = if kind == "command_name" {
            // The name is first, one word, and no bare reserved word.
            plain &= words.is_empty() && child.named_child_count() == 1 && child.child_count() == 1;
            let name = child.named_child(0);
            plain &= !name.is_some_and(|name| {
                name.kind() == "word"
                    && text(name, source).is_some_and(|name| RESERVED.contains(&name))
            });
            name.map(|name| classify(name, source))
        } else if is_word(kind) {
            plain &= !words.is_empty();
            Some(classify(child, source))
        } else if is_redirect(kind) {
            plain &= harmless_redirect(child, source);
            None
        } else {
            plain = false;
            None
        };
        match word {
            Some(Class::Literal(value)) => words.push(Word::Literal(value)),
            Some(Class::Expanded) => words.push(Word::Expanded),
            Some(Class::Forbidden) => {
                plain = false;
                words.push(Word::Expanded);
            }
            None => {}
        }
    }
    Simple { words, plain }
}

/// The node kinds a word (an argument, or a redirection's target) may be.
fn is_word(kind: &str) -> bool {
    matches!(
        kind,
        "word"
            | "number"
            | "string"
            | "raw_string"
            | "ansi_c_string"
            | "simple_expansion"
            | "concatenation"
            // Forbidden when classified, and seen here so that a
            // substitution is one.
            | "expansion"
            | "command_substitution"
            | "process_substitution"
            | "arithmetic_expansion"
            | "translated_string"
            | "brace_expression"
    )
}

/// The node kinds of a redirection.
fn is_redirect(kind: &str) -> bool {
    matches!(
        kind,
        "file_redirect" | "herestring_redirect" | "heredoc_redirect"
    )
}

/// Whether a redirection only reads (`< file`, `<<< word`), duplicates or
/// closes a descriptor (`2>&1`, `>&2`, `<&-`), or writes to `/dev/null`.
/// A heredoc is none of these: its body is where the grammar and bash
/// could most easily part (an unquoted one is expanded), so it is left
/// to an exact answer.
fn harmless_redirect(node: Node<'_>, source: &str) -> bool {
    let mut operator = None;
    let mut targets = Vec::new();
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        match child.kind() {
            "file_descriptor" => {
                let digits = text(child, source).unwrap_or_default();
                if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
                    return false;
                }
            }
            kind if !child.is_named() && operator.is_none() => operator = Some(kind),
            kind if is_word(kind) => targets.push(classify(child, source)),
            _ => return false,
        }
    }
    match (node.kind(), operator, &targets[..]) {
        ("herestring_redirect", Some("<<<"), [target]) => *target != Class::Forbidden,
        ("file_redirect", Some("<"), [target]) => *target != Class::Forbidden,
        ("file_redirect", Some(">" | ">>" | "&>" | "&>>" | ">|"), [Class::Literal(target)]) => {
            target == "/dev/null"
        }
        ("file_redirect", Some(">&" | "<&"), [Class::Literal(target)]) => {
            target == "-"
                || (!target.is_empty() && target.bytes().all(|byte| byte.is_ascii_digit()))
        }
        ("file_redirect", Some(">&-" | "<&-"), []) => true,
        _ => false,
    }
}

/// What a word node is to the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Class {
    /// Fixed by the text: the value.
    Literal(String),
    /// Computed when run, harmlessly: `$NAME`, a glob, a brace, a tilde.
    Expanded,
    /// Runs something, assigns, evaluates arithmetic, or cannot be
    /// vouched for.
    Forbidden,
}

impl Class {
    /// Two parts of one word, together.
    fn join(self, next: Class) -> Class {
        match (self, next) {
            (Class::Forbidden, _) | (_, Class::Forbidden) => Class::Forbidden,
            (Class::Literal(mut value), Class::Literal(more)) => {
                value.push_str(&more);
                Class::Literal(value)
            }
            _ => Class::Expanded,
        }
    }
}

/// Classifies a word node.
fn classify(node: Node<'_>, source: &str) -> Class {
    if node.kind() != "concatenation" {
        return classify_part(node, source);
    }
    // The parts of a concatenation follow each other with nothing between.
    let mut class = Class::Literal(String::new());
    let mut end = node.start_byte();
    let mut cursor = node.walk();
    for part in node.children(&mut cursor) {
        if part.start_byte() != end || part.kind() == "concatenation" {
            return Class::Forbidden;
        }
        end = part.end_byte();
        class = class.join(classify_part(part, source));
    }
    if end != node.end_byte() {
        return Class::Forbidden;
    }
    class
}

/// Classifies a word node that is not a concatenation.
fn classify_part(node: Node<'_>, source: &str) -> Class {
    let Some(text) = text(node, source) else {
        return Class::Forbidden;
    };
    match node.kind() {
        "word" | "number" => unquoted(text),
        "raw_string" => match text
            .strip_prefix('\'')
            .and_then(|rest| rest.strip_suffix('\''))
        {
            Some(inner) if !inner.contains('\'') => Class::Literal(inner.to_owned()),
            _ => Class::Forbidden,
        },
        "string" => {
            let mut cursor = node.walk();
            let known = node
                .children(&mut cursor)
                .all(|child| matches!(child.kind(), "\"" | "string_content" | "simple_expansion"));
            if known {
                double_quoted(text)
            } else {
                Class::Forbidden
            }
        }
        "ansi_c_string" => ansi_c(text),
        "simple_expansion" => simple_expansion(text),
        _ => Class::Forbidden,
    }
}

/// An unquoted word, by bash's rules: a backslash quotes the next
/// character (and joins lines before a newline); globs, braces and
/// tildes expand; quotes, `$`, backquotes, operator characters and
/// blanks do not belong in one word node, so they make it forbidden.
fn unquoted(text: &str) -> Class {
    if text.is_empty() || text.starts_with('#') {
        return Class::Forbidden;
    }
    let mut value = String::with_capacity(text.len());
    let mut expanded = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(escaped) => value.push(escaped),
                None => return Class::Forbidden,
            },
            '*' | '?' | '[' | '{' | '}' | '~' => {
                expanded = true;
                value.push(c);
            }
            '$' | '`' | '\'' | '"' | '(' | ')' | '<' | '>' | '|' | '&' | ';' => {
                return Class::Forbidden;
            }
            c if c.is_whitespace() || c.is_control() => return Class::Forbidden,
            c => value.push(c),
        }
    }
    if expanded {
        Class::Expanded
    } else {
        Class::Literal(value)
    }
}

/// A double-quoted string, quotes included, by bash's rules: a backslash
/// quotes only `$`, a backquote, `"`, `\` and a newline; `$NAME` (and
/// `$1`, `$@`…) expands harmlessly; `$(`, `${`, `$[`, a backquote or an
/// unescaped `"` inside make it forbidden.
fn double_quoted(text: &str) -> Class {
    let Some(inner) = text
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
    else {
        return Class::Forbidden;
    };
    let mut value = String::with_capacity(inner.len());
    let mut expanded = false;
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped @ ('$' | '`' | '"' | '\\')) => value.push(escaped),
                Some('\n') => {}
                Some(other) => {
                    value.push('\\');
                    value.push(other);
                }
                None => return Class::Forbidden,
            },
            '"' | '`' => return Class::Forbidden,
            '$' => match chars.peek() {
                Some(next) if next.is_ascii_alphanumeric() || "_@*#?-$!".contains(*next) => {
                    expanded = true;
                }
                Some('(' | '{' | '[' | '\'' | '"') => return Class::Forbidden,
                _ => value.push('$'),
            },
            c => value.push(c),
        }
    }
    if expanded {
        Class::Expanded
    } else {
        Class::Literal(value)
    }
}

/// An ANSI-C string (`$'…'`): expanded (its escapes are not decoded
/// here), when it ends where bash ends it.
fn ansi_c(text: &str) -> Class {
    let Some(inner) = text
        .strip_prefix("$'")
        .and_then(|rest| rest.strip_suffix('\''))
    else {
        return Class::Forbidden;
    };
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.next().is_none() => return Class::Forbidden,
            '\'' => return Class::Forbidden,
            _ => {}
        }
    }
    Class::Expanded
}

/// `$NAME`, `$1`, `$@`…: a parameter's value, harmless to expand.
fn simple_expansion(text: &str) -> Class {
    let Some(name) = text.strip_prefix('$') else {
        return Class::Forbidden;
    };
    let special = name.len() == 1 && "@*#?-$!0123456789".contains(name);
    let variable = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if special || variable {
        Class::Expanded
    } else {
        Class::Forbidden
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain reading's words, each a literal's value or `*` for an
    /// expanded one; `None` when not plain.
    fn plain_words(command: &str) -> Option<Vec<Vec<String>>> {
        let commands = read(command).plain?;
        Some(
            commands
                .iter()
                .map(|simple| {
                    (simple.words.iter())
                        .map(|word| word.literal().unwrap_or("*").to_owned())
                        .collect()
                })
                .collect(),
        )
    }

    fn words(list: &[&[&str]]) -> Option<Vec<Vec<String>>> {
        Some(
            list.iter()
                .map(|simple| simple.iter().map(|word| (*word).to_owned()).collect())
                .collect(),
        )
    }

    #[test]
    fn lists_and_pipelines_are_plain_simple_commands_in_order() {
        assert_eq!(plain_words("ls -la"), words(&[&["ls", "-la"]]));
        assert_eq!(
            plain_words("  cargo fmt && cargo test || echo no; ls | wc -l\npwd"),
            words(&[
                &["cargo", "fmt"],
                &["cargo", "test"],
                &["echo", "no"],
                &["ls"],
                &["wc", "-l"],
                &["pwd"]
            ])
        );
    }

    #[test]
    fn quotes_and_escapes_are_removed_and_expansions_marked() {
        assert_eq!(
            plain_words(r#"'ls' l\s "a b" 'c d' --x="$Y" *.rs "\$(x)" ~ $'x' a\ b"#),
            words(&[&["ls", "ls", "a b", "c d", "*", "*", "$(x)", "*", "*", "a b"]])
        );
        assert_eq!(plain_words("ls \\\n-la"), words(&[&["ls", "-la"]]));
    }

    #[test]
    fn reading_redirections_and_dev_null_are_plain_writing_ones_are_not() {
        for command in [
            "ls < in",
            "ls 2>&1",
            "ls >&2",
            "ls 2>/dev/null",
            "ls &>/dev/null",
            "ls >>/dev/null",
            "grep x <<< \"$Y\"",
            "ls <&-",
        ] {
            assert!(read(command).plain.is_some(), "{command}");
        }
        for command in [
            "ls > P",
            "ls >> P",
            "ls &> P",
            "ls >| P",
            "ls <> P",
            "ls 3>P",
            "ls >&P",
            "ls > $X",
            "cat <<'EOF'\nx\nEOF",
            "cat <<EOF\n$(touch P)\nEOF",
        ] {
            assert!(read(command).plain.is_none(), "{command}");
        }
    }

    #[test]
    fn anything_else_is_not_plain() {
        for command in [
            "",
            "   ",
            "# just a comment",
            "ls # comment",
            "ls &",
            "ls & touch P",
            "ls $(touch P)",
            "ls `touch P`",
            "ls \"$(touch P)\"",
            "ls <(touch P)",
            "ls ${X}",
            "ls ${X@P}",
            "ls $((1 + 1))",
            "FOO=1 ls",
            "X=1",
            "export X=1",
            "(ls)",
            "{ ls; }",
            "! ls",
            "if ls; then ls; fi",
            "f() { ls; }",
            "[[ -f x ]]",
            "ls '",
            "ls &&",
            "ls \"a",
            "time ls",
            "coproc ls",
            "ls\r",
            "ls\u{a0}-la",
        ] {
            assert!(read(command).plain.is_none(), "{command:?}");
        }
    }

    #[test]
    fn commands_are_seen_inside_substitutions_and_broken_commands() {
        let programs = |command: &str| -> Vec<String> {
            (read(command).seen.iter())
                .filter_map(|simple| simple.program().map(str::to_owned))
                .collect()
        };
        assert_eq!(programs("ls $(rm -rf /)"), ["ls", "rm"]);
        assert_eq!(programs("echo `rm x` > P; (rm y)"), ["echo", "rm", "rm"]);
        assert_eq!(programs("rm -rf / '"), ["rm"]);
        assert_eq!(programs("export X=1; unset Y"), ["export", "unset"]);
    }

    #[test]
    fn deep_nesting_and_long_input_do_not_overflow() {
        let chain = vec!["ls"; 10_000].join(" && ");
        assert_eq!(
            read(&chain).plain.map(|commands| commands.len()),
            Some(10_000)
        );
        let nested = "$(".repeat(5_000);
        assert!(read(&nested).plain.is_none());
        let long = "x".repeat(MAX_PARSED_BYTES + 1);
        assert!(read(&long).plain.is_none());
    }
}
