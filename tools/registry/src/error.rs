//! The errors of tool calls and of tool registration.

use std::fmt;

/// A tool call failed. Every message names the tool, because the model
/// reads it as the call's result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// An argument breaks a rule of the tool (`field` names it, as a path
    /// like `todos[1].status`).
    #[error("invalid arguments for tool `{tool}`: `{field}`: {message}")]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// The offending argument, as a path into the arguments object.
        field: String,
        /// What is wrong with it, and what would be right.
        message: String,
    },
    /// The arguments do not match the tool's JSON schema.
    #[error("invalid arguments for tool `{tool}`: {}", Violations(.violations))]
    SchemaViolations {
        /// The tool.
        tool: String,
        /// Every violation, in the schema validator's order.
        violations: Vec<ArgumentViolation>,
    },
    /// The arguments are not JSON.
    #[error("the arguments of tool `{tool}` are not valid JSON: {message}; pass one JSON object")]
    MalformedArguments {
        /// The tool.
        tool: String,
        /// The JSON parser's message.
        message: String,
    },
    /// The model called a tool that is not registered.
    #[error("there is no tool `{tool}`; {}", available_tools(.available))]
    UnknownTool {
        /// The name the model called.
        tool: String,
        /// The registered tools.
        available: Vec<String>,
    },
    /// The tool ran and failed.
    #[error("tool `{tool}` failed: {message}")]
    Failed {
        /// The tool.
        tool: String,
        /// What failed.
        message: String,
    },
    /// The call was cancelled before the tool finished.
    #[error("tool `{tool}` was cancelled before it finished")]
    Cancelled {
        /// The tool.
        tool: String,
    },
    /// The tool panicked. The registry caught it; the tool has a bug.
    #[error("tool `{tool}` panicked: {message}")]
    Panicked {
        /// The tool.
        tool: String,
        /// The panic's message.
        message: String,
    },
}

impl ToolError {
    /// An [`InvalidArguments`](Self::InvalidArguments) error.
    pub fn invalid_arguments(
        tool: impl Into<String>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self::InvalidArguments {
            tool: tool.into(),
            field: field.into(),
            message: message.into(),
        }
    }

    /// A [`Failed`](Self::Failed) error.
    pub fn failed(tool: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Failed {
            tool: tool.into(),
            message: message.into(),
        }
    }

    /// A [`Cancelled`](Self::Cancelled) error.
    pub fn cancelled(tool: impl Into<String>) -> Self {
        Self::Cancelled { tool: tool.into() }
    }

    /// The tool the error is about.
    pub fn tool(&self) -> &str {
        match self {
            Self::InvalidArguments { tool, .. }
            | Self::SchemaViolations { tool, .. }
            | Self::MalformedArguments { tool, .. }
            | Self::UnknownTool { tool, .. }
            | Self::Failed { tool, .. }
            | Self::Cancelled { tool }
            | Self::Panicked { tool, .. } => tool,
        }
    }
}

/// One way the arguments break the tool's schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentViolation {
    /// The offending argument, as a path like `todos[1].status`; empty for
    /// the arguments object itself.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ArgumentViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "`{}`: {}", self.field, self.message)
        }
    }
}

struct Violations<'a>(&'a [ArgumentViolation]);

impl fmt::Display for Violations<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (at, violation) in self.0.iter().enumerate() {
            if at > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{violation}")?;
        }
        Ok(())
    }
}

fn available_tools(available: &[String]) -> String {
    if available.is_empty() {
        return "no tools are available".to_owned();
    }
    format!(
        "available tools: {}",
        dsh_system_prompt::template::quoted_list(available)
    )
}

/// Registering a tool failed; the registry is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolRegistryError {
    /// A tool of that name is already registered.
    #[error("tool `{name}` is already registered; tool names are unique")]
    DuplicateTool {
        /// The name registered twice.
        name: String,
    },
    /// A tool name outside the grammar models accept.
    #[error("invalid tool name `{name}`: a tool name is 1 to 64 ASCII letters, digits, `_` or `-`")]
    InvalidToolName {
        /// The rejected name.
        name: String,
    },
    /// The tool's parameters are not a usable JSON schema.
    #[error("the parameters of tool `{tool}` are not a valid JSON schema: {message}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// What is wrong with the schema.
        message: String,
    },
    /// A tool selection names a tool that is not registered.
    #[error("tool selection names unknown tool `{name}`; {}", available_tools(.available))]
    UnknownTool {
        /// The unknown name.
        name: String,
        /// The registered tools.
        available: Vec<String>,
    },
}
