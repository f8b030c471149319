//! `ToolRegistry`: the tools of a process, their schemas, and their calls.

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use dsh_system_prompt::{AssembleContext, Registration, RegistryError, SystemPrompt, ToolSchema};
use futures::FutureExt;
use parking_lot::RwLock;
use serde_json::Value;

use crate::arguments::violations;
use crate::{
    Tool, ToolCallContext, ToolError, ToolRegistryError, ToolResult, ToolSelection,
    ToolSelectionExt, panic_message,
};

/// The tools of a process: each with its schema, built once when it is
/// registered and shared by every assembly behind an `Arc`.
///
/// `ToolRegistry` is `Send + Sync` and cheap to clone (clones share one
/// registry). [`install`](Self::install) makes it a tool provider of a
/// [`SystemPrompt`]; [`call`](Self::call) runs the calls the model makes.
///
/// ```
/// use dsh_system_prompt::{AssembleContext, SystemPrompt};
/// use dsh_tools::{Tool, ToolCallContext, ToolError, ToolOutput, ToolRegistry, ToolSelection, async_trait};
/// use std::sync::Arc;
///
/// struct Echo;
///
/// #[async_trait]
/// impl Tool for Echo {
///     fn name(&self) -> &str { "echo" }
///     fn description(&self) -> String { "Returns `text` unchanged.".to_owned() }
///     fn parameters(&self) -> serde_json::Value {
///         serde_json::json!({
///             "type": "object",
///             "properties": {"text": {"type": "string"}},
///             "required": ["text"],
///         })
///     }
///     async fn execute(&self, arguments: serde_json::Value, _cx: &ToolCallContext) -> Result<ToolOutput, ToolError> {
///         Ok(ToolOutput::new(arguments["text"].as_str().unwrap_or_default()))
///     }
/// }
///
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let tools = ToolRegistry::new();
/// tools.register(Arc::new(Echo))?;
///
/// let prompt = SystemPrompt::empty();
/// let _installed = tools.install(&prompt)?;
/// assert_eq!(prompt.assemble(&AssembleContext::default()).tools.len(), 1);
/// let no_tools = AssembleContext::new().with(ToolSelection::new(Vec::<String>::new()));
/// assert!(prompt.assemble(&no_tools).tools.is_empty());
///
/// let cx = ToolCallContext::new("session-1");
/// let result = tools.call("echo", r#"{"text": "hi"}"#, &cx).await;
/// assert_eq!((result.text.as_str(), result.is_error), ("hi", false));
///
/// let result = tools.call("echo", r#"{"text": 7}"#, &cx).await;
/// assert!(result.is_error);
/// assert_eq!(result.text, "invalid arguments for tool `echo`: `text`: 7 is not of type \"string\"");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default)]
pub struct ToolRegistry {
    inner: Arc<RwLock<Vec<Arc<Entry>>>>,
    resolvers: Arc<RwLock<Vec<Arc<dyn ToolResolver>>>>,
}

/// Tools that come and go while a process runs (the tools of MCP servers,
/// which a server may change at any time, and which an editor's session
/// brings and takes away): a [`ToolRegistry`] asks its resolvers, in the
/// order they were added, for a name none of its own tools has.
///
/// A resolver's tools reach the model through a prompt provider of their
/// own; the registry only runs their calls. Their arguments are not
/// validated here: the tool's owner (the MCP server) validates them.
pub trait ToolResolver: Send + Sync + 'static {
    /// The tool named `name` for a call made in `cx` (its session), if
    /// this resolver has one.
    fn resolve(&self, name: &str, cx: &ToolCallContext) -> Option<Arc<dyn Tool>>;
}

struct Entry {
    tool: Arc<dyn Tool>,
    schema: Arc<ToolSchema>,
    validator: jsonschema::Validator,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `tool`, building its schema and argument validator once.
    ///
    /// Fails, leaving the registry unchanged, when the name is taken or
    /// outside `[A-Za-z0-9_-]{1,64}`, or when the parameters are not a
    /// valid JSON schema.
    pub fn register(&self, tool: Arc<dyn Tool>) -> Result<(), ToolRegistryError> {
        let name = tool.name().to_owned();
        if !is_tool_name(&name) {
            return Err(ToolRegistryError::InvalidToolName { name });
        }
        let parameters = tool.parameters();
        let validator = jsonschema::validator_for(&parameters).map_err(|error| {
            ToolRegistryError::InvalidSchema {
                tool: name.clone(),
                message: error.to_string(),
            }
        })?;
        let schema = Arc::new(ToolSchema::new(name, tool.description(), parameters));
        let mut tools = self.inner.write();
        if tools.iter().any(|entry| entry.schema.name == schema.name) {
            return Err(ToolRegistryError::DuplicateTool {
                name: schema.name.clone(),
            });
        }
        tools.push(Arc::new(Entry {
            tool,
            schema,
            validator,
        }));
        Ok(())
    }

    /// Adds a [`ToolResolver`], asked for the names no registered tool
    /// has; it is kept while the registry lives.
    pub fn add_resolver(&self, resolver: Arc<dyn ToolResolver>) {
        self.resolvers.write().push(resolver);
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.entry(name).map(|entry| Arc::clone(&entry.tool))
    }

