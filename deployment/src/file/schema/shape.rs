//! The shape of the schema an editor reads well: what schemars derives
//! for Rust types, rewritten into forms a TOML language server (Taplo,
//! "Even Better TOML") reports, completes and shows key by key.
//!
//! Measured with Taplo's command line (`taplo check`, npm `@taplo/cli`
//! 0.7.0) and its language server (`taplo lsp stdio` of `taplo-cli`
//! 0.10.0, hover and completion), and read from their source:
//!
//! - An error is shown at every range of the node it is about: a table's
//!   error at the table and at each of its keys and values, a scalar's
//!   once. So a key a table does not have is refused by a schema its
//!   value fails (`additionalProperties: {"not": …}`), which is one error
//!   on that key's line, and not by `additionalProperties: false`, which
//!   is an error at the whole table, repeated for each of its keys.
//! - `anyOf`/`oneOf` alternatives that all fail are one error at the whole
//!   node ("not valid under any of the schemas"), repeated likewise: the
//!   `null` alternatives schemars gives an `Option` (TOML has no null)
//!   are dropped, and an externally tagged enum (`[adapter.<kind>]`)
//!   becomes one table whose keys are its variants.
//! - Completion and hover gather every schema that may apply to a key:
//!   `properties`, `patternProperties` whose pattern matches, and
//!   `additionalProperties` always, even for a key `properties` lists. A
//!   map whose listed keys have tables of their own (`[tools.bash]` and the
//!   subagent instances) names the others by a pattern instead.
//! - Hover shows each gathered schema's own `description` (never the one
//!   beside a `$ref`, and every alternative's of a `oneOf`): the schema is
//!   inlined, and an enum of constants is an `enum`, its values' texts in
//!   Taplo's `x-taplo.docs.enumValues`.

use serde_json::{Map, Value, json};

/// Every rewrite of this module, in order.
pub(super) fn for_editors(schema: &mut Value) {
    without_null(schema);
    each_object(schema, &mut |object| {
        one_table_per_variant(object);
        enum_of_constants(object);
    });
}

/// What a table does not have is refused at the key (see the module's
/// documentation); run last, when every table's keys are final.
pub(super) fn unknown_keys_at_the_key(schema: &mut Value) {
    each_object(schema, &mut |object| {
        let Some(Value::Bool(false)) = object.get("additionalProperties") else {
            return;
        };
        let keys: Vec<&str> = object
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| properties.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let text = match keys.as_slice() {
            [] => "unknown key: this table takes no keys but those its names allow".to_owned(),
            keys => format!(
                "unknown key: the table's keys are {}",
                dsh_system_prompt::template::quoted_list(keys)
            ),
        };
        object.insert(
            "additionalProperties".to_owned(),
            json!({ "not": { "description": text } }),
        );
    });
}

/// Calls `visit` on every object of `node`, parents before children.
fn each_object(node: &mut Value, visit: &mut dyn FnMut(&mut Map<String, Value>)) {
    match node {
        Value::Object(object) => {
            visit(object);
            object
                .values_mut()
                .for_each(|value| each_object(value, visit));
        }
        Value::Array(items) => items.iter_mut().for_each(|item| each_object(item, visit)),
        _ => {}
    }
}

/// Drops `null` from every `type` list and every `anyOf` (an `Option`'s
/// schema), merging a lone alternative left into its node.
fn without_null(node: &mut Value) {
    each_object(node, &mut |object| {
        if let Some(Value::Array(types)) = object.get_mut("type") {
            types.retain(|kind| kind != "null");
            if let [only] = types.as_slice() {
                let only = only.clone();
                object.insert("type".to_owned(), only);
            }
        }
        let null = json!({ "type": "null" });
        let Some(Value::Array(alternatives)) = object.get_mut("anyOf") else {
            return;
        };
        if !alternatives.contains(&null) {
            return;
        }
        alternatives.retain(|alternative| *alternative != null);
        if let [Value::Object(only)] = alternatives.as_slice() {
            let only = only.clone();
            object.remove("anyOf");
            for (key, value) in only {
                // The node's own description is the key's; keep it.
                object.entry(key).or_insert(value);
            }
        }
    });
}

/// An externally tagged enum (`oneOf` tables of one required key each)
/// made one table whose keys are the variants, one of them set.
fn one_table_per_variant(object: &mut Map<String, Value>) {
    let Some(Value::Array(alternatives)) = object.get("oneOf") else {
        return;
    };
    let mut variants = Map::new();
    for alternative in alternatives {
        let Some((key, mut table)) = single_key_table(alternative) else {
            return;
        };
        if let (Some(text), Value::Object(table)) = (alternative.get("description"), &mut table) {
            table.insert("description".to_owned(), text.clone());
        }
        variants.insert(key, table);
    }
    object.remove("oneOf");
    object.insert("type".to_owned(), json!("object"));
    object.insert("properties".to_owned(), Value::Object(variants));
    object.insert("minProperties".to_owned(), json!(1));
    object.insert("maxProperties".to_owned(), json!(1));
    object.insert("additionalProperties".to_owned(), json!(false));
}

