//! What a server's tools are now, as the model sees them: each tool's
//! exposed name, schema, look, print and output schema, and the tools
//! left out with why.

use std::collections::HashMap;
use std::sync::Arc;

use dsh_system_prompt::ToolSchema;
use rmcp::model::{Resource, ResourceTemplate};

use crate::ServerConfig;
use crate::resources::read::{READ_RESOURCE, reader_schema};
use crate::tasks::LeftOut;
use crate::tools::annotations::Look;
use crate::tools::naming::{ExposedName, exposed_names};
use crate::tools::print::ToolPrint;

/// What the server's tools are now; replaced whole when the server says
/// its list changed.
#[derive(Debug, Default)]
pub(crate) struct ToolSet {
    /// The schemas the model sees, in the server's order.
    pub(crate) schemas: Vec<Arc<ToolSchema>>,
    /// Exposed name → the server's name.
    pub(crate) raw: HashMap<String, String>,
    /// Every exposed name, with its fix.
    pub(crate) names: Vec<ExposedName>,
    /// Names in `allowed_tools` the server does not have.
    pub(crate) unknown_allowed: Vec<String>,
    /// The exposed names of the tools whose annotations say
    /// `readOnlyHint: true`.
    pub(crate) read_only: std::collections::HashSet<String>,
    /// The name of every tool the server listed, allowed or not, in its
    /// order.
    pub(crate) listed: Vec<String>,
    /// Exposed name → the tool's `outputSchema`, compiled (or why it does
    /// not compile), for the tools that declare one.
    pub(crate) outputs: HashMap<String, Result<Arc<jsonschema::Validator>, String>>,
    /// Exposed name → how a front end shows its calls (title, kind).
    pub(crate) looks: HashMap<String, Look>,
    /// Exposed name → what the tool says it is ([`ToolPrint`]).
    pub(crate) prints: HashMap<String, ToolPrint>,
    /// The exposed name of the tool that reads the server's resources
    /// (`<server>__read_resource`), for a server that has resources.
    pub(crate) reader: Option<String>,
    /// The tools it listed that the model does not see, each with why.
    pub(crate) left_out: Vec<(String, LeftOut)>,
}

impl ToolSet {
    /// The tools of `server` as the model sees them: those it `listed`
    /// that its allow-list lets through, and, when it has `resources`
    /// (`None`: it has no resources capability), the tool that reads them
    /// and its resource `templates`, last. A tool in `task_only` is left
    /// out.
    pub(crate) fn new(
        server: &ServerConfig,
        listed: Vec<rmcp::model::Tool>,
        (resources, templates): (Option<&[Resource]>, &[ResourceTemplate]),
        task_only: &std::collections::HashSet<String>,
    ) -> Self {
        let listed_names = listed.iter().map(|tool| tool.name.to_string()).collect();
        let (tools, left_out) = kept(listed, |name| {
            if !server.allows(name) {
                Some(LeftOut::NotAllowed)
            } else if task_only.contains(name) {
                Some(LeftOut::TaskOnly)
            } else {
                None
            }
        });
        let resources = resources.filter(|_| server.allows(READ_RESOURCE));
        let mut raw_names: Vec<String> = tools.iter().map(|tool| tool.name.to_string()).collect();
        if resources.is_some() {
            raw_names.push(READ_RESOURCE.to_owned());
        }
        let names = exposed_names(&server.name, raw_names);
        let mut schemas: Vec<Arc<ToolSchema>> = tools
            .iter()
            .zip(&names)
            .map(|(tool, name)| {
                Arc::new(ToolSchema::new(
                    name.exposed.clone(),
                    tool.description.as_deref().unwrap_or_default(),
                    serde_json::Value::Object((*tool.input_schema).clone()),
                ))
            })
            .collect();
        let mut looks: HashMap<String, Look> = tools
            .iter()
            .zip(&names)
            .map(|(tool, name)| (name.exposed.clone(), Look::of(tool)))
            .collect();
        let mut prints = prints_of(&tools, &names, &schemas);
        let outputs = output_validators(&tools, &names);
        let reader = resources
            .zip(names.get(tools.len()))
            .map(|(resources, name)| {
                let schema = reader_schema(&server.name, &name.exposed, resources, templates);
                let print = ToolPrint::new(&schema.description, &schema.parameters, None);
                prints.insert(name.exposed.clone(), print);
                schemas.push(schema);
                looks.insert(name.exposed.clone(), Look::reader());
                name.exposed.clone()
            });
        let raw = names
            .iter()
            .map(|name| (name.exposed.clone(), name.tool.clone()))
            .collect();
        let read_only = looks
            .iter()
            .filter(|(_, look)| look.reads_only)
            .map(|(exposed, _)| exposed.clone())
            .collect();
        let unknown_allowed = server
            .allowed_tools
            .iter()
            .flatten()
            .filter(|allowed| !names.iter().any(|name| &name.tool == *allowed))
            .cloned()
            .collect();
        Self {
            schemas,
            raw,
            names,
            unknown_allowed,
            read_only,
            listed: listed_names,
            outputs,
            looks,
            prints,
            reader,
            left_out,
        }
    }
}

/// What each of `tools` says it is, by its exposed name (`names` and
/// `schemas`, in `tools`' order).
fn prints_of(
    tools: &[rmcp::model::Tool],
    names: &[ExposedName],
    schemas: &[Arc<ToolSchema>],
) -> HashMap<String, ToolPrint> {
    (tools.iter().zip(names).zip(schemas))
        .map(|((tool, name), schema)| {
            let print = ToolPrint::new(&schema.description, &schema.parameters, Some(tool));
            (name.exposed.clone(), print)
        })
        .collect()
}

/// Each tool's `outputSchema`, compiled (or why it does not compile), by
/// its exposed name (`names`, in `tools`' order).
fn output_validators(
    tools: &[rmcp::model::Tool],
    names: &[ExposedName],
) -> HashMap<String, Result<Arc<jsonschema::Validator>, String>> {
    (tools.iter().zip(names))
        .filter_map(|(tool, name)| {
            let schema = serde_json::Value::Object((**tool.output_schema.as_ref()?).clone());
            let compiled = jsonschema::validator_for(&schema)
                .map(Arc::new)
                .map_err(|error| error.to_string());
            Some((name.exposed.clone(), compiled))
        })
        .collect()
}

/// The tools of `listed` that `left_out` finds no reason to leave out, and
/// those it does, each with its reason.
fn kept(
    listed: Vec<rmcp::model::Tool>,
    left_out: impl Fn(&str) -> Option<LeftOut>,
) -> (Vec<rmcp::model::Tool>, Vec<(String, LeftOut)>) {
    let mut out = Vec::new();
    let kept = (listed.into_iter())
        .filter(|tool| match left_out(&tool.name) {
            Some(why) => {
                out.push((tool.name.to_string(), why));
                false
            }
            None => true,
        })
        .collect();
    (kept, out)
}
