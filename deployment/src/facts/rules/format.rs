//! The four rule formats: where their files live, and what their
//! frontmatter says — read with a YAML parser, each key checked against
//! the format's own, so a key another tool spells differently is caught
//! ([`RuleProblem`]) instead of silently loading a rule always or never.

use serde_norway::Value;

use super::{Applies, RuleFormat, RuleProblem};

/// A rule file's frontmatter and body.
pub(super) struct Parsed {
    pub(super) applies: Applies,
    pub(super) description: Option<String>,
    /// The text after the frontmatter.
    pub(super) body: String,
    /// The body's first line in the file, from 1.
    pub(super) line: usize,
    pub(super) problems: Vec<RuleProblem>,
}

/// The keys each format reads, and the misspellings (or other tools'
/// keys) that mean one of them.
fn keys(
    format: RuleFormat,
) -> (
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
) {
    match format {
        RuleFormat::Cursor => (
            &["description", "globs", "alwaysApply"],
            &[
                ("glob", "globs"),
                ("paths", "globs"),
                ("path", "globs"),
                ("applyTo", "globs"),
                ("always", "alwaysApply"),
                ("alwaysapply", "alwaysApply"),
                ("always_apply", "alwaysApply"),
            ],
        ),
        RuleFormat::Copilot => (
            &["applyTo", "description", "excludeAgent"],
            &[
                ("applyto", "applyTo"),
                ("apply_to", "applyTo"),
                ("appliesTo", "applyTo"),
                ("globs", "applyTo"),
                ("glob", "applyTo"),
                ("paths", "applyTo"),
            ],
        ),
        RuleFormat::Claude => (
            &["paths", "description"],
            &[
                ("path", "paths"),
                ("globs", "paths"),
                ("glob", "paths"),
                ("applyTo", "paths"),
                ("files", "paths"),
            ],
        ),
        RuleFormat::Nested => (&[], &[]),
    }
}

/// Splits `text` into its frontmatter (between a first line `---` and the
/// next `---` line) and its body, with the body's first line.
fn split(text: &str) -> (Option<&str>, &str, usize) {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return (None, text, 1);
    };
    let mut offset = 0;
    for (index, line) in rest.split_inclusive('\n').enumerate() {
        if line.trim_end() == "---" {
            let body = &rest[offset + line.len()..];
            return (Some(&rest[..offset]), body, index + 3);
        }
        offset += line.len();
    }
    (None, text, 1)
}

