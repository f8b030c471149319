//! The `subagent` tool: one tool per provider, worded after it.

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use async_trait::async_trait;
use dsh_agent_loop::CallingTurn;
use dsh_tools::{
    Tool, ToolCallContext, ToolError, ToolOutput, ToolProgress, ToolRegistry, panic_message,
    parameters_for, parse_arguments,
};
use futures::FutureExt;
use serde::{Deserialize, Serialize};

use crate::{SubagentError, SubagentProvider, SubagentProviders, SubagentRun, SubagentTask};

/// Which provider a subagent tool runs, and the tool's name.
///
/// ```toml
/// name = "subagent"
/// provider = "spawn"
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubagentToolConfig {
    /// The tool's name, as the model calls it; `subagent` by default. A
    /// second subagent tool needs another name.
    #[serde(default = "SubagentToolConfig::default_name")]
    pub name: String,
    /// The provider the tool is bound to.
    pub provider: String,
    /// How deep children may nest: a call that would start a child deeper
    /// than this is refused (see [`current_depth`](crate::current_depth)).
    #[serde(default = "SubagentToolConfig::default_max_depth")]
    pub max_depth: u32,
}

impl SubagentToolConfig {
    /// The tool name unless the config gives another.
    pub const DEFAULT_NAME: &'static str = "subagent";

    fn default_name() -> String {
        Self::DEFAULT_NAME.to_owned()
    }

    fn default_max_depth() -> u32 {
        crate::DEFAULT_MAX_DEPTH
    }

    /// A tool named `subagent`, bound to `provider`.
    pub fn new(provider: impl Into<String>) -> Self {
        Self {
            name: Self::default_name(),
            provider: provider.into(),
            max_depth: crate::DEFAULT_MAX_DEPTH,
        }
    }

    /// Limits how deep children may nest.
    pub fn with_max_depth(mut self, max_depth: u32) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// Names the tool.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

/// The tool's arguments.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct SubagentArgs {
    /// Replaced by the wording of the bound provider.
    prompt: String,
}

/// A tool that hands a task to a subagent of one provider and returns the
/// subagent's final answer.
///
/// Its description and the description of its `prompt` parameter follow
/// the provider's [`inherits_parent_context`](SubagentProvider::inherits_parent_context):
/// a fresh child is said not to see this conversation, so the model writes
/// a complete, self-contained prompt; an inheriting child is said to see
/// the completed turns, so the prompt states only what is new.
pub struct SubagentTool {
    name: String,
    max_depth: u32,
    provider: Arc<dyn SubagentProvider>,
    description: String,
    parameters: serde_json::Value,
}

impl fmt::Debug for SubagentTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubagentTool")
            .field("name", &self.name)
            .field("provider", &self.provider.name())
            .finish()
    }
}

impl SubagentTool {
    /// The tool `config` describes, its provider resolved from
    /// `providers` now: a provider that is not registered fails here, not
    /// at the first call.
    pub fn resolve(
        config: &SubagentToolConfig,
        providers: &SubagentProviders,
    ) -> Result<Self, SubagentError> {
        let Some(provider) = providers.get(&config.provider) else {
            return Err(SubagentError::UnknownProvider {
                tool: config.name.clone(),
                provider: config.provider.clone(),
                registered: providers.names(),
            });
        };
        let inherits = provider.inherits_parent_context();
        let mut parameters = parameters_for::<SubagentArgs>();
        if let Some(prompt) = parameters.pointer_mut("/properties/prompt") {
            prompt["description"] = prompt_description(inherits).into();
        }
        Ok(Self {
            name: config.name.clone(),
            max_depth: config.max_depth,
            description: description(inherits, provider.capabilities().tools),
            provider,
            parameters,
        })
    }

    /// Resolves the tool (see [`resolve`](Self::resolve)) and registers it
    /// in `tools`.
    pub fn install(
        config: &SubagentToolConfig,
        providers: &SubagentProviders,
        tools: &ToolRegistry,
    ) -> Result<(), SubagentError> {
        let tool = Self::resolve(config, providers)?;
        tools.register(Arc::new(tool))?;
        Ok(())
    }

    /// The provider the tool is bound to.
    pub fn provider(&self) -> &Arc<dyn SubagentProvider> {
        &self.provider
    }

