//! The renderers of `dsh diff`: text for a terminal (`text.rs`), markdown
//! for a pull-request comment (`markdown.rs`), and the comparison's own
//! JSON. What they share is here: how an owner, a change of a number, a
//! cost and a word diff read.

pub(super) mod markdown;
pub(super) mod text;

use crate::reports::diff::{
    Cause, Change, Multiple, PartOwner, PromptDiff, SectionChange, Sides, ToolChange, WordOp,
    WordRun,
};

/// How many words of unchanged text a word diff keeps on each side of a
/// change: enough to find the place, not the whole section.
const CONTEXT_WORDS: usize = 6;

/// The one line of two prefixes that are the same.
fn same_line(diff: &PromptDiff) -> String {
    format!(
        "no difference: the request prefix of agent `{}` is the same in {} and {} ({} bytes, {} tokens)\n",
        diff.new.agent,
        diff.old.path,
        diff.new.path,
        diff.totals.prefix.new.bytes,
        diff.totals.prefix.new.tokens,
    )
}

/// An owner in one phrase: the item, then the owner's kind and place
/// (`dsh_tool_bash::EXIT_CODE_HABIT (dsh-tool-bash, tools/bash/src/lib.rs:84)`).
fn owner(owner: &PartOwner) -> String {
    let place = owner.place();
    if place == owner.item {
        format!("{} ({})", owner.item, owner.krate)
    } else {
        format!("{} ({}, {place})", owner.item, owner.krate)
    }
}

/// The owners of a part on the sides that have it (`None`: a built-in
/// tool, whose crate the tool does not name): one when they are the
/// same, one item with two places when only the place moved.
fn owners(old: Option<Option<&PartOwner>>, new: Option<Option<&PartOwner>>) -> String {
    let name = |side: Option<&PartOwner>| side.map_or_else(|| "built in".to_owned(), owner);
    match (old, new) {
        (Some(Some(old)), Some(Some(new))) if old != new => {
            if (&old.krate, &old.item) == (&new.krate, &new.item) && old.place() != old.item {
                format!(
                    "{} ({}, {} → {})",
                    new.item,
                    new.krate,
                    old.place(),
                    new.place()
                )
            } else {
                format!("{} → {}", owner(old), owner(new))
            }
        }
        (Some(old), Some(new)) if old != new => format!("{} → {}", name(old), name(new)),
        (_, Some(one)) | (Some(one), None) => name(one),
        (None, None) => String::new(),
    }
}

/// The owners of a changed section.
fn section_owners(change: &SectionChange) -> String {
    let (old, new) = (change.old.as_ref(), change.new.as_ref());
    owners(
        old.map(|side| Some(&side.owner)),
        new.map(|side| Some(&side.owner)),
    )
}

/// The owners of a changed tool.
fn tool_owners(change: &ToolChange) -> String {
    let (old, new) = (change.old.as_ref(), change.new.as_ref());
    owners(
        old.map(|side| side.owner.as_ref()),
        new.map(|side| side.owner.as_ref()),
    )
}

/// `old → new (+d)`, or the one value when it did not change.
fn change_of(old: usize, new: usize) -> String {
    if old == new {
        return new.to_string();
    }
    format!("{old} → {new} ({})", signed(old, new))
}

/// `new - old` with its sign (`+12`, `-3`, `0`).
fn signed(old: usize, new: usize) -> String {
    match new.cmp(&old) {
        std::cmp::Ordering::Greater => format!("+{}", new - old),
        std::cmp::Ordering::Less => format!("-{}", old - new),
        std::cmp::Ordering::Equal => "0".to_owned(),
    }
}

/// Sizes before and after, of one field.
fn sides_of(sides: &Sides<crate::measure::tokens::Size>, tokens: bool) -> String {
    if tokens {
        change_of(sides.old.tokens, sides.new.tokens)
    } else {
        change_of(sides.old.bytes, sides.new.bytes)
    }
}

/// A multiple of the base input price, or a cost in base-price tokens,
/// with two decimals (`0.10`, `254.70`).
fn cost(multiple: Multiple) -> String {
    format!("{}.{:02}", multiple.0 / 100, multiple.0 % 100)
}

