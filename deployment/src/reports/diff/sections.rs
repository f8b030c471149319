//! The sections of two system prompts compared by name: added, removed,
//! changed (in text, or through a variable's value), moved, and how many
//! are unchanged; and the variables whose values differ.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use serde::Serialize;

use super::Change;
use super::prefix::{PartOwner, Prefix, PrefixSection};
use super::words::{WordRun, word_diff_until};

/// What changed among the sections.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SectionChanges {
    /// Each section added, removed, changed or moved: the new prompt's in
    /// its order, then the removed ones in the old prompt's.
    pub changes: Vec<SectionChange>,
    /// How many sections both prompts have, alike and in place.
    pub unchanged: usize,
}

/// One section that is not the same on both sides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SectionChange {
    /// Its name.
    pub name: String,
    /// What happened to it; a section both changed and moved is
    /// [`Change::Changed`], with `moved`.
    pub change: Change,
    /// Whether its place among the sections both sides have changed,
    /// because its order did.
    pub moved: bool,
    /// For a changed section: whether its text changed, or only the
    /// value of a variable it references.
    pub cause: Option<Cause>,
    /// The variables whose values changed its text (for
    /// [`Cause::Variables`]).
    pub through: Vec<String>,
    /// The old side's section.
    pub old: Option<SectionSide>,
    /// The new side's section.
    pub new: Option<SectionSide>,
    /// For a changed section: its rendered text, word by word.
    pub words: Option<Vec<WordRun>>,
}

/// Why a section's rendered text changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Its text (its template) changed.
    Text,
    /// Its text is the same; a variable it references has another value.
    Variables,
}

/// A section as one side has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SectionSide {
    /// Its position in the prompt, from 0.
    pub position: usize,
    /// Its order.
    pub order: i32,
    /// Who owns its text.
    pub owner: PartOwner,
    /// The tool it is bound to.
    pub tool: Option<String>,
    /// Its rendered bytes.
    pub bytes: usize,
    /// Its tokens.
    pub tokens: usize,
}

/// A variable whose value differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VariableChange {
    /// Its name (`model`).
    pub name: String,
    /// The old value (`None`: no value, or no such variable).
    pub old: Option<String>,
    /// The new value.
    pub new: Option<String>,
    /// The rendered sections that reference it, the new side's then the
    /// old side's others.
    pub used_by: Vec<String>,
}

/// Compares the sections of `old` and `new`, their words until
/// `words_until` ([`word_diff_until`]).
pub(super) fn compare(old: &Prefix, new: &Prefix, words_until: Instant) -> SectionChanges {
    let old_at: HashMap<&str, usize> = positions(&old.sections);
    let new_at: HashMap<&str, usize> = positions(&new.sections);
    let moved = moved(old, new, &old_at, &new_at);
    let mut changes = Vec::new();
    let mut unchanged = 0;
    for (position, section) in new.sections.iter().enumerate() {
        let Some(&was) = old_at.get(section.name.as_str()) else {
            changes.push(one_side(
                &section.name,
                Change::Added,
                None,
                Some(side(new, position)),
            ));
            continue;
        };
        let before = &old.sections[was];
        let moved = moved.contains(&section.name.as_str());
        let (old_text, new_text) = (old.text_of(before), new.text_of(section));
        if old_text == new_text && !moved {
            unchanged += 1;
            continue;
        }
        let (change, cause, through, words) = if old_text == new_text {
            (Change::Moved, None, Vec::new(), None)
        } else {
            let (cause, through) = cause(old, new, before, section);
            let words = word_diff_until(old_text, new_text, words_until);
            (Change::Changed, Some(cause), through, Some(words))
        };
        changes.push(SectionChange {
            name: section.name.clone(),
            change,
            moved,
            cause,
            through,
            old: Some(side(old, was)),
            new: Some(side(new, position)),
            words,
        });
    }
    for (position, section) in old.sections.iter().enumerate() {
        if !new_at.contains_key(section.name.as_str()) {
            changes.push(one_side(
                &section.name,
                Change::Removed,
                Some(side(old, position)),
                None,
            ));
        }
    }
    SectionChanges { changes, unchanged }
}

