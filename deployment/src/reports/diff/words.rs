//! A word-level diff of two texts, as runs of equal, deleted and inserted
//! text (`similar`'s word diff, its changes joined into runs).

use serde::Serialize;
use similar::{ChangeTag, TextDiff};

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
/// replacement, the deletion comes first.
pub fn word_diff(old: &str, new: &str) -> Vec<WordRun> {
    let diff = TextDiff::from_words(old, new);
    let mut runs: Vec<WordRun> = Vec::new();
    for change in diff.iter_all_changes() {
        let op = match change.tag() {
            ChangeTag::Equal => WordOp::Equal,
            ChangeTag::Delete => WordOp::Delete,
            ChangeTag::Insert => WordOp::Insert,
        };
        match runs.last_mut() {
            Some(last) if last.op == op => last.text.push_str(change.value()),
            _ => runs.push(WordRun {
                op,
                text: change.value().to_owned(),
            }),
        }
    }
    runs
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
