//! The JSON Schema of `dsh.toml`, made from the types the loader
//! deserializes (their `String` form), so it cannot drift from what
//! [`Deployment::parse`](super::Deployment::parse) accepts.

mod rules;
mod shape;

use std::collections::BTreeMap;

use dsh_tool_mcp::McpServerTable;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;

use super::DeploymentFile;
use super::tools::ToolsSchema;

/// The whole file: the top-level keys [`DeploymentFile`] reads, and the
/// two tables the loader reads table by table.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "dsh.toml",
    description = "A dsh deployment: one model adapter, the tools it configures, and the agents it serves. `dsh schema` prints this schema."
)]
// A schema of the file, never deserialized.
#[allow(dead_code)]
struct DshToml {
    #[serde(flatten)]
    file: DeploymentFile,
    /// The tools' tables: a built-in tool's settings by its name (`bash`,
    /// `read`, `write`, `edit`, `todo_write`), or, under any other name,
    /// a subagent tool instance the model calls by that name.
    tools: Option<ToolsSchema>,
    /// MCP servers, by name (`[a-z][a-z0-9_]*`, no `__`); an agent lists
    /// `"mcp:<name>"` in its `tools` to get the server's tools, each as
    /// `<name>__<tool>`.
    mcp: Option<BTreeMap<String, McpServerTable>>,
}

/// The JSON Schema (draft 2020-12) of a deployment file, `dsh.toml`:
/// what editors with a TOML language server complete and check the file
/// with. Every table refuses keys the loader refuses, at the key; a
/// `[tools.<name>]` table is bash's, another built-in's or a subagent
/// instance's by its name, and `[adapter.<kind>]` the kind's; every key
/// has its own description; and the rules of `dsh check` a schema can
/// state are in it (`[mcp.<name>]` names, `command` or `url`, positive
/// timeouts). Its shape is the one Taplo reports well (see `shape`).
///
/// ```
/// let schema = dsh_deployment::file::schema();
/// assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
/// assert!(schema["properties"]["agents"].is_object());
/// ```
pub fn schema() -> serde_json::Value {
    let (schema, _) = schema_and_missed_rules();
    schema
}

/// The schema, and the places where a rule of `rules` found nothing to
/// add to (none, as a test asserts).
fn schema_and_missed_rules() -> (serde_json::Value, Vec<&'static str>) {
    let mut settings = SchemaSettings::draft2020_12();
    // One schema per key, with the key's own description: an editor's
    // hover never shows the description beside a `$ref`.
    settings.inline_subschemas = true;
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<DshToml>()
        .to_value();
    shape::for_editors(&mut schema);
    let missed = rules::add_rules(&mut schema);
    if let Some(tools) = schema.pointer_mut("/properties/tools") {
        shape::others_by_pattern(tools);
    }
    rules::servers_by_name(&mut schema);
    shape::unknown_keys_at_the_key(&mut schema);
    shape::hover_through_arrays(&mut schema);
    plain_descriptions(&mut schema);
    (schema, missed)
}

/// Makes every description of `schema` a text for the reader of the file:
/// the types' descriptions are their Rust documentation, so intra-doc
/// links become plain code (`` [`Encoding`] `` → `` `Encoding` ``), and
/// what speaks to a Rust user only — a paragraph on the string type `S`,
/// a Rust example — is left out. TOML examples stay.
fn plain_descriptions(schema: &mut serde_json::Value) {
    match schema {
        serde_json::Value::Object(object) => {
            for (key, value) in object.iter_mut() {
                match value {
                    serde_json::Value::String(text) if key == "description" => {
                        *text = plain_description(text);
                    }
                    value => plain_descriptions(value),
                }
            }
        }
        serde_json::Value::Array(values) => values.iter_mut().for_each(plain_descriptions),
        _ => {}
    }
}

