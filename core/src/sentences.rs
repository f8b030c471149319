//! One fact, one owner — checked: the sentences that two owners of a
//! prompt both state.
//!
//! The principle of the registry is that every fact has exactly one owner.
//! It cannot be enforced on prose, but its most common breach can be
//! found: the same sentence written by two owners (a persona restating a
//! tool's guidance, an `AGENTS.md` repeating the persona). A front end
//! gives [`repeated_sentences`] every owner's text — sections, tool
//! descriptions, and whatever other owners it knows of — each with a key
//! of its own choosing that says whose it is, and gets back each sentence
//! that two different keys state, with where each states it.
//!
//! Sentences are compared after normalizing whitespace and case. A
//! sentence is a run of text that ends with `.`, `!` or `?` followed by
//! whitespace or the end of the text; a blank line, a list item or a
//! heading also starts a new one. Fragments that do not end with such a
//! mark (a heading, a code line) and sentences of fewer than
//! [`MIN_SENTENCE_WORDS`] words (`Be brief.`) are not compared: they repeat
//! between owners without stating the same fact.
//!
//! ```
//! use dsh_system_prompt::repeated_sentences;
//!
//! let texts = [
//!     ("persona", "You are careful. Use read, not cat, to see a file."),
//!     ("tool:read", "- Use  READ, not cat, to see a file.\n- Other."),
//! ];
//! let repeated = repeated_sentences(texts);
//! assert_eq!(repeated.len(), 1);
//! assert_eq!(repeated[0].first.0, "persona");
//! assert_eq!(repeated[0].second.0, "tool:read");
//! assert_eq!(&texts[1].1[repeated[0].second.1.clone()], "Use  READ, not cat, to see a file.");
//! ```

use std::collections::{HashMap, HashSet};
use std::ops::Range;

/// Sentences shorter than this many words are not compared.
pub const MIN_SENTENCE_WORDS: usize = 4;

/// A sentence two owners state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepeatedSentence<K> {
    /// The sentence, normalized: whitespace collapsed, lowercase.
    pub normalized: String,
    /// The first owner that states it, and where in its text.
    pub first: (K, Range<usize>),
    /// The first other owner that states it, and where in its text.
    pub second: (K, Range<usize>),
}

/// Every sentence that two different owners of `texts` state, once each,
/// in the order of their first statement. `texts` are `(owner, text)`
/// pairs; an owner may give several texts, and a sentence one owner
/// repeats is not reported.
pub fn repeated_sentences<'t, K: Clone + PartialEq>(
    texts: impl IntoIterator<Item = (K, &'t str)>,
) -> Vec<RepeatedSentence<K>> {
    let mut first: HashMap<String, (K, Range<usize>)> = HashMap::new();
    let mut reported: HashSet<String> = HashSet::new();
    let mut repeated = Vec::new();
    for (owner, text) in texts {
        for range in sentences(text) {
            let Some(normalized) = normalize(&text[range.clone()]) else {
                continue;
            };
            match first.get(&normalized) {
                None => {
                    first.insert(normalized, (owner.clone(), range));
                }
                Some((earlier, _)) if *earlier == owner => {}
                Some(earlier) => {
                    if reported.insert(normalized.clone()) {
                        repeated.push(RepeatedSentence {
                            first: earlier.clone(),
                            second: (owner.clone(), range),
                            normalized,
                        });
                    }
                }
            }
        }
    }
    repeated
}

/// The byte ranges of the sentences of `text`: trimmed, without a leading
/// list marker, each ending with its `.`, `!` or `?` (or where a blank
/// line, list item or heading starts).
fn sentences(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut start = 0;
    // A list marker's `1.` ends no sentence: the scan starts after it.
    let mut at = marker_end(text, 0);
    while at < bytes.len() {
        let b = bytes[at];
        if matches!(b, b'.' | b'!' | b'?')
            && bytes
                .get(at + 1)
                .is_none_or(|next| next.is_ascii_whitespace())
        {
            push_sentence(text, start..at + 1, &mut out);
            start = at + 1;
        } else if b == b'\n' && starts_block(&text[at + 1..]) {
            push_sentence(text, start..at, &mut out);
            start = at + 1;
            at = marker_end(text, start);
            continue;
        }
        at += 1;
    }
    push_sentence(text, start..text.len(), &mut out);
    out
}

