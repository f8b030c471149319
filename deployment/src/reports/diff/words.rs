//! A word-level diff of two texts, as runs of equal, deleted and inserted
//! text (`similar`'s word diff, its changes joined into runs).
//!
//! A word diff costs, at worst, the product of the two texts' lengths: a
//! rewritten section of 40,000 words took minutes. So it is bounded twice.
//! Texts whose words, multiplied, pass [`DIRECT_WORD_PAIRS`] are diffed
//! by lines first and only the replaced lines word by word (a line diff
//! of prose has far fewer, far more distinct items); and every diff of
//! one comparison shares a deadline, past which what is left is said as
//! deleted and inserted whole — coarser, still exact: the runs make both
//! texts.

use std::time::{Duration, Instant};

use serde::Serialize;
use similar::{ChangeTag, DiffTag, TextDiff};

/// How long the word diffs of one comparison may take together: past it,
/// what is left of a text is one deletion and one insertion.
pub const WORD_DIFF_TIME: Duration = Duration::from_millis(500);

/// The most word pairs (the old text's words times the new text's) diffed
/// word by word at once: past it, lines first. 2,000 words against 2,000.
pub const DIRECT_WORD_PAIRS: usize = 4_000_000;

/// What a run of a word diff is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WordOp {
    /// Text both sides have.
    Equal,
    /// Text only the old side has.
    Delete,
    /// Text only the new side has.
    Insert,
}

/// A run of a word diff: consecutive words (and the white space between
/// them) of one kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WordRun {
    /// What the run is.
    pub op: WordOp,
    /// Its text.
    pub text: String,
}

/// The runs that turn `old` into `new`, word by word: the equal and
/// deleted runs make `old`, the equal and inserted runs make `new`; of a
/// replacement, the deletion comes first. Bounded by [`WORD_DIFF_TIME`].
pub fn word_diff(old: &str, new: &str) -> Vec<WordRun> {
    word_diff_until(old, new, Instant::now() + WORD_DIFF_TIME)
}

/// [`word_diff`] with a `deadline`, past which what is left of the two
/// texts is one deletion and one insertion.
pub fn word_diff_until(old: &str, new: &str, deadline: Instant) -> Vec<WordRun> {
    let mut runs = Runs::default();
    if word_pairs(old, new) <= DIRECT_WORD_PAIRS {
        runs.words(old, new, deadline);
        return runs.0;
    }
    let lines = TextDiff::configure()
        .deadline(deadline)
        .diff_lines(old, new);
    let (old_lines, new_lines) = (lines.old_slices(), lines.new_slices());
    for op in lines.ops() {
        let (tag, was, is) = op.as_tag_tuple();
        let (old_part, new_part) = (old_lines[was].concat(), new_lines[is].concat());
        match tag {
            DiffTag::Equal => runs.push(WordOp::Equal, &old_part),
            DiffTag::Delete => runs.push(WordOp::Delete, &old_part),
            DiffTag::Insert => runs.push(WordOp::Insert, &new_part),
            DiffTag::Replace => runs.words(&old_part, &new_part, deadline),
        }
    }
    runs.0
}

/// The word pairs a direct word diff of `old` and `new` would weigh.
fn word_pairs(old: &str, new: &str) -> usize {
    let words = |text: &str| text.split_whitespace().count();
    words(old).saturating_mul(words(new))
}

/// Runs being made: a piece of the same kind as the last joins it.
#[derive(Default)]
struct Runs(Vec<WordRun>);

impl Runs {
    fn push(&mut self, op: WordOp, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.0.last_mut() {
            Some(last) if last.op == op => last.text.push_str(text),
            _ => self.0.push(WordRun {
                op,
                text: text.to_owned(),
            }),
        }
    }

    /// `old` against `new`, word by word, until `deadline`.
    fn words(&mut self, old: &str, new: &str, deadline: Instant) {
        let diff = TextDiff::configure()
            .deadline(deadline)
            .diff_words(old, new);
        for change in diff.iter_all_changes() {
            let op = match change.tag() {
                ChangeTag::Equal => WordOp::Equal,
                ChangeTag::Delete => WordOp::Delete,
                ChangeTag::Insert => WordOp::Insert,
            };
            self.push(op, change.value());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(runs: &[WordRun], skip: WordOp) -> String {
        (runs.iter())
            .filter(|run| run.op != skip)
            .map(|run| run.text.as_str())
            .collect()
    }

    #[test]
    fn the_runs_make_both_texts_and_name_the_changed_words() {
        let old = "You are dsh, running on gpt-5. Be brief.";
        let new = "You are dsh, running on gpt-5-mini. Be brief and direct.";
        let runs = word_diff(old, new);
        assert_eq!(side(&runs, WordOp::Insert), old);
        assert_eq!(side(&runs, WordOp::Delete), new);
        let changed: Vec<(WordOp, &str)> = (runs.iter())
            .filter(|run| run.op != WordOp::Equal)
            .map(|run| (run.op, run.text.as_str()))
            .collect();
        assert_eq!(
            changed,
            [
                (WordOp::Delete, "gpt-5."),
                (WordOp::Insert, "gpt-5-mini."),
                (WordOp::Delete, "brief."),
                (WordOp::Insert, "brief and direct."),
            ]
        );
    }

    /// `count` lines of prose, the `changed` one saying `word`.
    fn book(count: usize, changed: usize, word: &str) -> String {
        (0..count)
            .map(|line| {
                let said = if line == changed { word } else { "plain" };
                format!("Line {line} of the book is {said} prose for the test.\n")
            })
            .collect()
    }

    #[test]
    fn a_large_text_is_diffed_by_lines_then_words_and_keeps_one_changed_word() {
        // 33,000 words a side: far past the direct word diff.
        let (old, new) = (book(3000, 1500, "plain"), book(3000, 1500, "fancy"));
        assert!(word_pairs(&old, &new) > DIRECT_WORD_PAIRS);
        // Even with the deadline already passed, the one change is found.
        let runs = word_diff_until(&old, &new, Instant::now());
        assert_eq!(side(&runs, WordOp::Insert), old);
        assert_eq!(side(&runs, WordOp::Delete), new);
        let changed: Vec<(WordOp, &str)> = (runs.iter())
            .filter(|run| run.op != WordOp::Equal)
            .map(|run| (run.op, run.text.as_str()))
            .collect();
        assert_eq!(
            changed,
            [(WordOp::Delete, "plain"), (WordOp::Insert, "fancy")]
        );
    }

    #[test]
    fn past_the_deadline_a_rewritten_text_is_one_deletion_and_one_insertion() {
        let old: String = (0..5000).map(|at| format!("w{at} ")).collect();
        let new: String = (0..5000).map(|at| format!("v{at} ")).collect();
        let runs = word_diff_until(&old, &new, Instant::now());
        assert_eq!(side(&runs, WordOp::Insert), old);
        assert_eq!(side(&runs, WordOp::Delete), new);
        assert!(runs.len() <= 3, "{} runs", runs.len());
    }

    #[test]
    fn equal_texts_are_one_equal_run() {
        assert_eq!(
            word_diff("a b", "a b"),
            [WordRun {
                op: WordOp::Equal,
                text: "a b".to_owned()
            }]
        );
    }
}