/// One description made plain (see [`plain_descriptions`]).
fn plain_description(text: &str) -> String {
    let mut paragraphs = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (paragraph, after) = match rest.strip_prefix("```") {
            // A code block is one paragraph, blank lines and all.
            Some(fenced) => match fenced.find("\n```") {
                Some(end) => rest.split_at(3 + end + 4),
                None => (rest, ""),
            },
            None => rest.split_once("\n\n").unwrap_or((rest, "")),
        };
        rest = after.trim_start_matches('\n');
        let is_toml = paragraph.starts_with("```toml");
        let is_rust = paragraph.starts_with("```") && !is_toml;
        if !is_rust && !paragraph.starts_with("`S` is how") {
            paragraphs.push(if is_toml {
                paragraph.to_owned()
            } else {
                without_links(paragraph)
            });
        }
    }
    paragraphs.join("\n\n")
}

/// `text` with rustdoc's links as plain code: `` [`A`](path) `` and
/// `` [`A`] `` both become `` `A` ``, and `` [text](path) `` becomes
/// `text`. Brackets inside code (`` `[tools.bash]` ``) are the file's
/// syntax, and stay.
fn without_links(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut in_code = false;
    while let Some(at) = rest.find(['`', '[']) {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if rest.starts_with('`') {
            in_code = !in_code;
            out.push('`');
            rest = &rest[1..];
            continue;
        }
        match link(rest).filter(|_| !in_code) {
            Some((inner, after)) => {
                out.push_str(inner);
                rest = after;
            }
            None => {
                out.push('[');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The link `text` starts with (at its `[`): its shown text and what
/// follows it; `None` when the bracket opens no rustdoc link.
fn link(text: &str) -> Option<(&str, &str)> {
    let inner_end = text.find(']')?;
    let inner = &text[1..inner_end];
    let after = &text[inner_end + 1..];
    if let Some(target) = after.strip_prefix('(') {
        let end = target.find(')')?;
        return Some((inner, &target[end + 1..]));
    }
    let is_code = inner.len() >= 2 && inner.starts_with('`') && inner.ends_with('`');
    is_code.then_some((inner, after))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_finds_its_place() {
        let (_, missed) = schema_and_missed_rules();
        assert!(missed.is_empty(), "rules without a place: {missed:?}");
    }

    #[test]
    fn any_key_but_matches_every_key_but_the_names() {
        let pattern = shape::any_key_but(&["bash", "read", "write", "edit", "todo_write"]);
        let schema = serde_json::json!({ "type": "string", "pattern": pattern });
        let validator = jsonschema::validator_for(&schema).expect("a valid pattern");
        for name in ["bash", "read", "write", "edit", "todo_write"] {
            assert!(!validator.is_valid(&serde_json::json!(name)), "{name}");
        }
        for name in [
            "", "b", "bas", "bashx", "task", "todo", "todo_", "writer", "e", "x y",
        ] {
            assert!(validator.is_valid(&serde_json::json!(name)), "{name:?}");
        }
    }

    #[test]
    fn descriptions_are_for_the_files_reader() {
        assert_eq!(
            plain_description(
                "The [`Encoding`] of [`context_window_for`](crate::context_window_for).\n\n\
                 ```toml\n[tools.bash]\n\nx = [1]\n```\n\n\
                 `S` is how the table holds a string.\n\n\
                 ```\nuse dsh_tools::Permission;\n```"
            ),
            "The `Encoding` of `context_window_for`.\n\n```toml\n[tools.bash]\n\nx = [1]\n```"
        );
        let schema = schema().to_string();
        for rust in ["`S` is how", "](crate::", "use dsh_", "[`"] {
            assert!(!schema.contains(rust), "{rust}");
        }
        // The file's own brackets stay.
        assert_eq!(
            without_links("`[tools.bash]`, names `[a-z][a-z0-9_]*` and [`Tool`]"),
            "`[tools.bash]`, names `[a-z][a-z0-9_]*` and `Tool`"
        );
    }
}