/// Reads the frontmatter as YAML; failing that, as the `key: value`
/// lines Cursor itself writes (`globs: *.rs` is not YAML: `*` starts an
/// alias there), which is how Cursor reads it too.
fn mapping(front: &str) -> Result<Vec<(String, Value)>, String> {
    match serde_norway::from_str::<Value>(front) {
        Ok(Value::Mapping(map)) => Ok(map
            .into_iter()
            .filter_map(|(key, value)| Some((key.as_str()?.to_owned(), value)))
            .collect()),
        Ok(Value::Null) => Ok(Vec::new()),
        Ok(_) => Err("it is not a table of keys".to_owned()),
        Err(error) => front
            .lines()
            .filter(|line| !line.trim().is_empty() && !line.trim_start().starts_with('#'))
            .map(|line| {
                let (key, value) = line.split_once(':')?;
                let value = value.trim();
                let value = match value {
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    "" => Value::Null,
                    _ => Value::String(value.trim_matches(['"', '\'']).to_owned()),
                };
                Some((key.trim().to_owned(), value))
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| error.to_string()),
    }
}

/// The globs of a value: a list of strings, or one string of
/// comma-separated globs.
fn globs(value: &Value) -> Option<Vec<String>> {
    let split = |text: &str| -> Vec<String> {
        text.split(',')
            .map(str::trim)
            .filter(|glob| !glob.is_empty())
            .map(str::to_owned)
            .collect()
    };
    match value {
        Value::String(text) => Some(split(text)),
        Value::Sequence(items) => items
            .iter()
            .map(|item| item.as_str().map(split))
            .collect::<Option<Vec<_>>>()
            .map(|lists| lists.concat()),
        Value::Null => Some(Vec::new()),
        _ => None,
    }
}

/// Parses rule file `name` (its path from the project root) of `format`.
pub(super) fn parse(format: RuleFormat, name: &str, text: &str) -> Parsed {
    let (front, body, line) = split(text);
    let mut parsed = Parsed {
        applies: match format {
            RuleFormat::Cursor => Applies::Requested,
            _ => Applies::Always,
        },
        description: None,
        body: body.to_owned(),
        line,
        problems: Vec::new(),
    };
    let Some(front) = front else {
        return parsed;
    };
    let entries = match mapping(front) {
        Ok(entries) => entries,
        Err(error) => {
            parsed.problems.push(RuleProblem::new(
                name,
                2,
                format!(
                    "its frontmatter is not YAML ({error}); the rule is read as if it had none"
                ),
            ));
            return parsed;
        }
    };
    let (known, aliases) = keys(format);
    let (mut selector, mut always) = (None, false);
    for (index, (key, value)) in entries.iter().enumerate() {
        let key_line = key_line(front, key).unwrap_or(index + 2);
        match (format, key.as_str()) {
            (_, "description") => parsed.description = value.as_str().map(str::to_owned),
            (RuleFormat::Cursor, "globs")
            | (RuleFormat::Copilot, "applyTo")
            | (RuleFormat::Claude, "paths") => match globs(value) {
                Some(list) => selector = Some(list),
                None => parsed.problems.push(RuleProblem::new(
                    name,
                    key_line,
                    format!("`{key}` is neither a glob nor a list of globs; the key is ignored"),
                )),
            },
            (RuleFormat::Cursor, "alwaysApply") => always = value.as_bool() == Some(true),
            _ if known.contains(&key.as_str()) => {}
            _ => parsed
                .problems
                .push(unknown_key(format, name, key_line, key, known, aliases)),
        }
    }
    parsed.applies = match (format, selector) {
        (RuleFormat::Cursor, _) if always => Applies::Always,
        (_, Some(globs)) if !globs.is_empty() => Applies::Paths(globs),
        (RuleFormat::Cursor, _) => Applies::Requested,
        _ => Applies::Always,
    };
    parsed
}

/// The line, in the file, of `key` in the frontmatter `front`.
fn key_line(front: &str, key: &str) -> Option<usize> {
    front
        .lines()
        .position(|line| {
            line.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .map(|index| index + 2)
}

/// The problem of a key `format` does not read: the key meant, where one
/// is, and what the rule does without it.
fn unknown_key(
    format: RuleFormat,
    name: &str,
    line: usize,
    key: &str,
    known: &[&str],
    aliases: &[(&str, &str)],
) -> RuleProblem {
    let folded = |text: &str| text.to_ascii_lowercase().replace(['_', '-'], "");
    let meant = aliases
        .iter()
        .find(|(alias, _)| *alias == key)
        .map(|(_, meant)| *meant)
        .or_else(|| {
            known
                .iter()
                .copied()
                .find(|known| folded(known) == folded(key))
        });
    let without = match format {
        RuleFormat::Cursor => "Without `globs` or `alwaysApply: true` the rule is never applied.",
        RuleFormat::Copilot => "Without `applyTo` the rule applies always.",
        RuleFormat::Claude => "Without `paths` the rule applies always.",
        RuleFormat::Nested => "",
    };
    let message = match meant {
        Some(meant) => format!(
            "unknown frontmatter key `{key}` for a {format} rule: did you mean `{meant}`? {without}"
        ),
        None => format!(
            "unknown frontmatter key `{key}` for a {format} rule (it reads {}). {without}",
            known
                .iter()
                .map(|key| format!("`{key}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    RuleProblem::new(name, line, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_reads_its_own_key() {
        let cursor = parse(
            RuleFormat::Cursor,
            "r.mdc",
            "---\ndescription: Rust\nglobs: \"**/*.rs\"\nalwaysApply: false\n---\nUse anyhow.\n",
        );
        assert_eq!(cursor.applies, Applies::Paths(vec!["**/*.rs".into()]));
        assert_eq!(cursor.body, "Use anyhow.\n");
        assert_eq!(cursor.line, 6);
        assert!(cursor.problems.is_empty());
        let copilot = parse(
            RuleFormat::Copilot,
            "t.instructions.md",
            "---\napplyTo: \"tests/**/*.py, conftest.py\"\n---\nUse pytest.\n",
        );
        assert_eq!(
            copilot.applies,
            Applies::Paths(vec!["tests/**/*.py".into(), "conftest.py".into()])
        );
        let claude = parse(
            RuleFormat::Claude,
            "d.md",
            "---\npaths:\n  - \"docs/**\"\n---\nWrite plainly.\n",
        );
        assert_eq!(claude.applies, Applies::Paths(vec!["docs/**".into()]));
        let always = parse(RuleFormat::Claude, "a.md", "Always this.\n");
        assert_eq!(always.applies, Applies::Always);
    }

    #[test]
    fn cursors_unquoted_globs_read_as_cursor_reads_them() {
        let parsed = parse(
            RuleFormat::Cursor,
            "r.mdc",
            "---\nglobs: *.ts,*.tsx\nalwaysApply: false\n---\nx\n",
        );
        assert_eq!(
            parsed.applies,
            Applies::Paths(vec!["*.ts".into(), "*.tsx".into()])
        );
        assert!(parsed.problems.is_empty());
    }

    #[test]
    fn another_tools_key_is_named_with_the_right_one_and_its_line() {
        let parsed = parse(
            RuleFormat::Claude,
            ".claude/rules/docs.md",
            "---\ndescription: docs\npath: \"docs/**\"\n---\nx\n",
        );
        assert_eq!(parsed.applies, Applies::Always);
        let [problem] = parsed.problems.as_slice() else {
            panic!("{:?}", parsed.problems.len());
        };
        assert_eq!(problem.line, 3);
        assert!(
            problem.message.contains("`path`")
                && problem.message.contains("did you mean `paths`?")
                && problem.message.contains("the rule applies always"),
            "{}",
            problem.message
        );
        let copilot = parse(RuleFormat::Copilot, "x", "---\napplyto: \"*.py\"\n---\nx\n");
        assert!(
            copilot.problems[0]
                .message
                .contains("did you mean `applyTo`?")
        );
    }
}
