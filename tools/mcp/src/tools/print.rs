//! What a tool says it is — its description, its input schema, its
//! annotations and title — as a person approved it: a tool whose print
//! changes mid-session is a new tool for approval (the host's rule), so
//! a server cannot get a tool allowed and then change what it does or
//! says it does (a "rug pull").

use rmcp::model::Tool;

/// A tool's print: each part as canonical text (JSON, its keys sorted),
/// so two prints are equal exactly when the server said the same, and a
/// host can keep a digest of it across processes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ToolPrint {
    /// The description the model reads.
    pub description: String,
    /// The input schema, as JSON.
    pub input_schema: String,
    /// The title and annotations, as JSON (`null` parts when absent).
    pub annotations: String,
}

impl ToolPrint {
    /// The print of `tool` as the model sees it: its description
    /// (`description`, after dsh's own additions) and schema, and the
    /// server's title and annotations (`None` for dsh's own tool, the
    /// resource reader).
    pub(crate) fn new(
        description: &str,
        input_schema: &serde_json::Value,
        tool: Option<&Tool>,
    ) -> Self {
        let annotations = tool.map_or(serde_json::Value::Null, |tool| {
            serde_json::json!({
                "title": tool.title,
                "annotations": tool.annotations,
            })
        });
        Self {
            description: description.to_owned(),
            input_schema: input_schema.to_string(),
            annotations: annotations.to_string(),
        }
    }

    /// The parts in which `self` differs from `before`, by name:
    /// `description`, `input schema`, `annotations`.
    pub fn changes_from(&self, before: &ToolPrint) -> Vec<&'static str> {
        let mut changed = Vec::new();
        if self.description != before.description {
            changed.push("description");
        }
        if self.input_schema != before.input_schema {
            changed.push("input schema");
        }
        if self.annotations != before.annotations {
            changed.push("annotations");
        }
        changed
    }
}