/// Each section's position, by name.
fn positions(sections: &[PrefixSection]) -> HashMap<&str, usize> {
    (sections.iter().enumerate())
        .map(|(at, section)| (section.name.as_str(), at))
        .collect()
}

/// The sections both sides have whose order changed and, with it, their
/// place among the sections both sides have: the prompt is sorted by
/// order, so a section whose order is the same did not move, whatever
/// moved past it.
fn moved<'p>(
    old: &'p Prefix,
    new: &'p Prefix,
    old_at: &HashMap<&str, usize>,
    new_at: &HashMap<&str, usize>,
) -> HashSet<&'p str> {
    let common = |prefix: &'p Prefix, other: &HashMap<&str, usize>| -> Vec<&'p str> {
        (prefix.sections.iter())
            .map(|section| section.name.as_str())
            .filter(|name| other.contains_key(name))
            .collect()
    };
    let (old_common, new_common) = (common(old, new_at), common(new, old_at));
    // Each name's rank among the common sections, once: a search per
    // section made 10,000 sections a hundred million comparisons.
    let old_rank: HashMap<&str, usize> = (old_common.iter().enumerate())
        .map(|(rank, name)| (*name, rank))
        .collect();
    (new_common.iter().enumerate())
        .filter(|&(rank, name)| {
            let order_changed =
                old.sections[old_at[name]].order != new.sections[new_at[name]].order;
            order_changed && old_rank.get(name) != Some(&rank)
        })
        .map(|(_, name)| *name)
        .collect()
}

/// Why `before`'s text became `after`'s: its template, or only the values
/// of variables it references (and which).
fn cause(
    old: &Prefix,
    new: &Prefix,
    before: &PrefixSection,
    after: &PrefixSection,
) -> (Cause, Vec<String>) {
    if before.template != after.template {
        return (Cause::Text, Vec::new());
    }
    let through: Vec<String> = (after.variables.iter())
        .filter(|name| old.variables.get(*name) != new.variables.get(*name))
        .cloned()
        .collect();
    if through.is_empty() {
        (Cause::Text, through)
    } else {
        (Cause::Variables, through)
    }
}

/// The section at `position` of `prefix`, as a change shows it.
fn side(prefix: &Prefix, position: usize) -> SectionSide {
    let section = &prefix.sections[position];
    SectionSide {
        position,
        order: section.order,
        owner: section.owner.clone(),
        tool: section.tool.clone(),
        bytes: section.end.saturating_sub(section.start),
        tokens: section.tokens,
    }
}

/// A section only one side has.
fn one_side(
    name: &str,
    change: Change,
    old: Option<SectionSide>,
    new: Option<SectionSide>,
) -> SectionChange {
    SectionChange {
        name: name.to_owned(),
        change,
        moved: false,
        cause: None,
        through: Vec::new(),
        old,
        new,
        words: None,
    }
}

/// The variables whose values differ, with the sections that use them.
pub(super) fn variables(old: &Prefix, new: &Prefix) -> Vec<VariableChange> {
    let names = old.variables.keys().chain(new.variables.keys());
    let mut changes: Vec<VariableChange> = Vec::new();
    for name in names {
        let (was, is) = (value(old, name), value(new, name));
        if was == is || changes.iter().any(|change| &change.name == name) {
            continue;
        }
        let mut used_by: Vec<String> = Vec::new();
        for section in new.sections.iter().chain(&old.sections) {
            if section.variables.contains(name) && !used_by.contains(&section.name) {
                used_by.push(section.name.clone());
            }
        }
        changes.push(VariableChange {
            name: name.clone(),
            old: was,
            new: is,
            used_by,
        });
    }
    changes.sort_by(|a, b| a.name.cmp(&b.name));
    changes
}

/// The value of variable `name` on one side (`None`: none, or no such
/// variable).
fn value(prefix: &Prefix, name: &str) -> Option<String> {
    prefix.variables.get(name).cloned().flatten()
}