/// The key and table of `{"properties": {key: table}, "required": [key]}`.
fn single_key_table(alternative: &Value) -> Option<(String, Value)> {
    let properties = alternative.get("properties")?.as_object()?;
    let [Value::String(key)] = alternative.get("required")?.as_array()?.as_slice() else {
        return None;
    };
    if properties.len() != 1 {
        return None;
    }
    Some((key.clone(), properties.get(key)?.clone()))
}

/// A `oneOf` of constants (a unit enum) made an `enum`, each value's text
/// where Taplo's completion shows it.
fn enum_of_constants(object: &mut Map<String, Value>) {
    let Some(Value::Array(alternatives)) = object.get("oneOf") else {
        return;
    };
    let Some(values) = alternatives
        .iter()
        .map(|alternative| alternative.get("const").cloned())
        .collect::<Option<Vec<Value>>>()
    else {
        return;
    };
    let texts: Vec<Value> = alternatives
        .iter()
        .map(|alternative| {
            alternative
                .get("description")
                .cloned()
                .unwrap_or(Value::Null)
        })
        .collect();
    // No `type` beside the `enum`: a value of another type would be two
    // errors at one place.
    object.remove("oneOf");
    object.insert("enum".to_owned(), Value::Array(values));
    object.insert(
        "x-taplo".to_owned(),
        json!({ "docs": { "enumValues": texts } }),
    );
}

/// A map whose listed keys have tables of their own (`[tools.bash]`) and
/// any other key another table (`[tools.<instance>]`): the others named
/// by a pattern, so an editor never offers a listed key the other table.
pub(super) fn others_by_pattern(map: &mut Value) {
    let Some(object) = map.as_object_mut() else {
        return;
    };
    let listed: Vec<String> = match object.get("properties").and_then(Value::as_object) {
        Some(properties) => properties.keys().cloned().collect(),
        None => return,
    };
    let Some(other @ Value::Object(_)) = object.remove("additionalProperties") else {
        return;
    };
    let listed: Vec<&str> = listed.iter().map(String::as_str).collect();
    object.insert(
        "patternProperties".to_owned(),
        json!({ any_key_but(&listed): other }),
    );
    object.insert("additionalProperties".to_owned(), json!(false));
}

/// A regular expression matching every key but `names`, without
/// look-around, which the regex engine of Taplo's completion lacks: the
/// complement of the names' trie.
pub(super) fn any_key_but(names: &[&str]) -> String {
    format!("^(?:{})$", but(names, 0))
}

/// The alternatives of [`any_key_but`] past the first `depth` bytes,
/// which `names` share.
fn but(names: &[&str], depth: usize) -> String {
    let mut alternatives = Vec::new();
    if !names.iter().any(|name| name.len() == depth) {
        alternatives.push(String::new());
    }
    let mut firsts: Vec<char> = names
        .iter()
        .filter_map(|name| name[depth..].chars().next())
        .collect();
    firsts.sort_unstable();
    firsts.dedup();
    for first in &firsts {
        let rest: Vec<&str> = names
            .iter()
            .copied()
            .filter(|name| name[depth..].starts_with(*first))
            .collect();
        alternatives.push(format!(
            "{}(?:{})",
            escaped(*first),
            but(&rest, depth + first.len_utf8())
        ));
    }
    let any = r"[\s\S]";
    let next = if firsts.is_empty() {
        any.to_owned()
    } else {
        format!(
            "[^{}]",
            firsts.iter().map(|c| escaped(*c)).collect::<String>()
        )
    };
    alternatives.push(format!("{next}{any}*"));
    alternatives.join("|")
}

/// `c` as a regular expression matches it, inside a class or out.
fn escaped(c: char) -> String {
    if c.is_ascii_punctuation() && c != '_' {
        format!("\\{c}")
    } else {
        c.to_string()
    }
}

/// Hover through arrays as Taplo's language server (0.10) looks them up:
/// over a key whose value is an array it shows the schema of the array's
/// items, and under `[[agents]]` it looks a key up one array level too
/// deep (`agents.0.0.id`). So an array's items carry the array's
/// description when they have none, and a table of an array of tables is
/// its own `items` once more, without which its keys show nothing. An
/// `items` beside an object's `properties` validates nothing: only an
/// array has items.
pub(super) fn hover_through_arrays(node: &mut Value) {
    match node {
        Value::Object(object) => object.values_mut().for_each(hover_through_arrays),
        Value::Array(items) => items.iter_mut().for_each(hover_through_arrays),
        _ => return,
    }
    let Some(object) = node.as_object_mut() else {
        return;
    };
    let description = object.get("description").cloned();
    let Some(Value::Object(items)) = object.get_mut("items") else {
        return;
    };
    if items.contains_key("properties") {
        let mut again = items.clone();
        again.remove("items");
        items.insert("items".to_owned(), Value::Object(again));
    } else if let Some(description) = description {
        items.entry("description".to_owned()).or_insert(description);
    }
}
