//! The JSON Schema of `dsh.toml`, made from the types the loader
//! deserializes (their `String` form), so it cannot drift from what
//! [`Deployment::parse`](super::Deployment::parse) accepts.

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
/// with. Every table refuses keys the loader refuses
/// (`additionalProperties: false`).
///
/// ```
/// let schema = dsh_deployment::file::schema();
/// assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
/// assert!(schema["properties"]["agents"].is_object());
/// ```
pub fn schema() -> serde_json::Value {
    SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<DshToml>()
        .to_value()
}