/// `2 changed, 1 moved, 6 unchanged`: each kind of change that occurs.
fn counts(changes: impl Iterator<Item = Change>, unchanged: usize) -> String {
    let changes: Vec<Change> = changes.collect();
    let mut parts: Vec<String> = [
        Change::Changed,
        Change::Moved,
        Change::Added,
        Change::Removed,
    ]
    .into_iter()
    .filter_map(|kind| {
        let n = changes.iter().filter(|change| **change == kind).count();
        (n > 0).then(|| format!("{n} {}", change_name(kind)))
    })
    .collect();
    parts.push(format!("{unchanged} unchanged"));
    parts.join(", ")
}

/// What a change is called in a report.
fn change_name(change: Change) -> &'static str {
    match change {
        Change::Added => "added",
        Change::Removed => "removed",
        Change::Changed => "changed",
        Change::Moved => "moved",
    }
}

/// What a section's change says beyond its kind: what changed it, and
/// where it moved.
fn section_note(change: &SectionChange) -> String {
    let mut notes = Vec::new();
    if change.cause == Some(Cause::Variables) {
        let through: Vec<String> = (change.through.iter())
            .map(|name| format!("`<<{name}>>`"))
            .collect();
        notes.push(format!("through {}", through.join(", ")));
    }
    if let (true, Some(old), Some(new)) = (change.moved, &change.old, &change.new) {
        notes.push(format!(
            "order {} → {}, position {} → {}",
            old.order, new.order, old.position, new.position
        ));
    }
    notes.join("; ")
}

/// A word diff as `git diff --word-diff=plain` writes one (`[-old-]{+new+}`),
/// the unchanged text around the changes cut to [`CONTEXT_WORDS`] words a
/// side.
fn inline_words(runs: &[WordRun]) -> String {
    let mut out = String::new();
    let last = runs.len().saturating_sub(1);
    for (index, run) in runs.iter().enumerate() {
        match run.op {
            WordOp::Delete => out.push_str(&format!("[-{}-]", run.text)),
            WordOp::Insert => out.push_str(&format!("{{+{}+}}", run.text)),
            WordOp::Equal => out.push_str(&context(&run.text, index == 0, index == last)),
        }
    }
    out
}

/// Unchanged text between changes, cut: only its end before the first
/// change, only its start after the last, both ends between two.
fn context(text: &str, first: bool, last: bool) -> String {
    let starts = word_starts(text);
    if starts.len() <= 2 * CONTEXT_WORDS || (first && last) {
        return text.to_owned();
    }
    let head = &text[..starts[CONTEXT_WORDS]];
    let tail = &text[starts[starts.len() - CONTEXT_WORDS]..];
    match (first, last) {
        (true, _) => format!("…{tail}"),
        (_, true) => format!("{head}…"),
        _ => format!("{head}… {tail}"),
    }
}

/// The byte offsets where the words of `text` start, and where its white
/// space after a word starts (so a cut keeps a word's trailing space).
fn word_starts(text: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut in_word = false;
    for (at, character) in text.char_indices() {
        let is_word = !character.is_whitespace();
        if is_word && !in_word {
            starts.push(at);
        }
        in_word = is_word;
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(op: WordOp, text: &str) -> WordRun {
        WordRun {
            op,
            text: text.to_owned(),
        }
    }

    #[test]
    fn a_word_diff_keeps_a_few_words_around_each_change() {
        let before = "one two three four five six seven eight nine ten eleven twelve thirteen ";
        let runs = [
            run(WordOp::Equal, before),
            run(WordOp::Delete, "gpt-5."),
            run(WordOp::Insert, "gpt-5-mini."),
            run(WordOp::Equal, " a b c d e f g h i j k l m n"),
            run(WordOp::Insert, "new"),
            run(WordOp::Equal, " x"),
        ];
        assert_eq!(
            inline_words(&runs),
            "…eight nine ten eleven twelve thirteen [-gpt-5.-]{+gpt-5-mini.+} a b c d e f … i j k l m n{+new+} x"
        );
    }

    #[test]
    fn signed_differences() {
        assert_eq!(change_of(10, 12), "10 → 12 (+2)");
        assert_eq!(change_of(12, 10), "12 → 10 (-2)");
        assert_eq!(change_of(7, 7), "7");
        assert_eq!(cost(Multiple(25470)), "254.70");
    }
}
