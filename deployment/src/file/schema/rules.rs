//! The rules `dsh check` enforces that a schema can state, added to the
//! schema the types give: an editor flags `startup_timeout_secs = 0` or
//! `[mcp.Bad-Name]` as `dsh check` does. Each value comes from the rule's
//! owner (`MAX_SERVER_NAME`, `MIN_MAX_BYTES`, a provider's `NAME`), so a
//! rule and its schema change together.
//!
//! Conditions are `if`/`then`/`else` on the table itself, never `allOf`:
//! Taplo's completion leaves out the keys of a table whose schema has
//! `allOf`. A key a condition forbids is `false` under `properties`, so
//! the error is at that key.
//!
//! What needs more than one table (an agent's tools naming an instance or
//! a server, `preset` naming a preset, unique agent ids and section
//! names, subagents that start each other) or a value against another
//! (`thinking_budget` below `max_tokens`, the first word of an instance's
//! `command` not blank) is `dsh check`'s alone.

use dsh_agent_loop::Encoding;
use dsh_system_prompt::UNLISTED_TOOLS;
use dsh_tool_mcp::{MAX_SERVER_NAME, MAX_TIMEOUT_SECS, SERVER_NAME_PATTERN};
use dsh_tool_subagent::{AcpProvider, ForkProvider, SpawnProvider};
use serde_json::{Value, json};

use crate::facts::instructions::MIN_MAX_BYTES;
use crate::file::layers::MIN_SECTION_ORDER;

/// An agent's id: not blank, without `/`.
const AGENT_ID_PATTERN: &str = r"^[^/]*[^/\s][^/]*$";

/// An absolute path.
const ABSOLUTE_PATH_PATTERN: &str = "^/";

/// Adds every rule to `schema` (as [`super::shape::for_editors`] left
/// it: inlined, an instance table under `tools`' `additionalProperties`);
/// returns the places of the schema a rule did not find, which a test
/// keeps empty.
pub(super) fn add_rules(schema: &mut Value) -> Vec<&'static str> {
    let mut missed = Vec::new();
    let mut add = |pointer: &'static str, rule: Value| match schema.pointer_mut(pointer) {
        Some(node @ Value::Object(_)) => merge(node, rule),
        _ => missed.push(pointer),
    };
    for (pointer, rule) in agent_rules().into_iter().chain(table_rules()) {
        add(pointer, rule);
    }
    add("/properties/tools/additionalProperties", instance_rules());
    add("/properties/mcp", server_names());
    add("/properties/mcp/additionalProperties", server_rules());
    add("", adapter_model_or_agent_model());
    missed
}

/// `rule` merged into `node`: tables key by key, any other value
/// replacing the node's.
fn merge(node: &mut Value, rule: Value) {
    match (node, rule) {
        (Value::Object(node), Value::Object(rule)) => {
            for (key, value) in rule {
                match node.get_mut(&key) {
                    Some(old) => merge(old, value),
                    None => {
                        node.insert(key, value);
                    }
                }
            }
        }
        (node, rule) => *node = rule,
    }
}

/// `[[agents]]` and the layers': at least one agent, ids, tool lists,
/// section orders.
fn agent_rules() -> Vec<(&'static str, Value)> {
    let tool_order = json!({
        "uniqueItems": true,
        "contains": { "const": UNLISTED_TOOLS },
    });
    let order = json!({ "minimum": MIN_SECTION_ORDER });
    vec![
        ("/properties/agents", json!({ "minItems": 1 })),
        (
            "/properties/agents/items/properties/id",
            json!({ "pattern": AGENT_ID_PATTERN }),
        ),
        (
            "/properties/agents/items/properties/tools",
            json!({ "uniqueItems": true }),
        ),
        ("/properties/tool_order", tool_order.clone()),
        (
            "/properties/agents/items/properties/tool_order",
            tool_order.clone(),
        ),
        (
            "/properties/presets/additionalProperties/properties/tool_order",
            tool_order,
        ),
        (
            "/properties/agents/items/properties/sections/items/properties/order",
            order.clone(),
        ),
        (
            "/properties/presets/additionalProperties/properties/sections/items/properties/order",
            order,
        ),
    ]
}

