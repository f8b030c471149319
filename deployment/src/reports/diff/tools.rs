//! The tools of two request prefixes compared by name: added, removed,
//! changed (description, schema), moved, and how many are unchanged. A
//! schema's changes are JSON Pointers (RFC 6901) into its `parameters`.

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;
use similar::{Algorithm, DiffOp, capture_diff_slices};

use super::Change;
use super::prefix::{PartOwner, Prefix};
use super::words::{WordRun, word_diff_until};

/// What changed among the tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolChanges {
    /// Each tool added, removed, changed or moved: the new side's in the
    /// order they are sent, then the removed ones in the old side's.
    pub changes: Vec<ToolChange>,
    /// How many tools both sides send, alike and in place.
    pub unchanged: usize,
}

/// One tool that is not the same on both sides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolChange {
    /// Its name.
    pub name: String,
    /// What happened to it; a tool both changed and moved is
    /// [`Change::Changed`], with `moved`.
    pub change: Change,
    /// Whether its place among the tools both sides send changed.
    pub moved: bool,
    /// The old side's tool.
    pub old: Option<ToolSide>,
    /// The new side's tool.
    pub new: Option<ToolSide>,
    /// When its description changed: the description, word by word.
    pub description: Option<Vec<WordRun>>,
    /// What changed in its arguments' schema.
    pub schema: Vec<SchemaChange>,
}

/// A tool as one side sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolSide {
    /// Its position among the tools sent, from 0.
    pub position: usize,
    /// Who defines it (`None`: a built-in tool).
    pub owner: Option<PartOwner>,
    /// The bytes of its canonical JSON.
    pub bytes: usize,
    /// Its tokens.
    pub tokens: usize,
}

/// One change in a tool's `parameters`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SchemaChange {
    /// Where, as a JSON Pointer into `parameters` (`/properties/path`;
    /// the empty pointer is the whole schema).
    pub path: String,
    /// Added, removed or changed.
    pub change: Change,
}

/// Compares the tools of `old` and `new`, their descriptions' words until
/// `words_until` ([`word_diff_until`]).
pub(super) fn compare(old: &Prefix, new: &Prefix, words_until: Instant) -> ToolChanges {
    let old_at = positions(old);
    let new_at = positions(new);
    let moved = moved(old, new, &old_at, &new_at);
    let mut changes = Vec::new();
    let mut unchanged = 0;
    for (position, tool) in new.tools.iter().enumerate() {
        let Some(&was) = old_at.get(tool.name.as_str()) else {
            changes.push(one_side(
                &tool.name,
                Change::Added,
                None,
                Some(side(new, position)),
            ));
            continue;
        };
        let before = &old.tools[was];
        let moved = moved.contains(tool.name.as_str());
        let description = (before.description != tool.description)
            .then(|| word_diff_until(&before.description, &tool.description, words_until));
        let mut schema = Vec::new();
        schema_changes(
            &before.parameters,
            &tool.parameters,
            &mut String::new(),
            &mut schema,
        );
        let same = description.is_none() && schema.is_empty();
        if same && !moved {
            unchanged += 1;
            continue;
        }
        changes.push(ToolChange {
            name: tool.name.clone(),
            change: if same { Change::Moved } else { Change::Changed },
            moved,
            old: Some(side(old, was)),
            new: Some(side(new, position)),
            description,
            schema,
        });
    }
    for (position, tool) in old.tools.iter().enumerate() {
        if !new_at.contains_key(tool.name.as_str()) {
            changes.push(one_side(
                &tool.name,
                Change::Removed,
                Some(side(old, position)),
                None,
            ));
        }
    }
    ToolChanges { changes, unchanged }
}

/// Each tool's position, by name.
fn positions(prefix: &Prefix) -> HashMap<&str, usize> {
    (prefix.tools.iter().enumerate())
        .map(|(at, tool)| (tool.name.as_str(), at))
        .collect()
}