    fn failed(&self, error: &SubagentError) -> ToolError {
        match error {
            SubagentError::Cancelled { .. } => ToolError::cancelled(&self.name),
            error => ToolError::failed(&self.name, error.to_string()),
        }
    }
}

fn description(inherits: bool, tools: bool) -> String {
    let tools = if tools {
        "It can use tools."
    } else {
        "It cannot use tools: ask only for what it can answer from the prompt."
    };
    if inherits {
        format!(
            "Forks a subagent that continues from this conversation, works on one task, and \
             returns its final answer as this call's result. The subagent already sees every \
             completed turn of this conversation, but not the current one. {tools} Use it for a \
             side task that builds on what has been said, without filling this conversation \
             with the work."
        )
    } else {
        format!(
            "Starts a fresh subagent that works on one task on its own and returns its final \
             answer as this call's result. The subagent does not see this conversation: it \
             knows only the prompt you give it, so the prompt must be complete and \
             self-contained. {tools} Use it for a task you can describe in full and that can be \
             done independently."
        )
    }
}

fn prompt_description(inherits: bool) -> &'static str {
    if inherits {
        "What the subagent should do now. It already sees the completed turns of this \
         conversation, so state only what is new: the task, and anything from the current turn \
         it needs."
    } else {
        "The complete, self-contained task for the subagent. It does not see this conversation: \
         include the goal, every fact, file path and constraint it needs, and what to report \
         back."
    }
}

/// Disposes its run when dropped: on success, error, cancellation, a
/// panic, and when the call's future is dropped mid-run.
struct Disposing(Box<dyn SubagentRun>);

impl Drop for Disposing {
    fn drop(&mut self) {
        // A panic while unwinding would abort the process: contain it.
        let _ = std::panic::catch_unwind(AssertUnwindSafe(|| self.0.dispose()));
    }
}

#[async_trait]
impl Tool for SubagentTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> String {
        self.description.clone()
    }

    fn parameters(&self) -> serde_json::Value {
        self.parameters.clone()
    }

    async fn execute(
        &self,
        arguments: serde_json::Value,
        cx: &ToolCallContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: SubagentArgs = parse_arguments(&self.name, arguments)?;
        if args.prompt.trim().is_empty() {
            return Err(ToolError::invalid_arguments(
                &self.name,
                "prompt",
                "the prompt is empty; write the task for the subagent",
            ));
        }
        let depth = crate::current_depth().saturating_add(1);
        if depth > self.max_depth {
            return Err(ToolError::failed(
                &self.name,
                format!(
                    "not started: the child would be subagent level {depth}, over the limit of \
                     {} (`max_subagent_depth`); do this task yourself",
                    self.max_depth
                ),
            ));
        }
        let mut task = SubagentTask::new(args.prompt);
        task.depth = depth;
        task.parent = cx.get::<CallingTurn>().cloned();
        task.cwd = cx.cwd.clone();
        task.session_id = cx.session_id.clone();
        task.call_id = cx.call_id.clone();
        task.cancel = cx.cancel.clone();
        task.progress = cx.get::<ToolProgress>().cloned();

        // A child's failure, even a panic, is this call's error result,
        // never the caller's crash.
        let provider = self.provider.name().to_owned();
        let started = AssertUnwindSafe(self.provider.start(task))
            .catch_unwind()
            .await
            .unwrap_or_else(|payload| {
                Err(SubagentError::ChildPanicked {
                    provider: provider.clone(),
                    message: panic_message(payload.as_ref()),
                })
            });
        let mut run = Disposing(started.map_err(|error| self.failed(&error))?);
        let finished = tokio::select! {
            biased;
            () = cx.cancel.cancelled() => Err(SubagentError::Cancelled { provider }),
            finished = AssertUnwindSafe(run.0.finish()).catch_unwind() => {
                finished.unwrap_or_else(|payload| {
                    Err(SubagentError::ChildPanicked {
                        provider,
                        message: panic_message(payload.as_ref()),
                    })
                })
            }
        };
        drop(run);
        match finished {
            Ok(answer) if answer.trim().is_empty() => {
                Ok(ToolOutput::new("(the subagent finished without an answer)"))
            }
            Ok(answer) => Ok(ToolOutput::new(answer)),
            Err(error) => Err(self.failed(&error)),
        }
    }
}