/// The other tables': paths absolute, instruction files plain names, the
/// tokenizer one of this build's.
fn table_rules() -> Vec<(&'static str, Value)> {
    let absolute = json!({ "pattern": ABSOLUTE_PATH_PATTERN });
    let tokenizer = json!({ "enum": Encoding::ALL.map(Encoding::name) });
    vec![
        (
            "/properties/sandbox/properties/writable/items",
            absolute.clone(),
        ),
        (
            "/properties/tools/properties/write/properties/roots/items",
            absolute.clone(),
        ),
        (
            "/properties/tools/properties/edit/properties/roots/items",
            absolute,
        ),
        (
            "/properties/instructions/properties/files/items",
            json!({
                "minLength": 1,
                "pattern": r"^[^/\\]*$",
                "not": { "enum": [".", ".."] },
            }),
        ),
        (
            "/properties/instructions",
            json!({
                "if": { "properties": { "enabled": { "const": false } }, "required": ["enabled"] },
                "else": { "properties": { "max_bytes": { "minimum": MIN_MAX_BYTES } } },
            }),
        ),
        (
            "/properties/adapter/properties/openai/properties/tokenizer",
            tokenizer.clone(),
        ),
        (
            "/properties/adapter/properties/anthropic/properties/tokenizer",
            tokenizer.clone(),
        ),
        (
            "/properties/adapter/properties/scripted/properties/tokenizer",
            tokenizer,
        ),
        (
            "/properties/adapter/properties/anthropic/properties/thinking_budget",
            json!({ "minimum": 1024 }),
        ),
    ]
}

/// A subagent instance: a provider dsh has, and each key with the
/// provider it goes with (`SubagentTable::check`).
fn instance_rules() -> Value {
    json!({
        "required": ["kind", "provider"],
        "properties": {
            "provider": { "enum": [SpawnProvider::NAME, ForkProvider::NAME, AcpProvider::NAME] },
            "timeout_secs": { "minimum": 1 },
            "command": { "minItems": 1 },
        },
        "if": { "properties": { "provider": { "const": AcpProvider::NAME } } },
        "then": {
            "required": ["command"],
            "properties": { "child": false },
        },
        "else": {
            "properties": { "command": false, "timeout_secs": false },
            "if": { "properties": { "provider": { "const": ForkProvider::NAME } } },
            "then": { "properties": { "child": false } },
        },
    })
}

/// `[mcp.<name>]`: a name a server may have (`is_server_name`).
fn server_names() -> Value {
    json!({ "propertyNames": { "maxLength": MAX_SERVER_NAME } })
}

/// An MCP server's table (`McpServerTable::server_config`): `command`
/// or `url`, not both; headers and a token only with a `url`, a `cwd`
/// only with a `command`; timeouts
/// of more than 0 seconds, at most a day.
fn server_rules() -> Value {
    let seconds = json!({ "exclusiveMinimum": 0, "maximum": MAX_TIMEOUT_SECS });
    json!({
        "properties": {
            "command": { "minItems": 1 },
            "url": { "pattern": "^https?://" },
            "startup_timeout_secs": seconds,
            "call_timeout_secs": seconds,
        },
        "if": { "required": ["url"] },
        "then": { "properties": { "command": false, "cwd": false } },
        "else": {
            "required": ["command"],
            "properties": { "bearer_token_env": false, "headers": { "maxProperties": 0 } },
        },
    })
}

/// Every agent has a model: its own, or the adapter's `model`. (Said
/// as "no adapter table has a model", so two adapter tables are one
/// error, theirs, and not one more for each agent.)
fn adapter_model_or_agent_model() -> Value {
    json!({
        "if": {
            "required": ["adapter"],
            "properties": {
                "adapter": {
                    "minProperties": 1,
                    "patternProperties": { "": { "not": { "required": ["model"] } } },
                },
            },
        },
        "then": {
            "properties": { "agents": { "items": { "required": ["model"] } } },
        },
    })
}

/// The `[mcp.<name>]` tables named by [`SERVER_NAME_PATTERN`]: a table
/// under another name is refused at its name.
pub(super) fn servers_by_name(schema: &mut Value) {
    let Some(Value::Object(mcp)) = schema.pointer_mut("/properties/mcp") else {
        return;
    };
    if let Some(server) = mcp.remove("additionalProperties") {
        mcp.insert(
            "patternProperties".to_owned(),
            json!({ SERVER_NAME_PATTERN: server }),
        );
        mcp.insert("additionalProperties".to_owned(), json!(false));
    }
}
