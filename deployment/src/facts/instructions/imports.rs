//! `@path` imports in instruction files, as Claude Code documents them for
//! `CLAUDE.md`: a `@` at the start of the text or after whitespace, then
//! the path up to the next whitespace; relative to the importing file,
//! `~/` for the user's home, absolute as written; not inside a Markdown
//! code span or code block (as CommonMark defines them, by
//! `pulldown-cmark`), so `` `@scope/package` `` stays text. A path that
//! names no file is not an import (a handle such as `@alice` in prose),
//! and stays text too. Imports go [`MAX_IMPORT_DEPTH`] hops deep.

use std::ops::Range;
use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser, Tag};

/// How many hops of imports are followed from a file found in a
/// directory: Claude Code's documented limit.
pub const MAX_IMPORT_DEPTH: usize = 5;

/// One `@path` of a file's text, as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ImportRef {
    /// The path after `@`.
    pub(super) path: String,
    /// Its line in the file, from 1.
    pub(super) line: usize,
}

/// Every `@path` of `text` outside code spans and code blocks, in order.
pub(super) fn import_refs(text: &str) -> Vec<ImportRef> {
    if !text.contains('@') {
        return Vec::new();
    }
    let code = code_ranges(text);
    let mut refs = Vec::new();
    let mut line = 1;
    let mut counted = 0;
    for (at, _) in text.match_indices('@') {
        let after_space = text[..at]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace);
        if !after_space || code.iter().any(|range| range.contains(&at)) {
            continue;
        }
        let rest = &text[at + 1..];
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        if end == 0 {
            continue;
        }
        line += text[counted..at].matches('\n').count();
        counted = at;
        refs.push(ImportRef {
            path: rest[..end].to_owned(),
            line,
        });
    }
    refs
}

/// The byte ranges of `text` that are code: each code span, each code
/// block (fenced or indented).
fn code_ranges(text: &str) -> Vec<Range<usize>> {
    Parser::new_ext(text, Options::empty())
        .into_offset_iter()
        .filter_map(|(event, range)| match event {
            Event::Code(_) | Event::Start(Tag::CodeBlock(_)) => Some(range),
            _ => None,
        })
        .collect()
}

/// Where `path` of an import in a file of directory `dir` points: `~/`
/// under `home`, an absolute path as written, anything else under `dir`.
/// `None` for `~/` without a home.
pub(super) fn resolve(path: &str, dir: &Path, home: Option<&Path>) -> Option<PathBuf> {
    if let Some(under_home) = path.strip_prefix("~/") {
        return home.map(|home| home.join(under_home));
    }
    let path = Path::new(path);
    Some(if path.is_absolute() {
        path.to_path_buf()
    } else {
        dir.join(path)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(text: &str) -> Vec<(String, usize)> {
        import_refs(text)
            .into_iter()
            .map(|found| (found.path, found.line))
            .collect()
    }

    #[test]
    fn an_import_is_an_at_after_whitespace_up_to_whitespace() {
        assert_eq!(paths("@AGENTS.md\n"), [("AGENTS.md".to_owned(), 1)]);
        assert_eq!(
            paths("See @README for it and @docs/git.md.\n- x @~/.me.md\n"),
            [
                ("README".to_owned(), 1),
                ("docs/git.md.".to_owned(), 1),
                ("~/.me.md".to_owned(), 2)
            ]
        );
        // An address, a lone `@`, and `@` after punctuation are text.
        assert!(paths("mail me@example.com, or @ me, or (@x)\n").is_empty());
    }

    #[test]
    fn code_spans_and_blocks_hold_no_import() {
        let text = "Install `@anthropic-ai/claude-code`.\n\n```sh\n@not-this\n```\n\n    @nor-this\n\n@but-this\n";
        assert_eq!(paths(text), [("but-this".to_owned(), 9)]);
        // A double-backtick span holds a single backtick.
        assert!(paths("``a ` @x``\n").is_empty());
    }

    #[test]
    fn paths_resolve_from_the_importing_files_directory() {
        let dir = Path::new("/p/sub");
        let home = Path::new("/home/u");
        assert_eq!(
            resolve("../AGENTS.md", dir, Some(home)),
            Some(PathBuf::from("/p/sub/../AGENTS.md"))
        );
        assert_eq!(
            resolve("/etc/x", dir, Some(home)),
            Some(PathBuf::from("/etc/x"))
        );
        assert_eq!(
            resolve("~/.x.md", dir, Some(home)),
            Some(PathBuf::from("/home/u/.x.md"))
        );
        assert_eq!(resolve("~/.x.md", dir, None), None);
    }
}