/// The tools both sides send that left the longest sequence both send in
/// the same order (`similar`'s diff of the two orders): the moved ones.
/// Tools have no order of their own to say which of two swapped tools
/// moved; the diff names the fewest.
fn moved<'p>(
    old: &'p Prefix,
    new: &'p Prefix,
    old_at: &HashMap<&str, usize>,
    new_at: &HashMap<&str, usize>,
) -> BTreeSet<&'p str> {
    let old_common: Vec<&str> = (old.tools.iter())
        .map(|tool| tool.name.as_str())
        .filter(|name| new_at.contains_key(name))
        .collect();
    let new_common: Vec<&str> = (new.tools.iter())
        .map(|tool| tool.name.as_str())
        .filter(|name| old_at.contains_key(name))
        .collect();
    let mut moved = BTreeSet::new();
    for op in capture_diff_slices(Algorithm::Myers, &old_common, &new_common) {
        if let DiffOp::Insert {
            new_index, new_len, ..
        }
        | DiffOp::Replace {
            new_index, new_len, ..
        } = op
        {
            moved.extend(new_common[new_index..new_index + new_len].iter().copied());
        }
    }
    moved
}

/// The tool at `position` of `prefix`, as a change shows it.
fn side(prefix: &Prefix, position: usize) -> ToolSide {
    let tool = &prefix.tools[position];
    ToolSide {
        position,
        owner: tool.owner.clone(),
        bytes: tool.canonical_json().len(),
        tokens: tool.tokens,
    }
}

/// A tool only one side sends.
fn one_side(
    name: &str,
    change: Change,
    old: Option<ToolSide>,
    new: Option<ToolSide>,
) -> ToolChange {
    ToolChange {
        name: name.to_owned(),
        change,
        moved: false,
        old,
        new,
        description: None,
        schema: Vec::new(),
    }
}

/// Appends to `changes` where `old` and `new` differ, below the pointer
/// `path`: an object key by key, an array of the same length item by
/// item; any other difference is a change of the value at `path`.
fn schema_changes(old: &Value, new: &Value, path: &mut String, changes: &mut Vec<SchemaChange>) {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            for (key, value) in old {
                let at = path.len();
                push_token(path, key);
                match new.get(key) {
                    Some(now) => schema_changes(value, now, path, changes),
                    None => changes.push(schema_change(path, Change::Removed)),
                }
                path.truncate(at);
            }
            for key in new.keys().filter(|key| !old.contains_key(*key)) {
                let at = path.len();
                push_token(path, key);
                changes.push(schema_change(path, Change::Added));
                path.truncate(at);
            }
        }
        (Value::Array(old), Value::Array(new)) if old.len() == new.len() => {
            for (index, (old, new)) in old.iter().zip(new).enumerate() {
                let at = path.len();
                push_token(path, &index.to_string());
                schema_changes(old, new, path, changes);
                path.truncate(at);
            }
        }
        (old, new) if old != new => changes.push(schema_change(path, Change::Changed)),
        _ => {}
    }
}

fn schema_change(path: &str, change: Change) -> SchemaChange {
    SchemaChange {
        path: path.to_owned(),
        change,
    }
}

/// Appends `/token` to a JSON Pointer, escaped as RFC 6901 says (`~` as
/// `~0`, `/` as `~1`).
fn push_token(path: &mut String, token: &str) {
    path.push('/');
    path.push_str(&token.replace('~', "~0").replace('/', "~1"));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn changes(old: Value, new: Value) -> Vec<(String, Change)> {
        let mut changes = Vec::new();
        schema_changes(&old, &new, &mut String::new(), &mut changes);
        changes
            .into_iter()
            .map(|change| (change.path, change.change))
            .collect()
    }

    #[test]
    fn a_schema_change_is_a_pointer_to_what_changed() {
        let old = json!({"type": "object", "properties": {
            "path": {"type": "string"}, "a/b": {"type": "integer", "maximum": 10}},
            "required": ["path"]});
        let new = json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "A file."}, "a/b": {"type": "integer", "maximum": 20}},
            "required": ["path", "limit"]});
        assert_eq!(
            changes(old, new),
            [
                ("/properties/path/description".to_owned(), Change::Added),
                ("/properties/a~1b/maximum".to_owned(), Change::Changed),
                ("/required".to_owned(), Change::Changed),
            ]
        );
    }

    #[test]
    fn equal_schemas_have_no_change() {
        let schema = json!({"type": "object", "properties": {"x": {"type": "string"}}});
        assert!(changes(schema.clone(), schema).is_empty());
    }
}