    /// The tool a call of `name` in `cx` would run: the registered tool of
    /// that name, else the first a [`ToolResolver`] gives (an MCP server's
    /// tool, which a session may have alone). For a front end that shows
    /// a call ([`Tool::kind`](crate::Tool::kind),
    /// [`Tool::title`](crate::Tool::title)) before it runs.
    pub fn resolve(&self, name: &str, cx: &ToolCallContext) -> Option<Arc<dyn Tool>> {
        if let Some(tool) = self.get(name) {
            return Some(tool);
        }
        (self.resolvers.read().iter()).find_map(|resolver| resolver.resolve(name, cx))
    }

    /// The registered tools' names, in registration order.
    pub fn names(&self) -> Vec<String> {
        self.inner
            .read()
            .iter()
            .map(|entry| entry.schema.name.clone())
            .collect()
    }

    /// Every tool's schema, in registration order.
    pub fn schemas(&self) -> Vec<Arc<ToolSchema>> {
        self.selected_schemas(None)
    }

    /// The schemas of the tools `selection` selects (every tool when
    /// `None`), in registration order.
    pub fn selected_schemas(&self, selection: Option<&ToolSelection>) -> Vec<Arc<ToolSchema>> {
        self.inner
            .read()
            .iter()
            .filter(|entry| {
                selection.is_none_or(|selection| selection.contains(&entry.schema.name))
            })
            .map(|entry| Arc::clone(&entry.schema))
            .collect()
    }

    /// Fails on the first name in `selection` that no registered tool has:
    /// for validating a deployment before any agent runs.
    pub fn check_selection(&self, selection: &ToolSelection) -> Result<(), ToolRegistryError> {
        let names = self.names();
        match selection.tools.iter().find(|name| !names.contains(name)) {
            Some(unknown) => Err(ToolRegistryError::UnknownTool {
                name: unknown.clone(),
                available: names,
            }),
            None => Ok(()),
        }
    }

    /// Registers this registry as a tool provider of `prompt`: each
    /// assembly gets the schemas of the tools its context's
    /// [`ToolSelection`] selects (every tool when it has none), in
    /// registration order. Tools registered later appear in later
    /// assemblies. Dropping the returned handle uninstalls it.
    pub fn install(&self, prompt: &SystemPrompt) -> Result<Registration, RegistryError> {
        let registry = self.clone();
        prompt.tools("tool-registry", move |cx: &AssembleContext| {
            registry.selected_schemas(cx.tool_selection())
        })
    }

    /// Runs one call from the model and never fails: an unknown tool,
    /// arguments that are not JSON or break the schema (the message names
    /// the field), a [`ToolError`], a panic inside the tool, and
    /// cancellation through `cx.cancel` all become a result with
    /// `is_error` set and a message naming the tool.
    ///
    /// Empty `arguments` (some models send `""` for a tool without
    /// parameters) count as `{}`.
    pub async fn call(&self, name: &str, arguments: &str, cx: &ToolCallContext) -> ToolResult {
        ToolResult::from(self.try_call(name, arguments, cx).await)
    }

    /// Runs one call like [`call`](Self::call), but returns the failure as
    /// a typed [`ToolError`] instead of an error result, so a caller can
    /// tell a panic ([`ToolError::Panicked`]) or a cancellation from an
    /// ordinary tool error.
    pub async fn try_call(
        &self,
        name: &str,
        arguments: &str,
        cx: &ToolCallContext,
    ) -> Result<crate::ToolOutput, ToolError> {
        let tool = match self.entry(name) {
            Some(entry) => {
                let arguments = parse_json(name, arguments)?;
                let violations = violations(&entry.validator, &arguments);
                if !violations.is_empty() {
                    return Err(ToolError::SchemaViolations {
                        tool: name.to_owned(),
                        violations,
                    });
                }
                (Arc::clone(&entry.tool), arguments)
            }
            None => {
                let resolved = self
                    .resolvers
                    .read()
                    .iter()
                    .find_map(|resolver| resolver.resolve(name, cx));
                let Some(tool) = resolved else {
                    return Err(ToolError::UnknownTool {
                        tool: name.to_owned(),
                        available: self.names(),
                    });
                };
                (tool, parse_json(name, arguments)?)
            }
        };
        let (tool, arguments) = tool;
        if cx.cancel.is_cancelled() {
            return Err(ToolError::cancelled(name));
        }
        let run = AssertUnwindSafe(tool.execute(arguments, cx)).catch_unwind();
        tokio::select! {
            outcome = run => outcome.unwrap_or_else(|panic| {
                Err(ToolError::Panicked {
                    tool: name.to_owned(),
                    message: panic_message(panic.as_ref()),
                })
            }),
            () = cx.cancel.cancelled() => Err(ToolError::cancelled(name)),
        }
    }

    fn entry(&self, name: &str) -> Option<Arc<Entry>> {
        self.inner
            .read()
            .iter()
            .find(|entry| entry.schema.name == name)
            .cloned()
    }
}

impl fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.names())
            .finish()
    }
}

fn parse_json(tool: &str, arguments: &str) -> Result<Value, ToolError> {
    if arguments.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(arguments).map_err(|error| ToolError::MalformedArguments {
        tool: tool.to_owned(),
        message: error.to_string(),
    })
}

/// The tool names model APIs accept.
fn is_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}
