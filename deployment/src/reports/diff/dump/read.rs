//! Reading a dump back as a side of a diff: its version checked, its
//! prefix parsed and checked, every problem located in the file.

use std::ops::Range;

use serde::Deserialize;

use super::DUMP_FORMAT_VERSION;
use crate::problem::{Problem, SourceFile};
use crate::reports::diff::Prefix;

/// What a dump is read as: its version, and its prefix. The other keys
/// of `dsh prompt --format json` are for people and other programs.
#[derive(Deserialize)]
struct Dump {
    format_version: Option<u32>,
    prefix: Option<Prefix>,
}

/// The prefix of the dump `file`, or the problem that makes it none,
/// located in the file.
pub(in crate::reports::diff) fn read_dump(file: &SourceFile) -> Result<Prefix, Problem> {
    let text = file.text();
    let deserializer = &mut serde_json::Deserializer::from_str(text);
    let dump: Dump = serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let at = offset_of(text, error.inner().line(), error.inner().column());
        let message = error.inner().to_string();
        let message = message
            .rsplit_once(" at line ")
            .map_or(&*message, |(m, _)| m);
        let path = error.path().to_string();
        let whose = if path == "." {
            String::new()
        } else {
            format!(" (`{path}`)")
        };
        file.problem(format!(
            "`{}` is not a dump of `dsh prompt --format json`: {message}{whose}",
            file.name()
        ))
        .label(at..at, "here")
    })?;
    let name = file.name();
    let version_key = key_span(text, 0, "format_version", 1);
    let Some(version) = dump.format_version else {
        return Err(file
            .problem(format!("`{name}` has no `format_version`: it was written by a dsh whose dumps carry no prefix"))
            .label(0..1, "this dump")
            .help("dump the prompt again with this dsh: `dsh prompt --format json > FILE`"));
    };
    if version != DUMP_FORMAT_VERSION {
        return Err(labeled(
            file.problem(format!(
                "`{name}` is a dump of format version {version}; this dsh reads version {DUMP_FORMAT_VERSION}"
            )),
            version_key,
            "this version",
        )
        .help("dump the prompt again with this dsh: `dsh prompt --format json > FILE`"));
    }
    let prefix_key = key_span(text, 0, "prefix", 1);
    let Some(prefix) = dump.prefix else {
        return Err(labeled(
            file.problem(format!(
                "`{name}` has no prefix: its prompt did not render when it was dumped"
            )),
            prefix_key,
            "no prefix",
        )
        .help("run `dsh check` on the deployment it was dumped from, fix it, and dump it again"));
    };
    check_prefix(file, &prefix, prefix_key.map_or(0, |key| key.end))?;
    Ok(prefix)
}

/// The problems of a parsed prefix that serde cannot see: a tokenizer
/// this dsh does not have, a section that is not where the system prompt
/// has it. `from` is where the prefix starts in the file.
fn check_prefix(file: &SourceFile, prefix: &Prefix, from: usize) -> Result<(), Problem> {
    let name = file.name();
    if prefix.tokenizer().is_none() {
        let known: Vec<&str> = (dsh_agent_loop::Encoding::ALL.iter())
            .map(|encoding| encoding.name())
            .collect();
        return Err(labeled(
            file.problem(format!(
                "`{name}` counts its tokens with `{}`, which this dsh does not have",
                prefix.tokenizer
            )),
            key_span(file.text(), from, "tokenizer", 2),
            "this tokenizer",
        )
        .help(format!("this dsh counts with {}", known.join(" or "))));
    }
    if let Some(section) = prefix.unsound_section() {
        return Err(labeled(
            file.problem(format!(
                "`{name}`: section `{}` is at bytes {}..{}, which is not a place in its system prompt of {} bytes after the section before it",
                section.name,
                section.start,
                section.end,
                prefix.system_prompt.len()
            )),
            key_span(file.text(), from, "sections", 2),
            "these sections",
        )
        .help("dump the prompt again with `dsh prompt --format json`: a dump is not to be edited"));
    }
    Ok(())
}

/// `problem` with a label on `span`, when there is one.
fn labeled(problem: Problem, span: Option<Range<usize>>, label: &str) -> Problem {
    match span {
        Some(span) => problem.label(span, label),
        None => problem,
    }
}

/// Where the key `key` is written at `depth` (1: a key of the dump's
/// object) at or after byte `from`, as `dsh prompt --format json` writes
/// it: pretty, two spaces an indent. `None` in a dump written another
/// way (the problem is then reported without a place).
fn key_span(text: &str, from: usize, key: &str, depth: usize) -> Option<Range<usize>> {
    let needle = format!("\n{}\"{key}\":", "  ".repeat(depth));
    let at = text.get(from..)?.find(&needle)? + from + 1 + 2 * depth;
    Some(at..at + key.len() + 2)
}

/// The byte offset of serde_json's 1-based `line` and `column` in `text`
/// (column 0: the line's start), clamped to the text.
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let start: usize = (text.split_inclusive('\n'))
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let mut at = (start + column.saturating_sub(1)).min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}