/// Where the list marker of the line starting at `line_start` ends, or
/// `line_start` when it has none.
fn marker_end(text: &str, line_start: usize) -> usize {
    let line = &text[line_start..];
    let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
    let marker = list_marker(&line[indent..]);
    if marker == 0 {
        line_start
    } else {
        line_start + indent + marker
    }
}

/// Whether a line starting at `rest` starts a new block: it is blank, a
/// list item or a heading.
fn starts_block(rest: &str) -> bool {
    let line = rest.split('\n').next().unwrap_or_default().trim_start();
    line.is_empty() || line.starts_with('#') || list_marker(line) > 0
}

/// The length of the list marker `line` starts with (`- `, `* `, `+ `,
/// `12. `), or 0.
fn list_marker(line: &str) -> usize {
    let bytes = line.as_bytes();
    match bytes.first() {
        Some(b'-' | b'*' | b'+') if bytes.get(1) == Some(&b' ') => 2,
        Some(b'0'..=b'9') => {
            let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
            match (bytes.get(digits), bytes.get(digits + 1)) {
                (Some(b'.' | b')'), Some(b' ')) => digits + 2,
                _ => 0,
            }
        }
        _ => 0,
    }
}

/// Pushes `range` of `text`, trimmed and without its list marker, when it
/// ends a sentence.
fn push_sentence(text: &str, range: Range<usize>, out: &mut Vec<Range<usize>>) {
    let slice = &text[range.clone()];
    let leading = slice.len() - slice.trim_start().len();
    let mut start = range.start + leading;
    start += list_marker(&text[start..range.end]);
    let trimmed = text[start..range.end].trim_end();
    if trimmed.ends_with(['.', '!', '?']) {
        out.push(start..start + trimmed.len());
    }
}

/// The sentence as it is compared, or `None` when it is too short to.
fn normalize(sentence: &str) -> Option<String> {
    let words: Vec<&str> = sentence.split_whitespace().collect();
    if words.len() < MIN_SENTENCE_WORDS {
        return None;
    }
    Some(words.join(" ").to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Vec<&str> {
        sentences(text).into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn sentences_end_at_marks_blank_lines_and_list_items() {
        assert_eq!(
            split("# Build\n\nRun make. Then test!\n- Use read.\n1. Ask first?\nno mark"),
            ["Run make.", "Then test!", "Use read.", "Ask first?"]
        );
        // A dot inside a word or a path does not end a sentence.
        assert_eq!(
            split("See v1.2 in src/a.rs now."),
            ["See v1.2 in src/a.rs now."]
        );
        // A sentence may wrap lines.
        assert_eq!(
            split("Check the exit\ncode marker."),
            ["Check the exit\ncode marker."]
        );
    }

    #[test]
    fn one_owner_repeating_itself_is_not_reported() {
        let repeated = repeated_sentences([
            ("a", "Always run the tests first."),
            ("a", "Always run the tests first."),
        ]);
        assert!(repeated.is_empty());
    }

    #[test]
    fn short_sentences_are_not_compared() {
        assert!(repeated_sentences([("a", "Be brief."), ("b", "Be brief.")]).is_empty());
    }

    #[test]
    fn each_sentence_is_reported_once() {
        let text = "Always run the tests first.";
        let repeated = repeated_sentences([("a", text), ("b", text), ("c", text)]);
        assert_eq!(repeated.len(), 1);
        assert_eq!((repeated[0].first.0, repeated[0].second.0), ("a", "b"));
    }
}
