//! What a tool's annotations tell a front end: the title a call shows
//! with, and the kind of call it is.
//!
//! Annotations are hints (the specification says so): they choose what
//! an editor shows and whether a call asks first, never what dsh lets a
//! server do.

use dsh_tools::ToolKind;
use rmcp::model::Tool;

/// How a front end shows the calls of one tool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Look {
    /// The tool's human title: its `title`, else its annotations'
    /// `title`; `None` when it has neither (a call shows the exposed
    /// name).
    pub(crate) title: Option<String>,
    /// The kind its hints give ([`kind_of`]).
    pub(crate) kind: ToolKind,
    /// Whether it says `readOnlyHint: true`: by default its calls run
    /// unasked ([`McpApproval`](crate::McpApproval)).
    pub(crate) reads_only: bool,
}

impl Look {
    /// The look of the tool that reads a server's resources: untitled, a
    /// read.
    pub(crate) fn reader() -> Self {
        Self {
            title: None,
            kind: dsh_tools::ToolKind::Read,
            reads_only: true,
        }
    }

    /// The look `tool` asks for.
    pub(crate) fn of(tool: &Tool) -> Self {
        let title = tool
            .title
            .clone()
            .or_else(|| tool.annotations.as_ref()?.title.clone())
            .filter(|title| !title.trim().is_empty());
        let hints = tool.annotations.as_ref();
        Self {
            title,
            kind: kind_of(tool),
            reads_only: hints.and_then(|hints| hints.read_only_hint) == Some(true),
        }
    }
}

/// The ACP kind of a call of `tool`, by its hints:
///
/// - `readOnlyHint: true` reads: `fetch` when `openWorldHint: true` (it
///   reads the world outside, as a web search does), else `read`;
/// - `readOnlyHint: false` or `destructiveHint: true` changes things:
///   `edit`;
/// - `openWorldHint: true` alone reaches outside: `fetch`;
/// - a tool that says none of these is `other`.
pub(crate) fn kind_of(tool: &Tool) -> ToolKind {
    let Some(hints) = &tool.annotations else {
        return ToolKind::Other;
    };
    let open_world = hints.open_world_hint == Some(true);
    match (hints.read_only_hint, hints.destructive_hint) {
        (Some(true), _) if open_world => ToolKind::Fetch,
        (Some(true), _) => ToolKind::Read,
        (Some(false), _) | (_, Some(true)) => ToolKind::Edit,
        _ if open_world => ToolKind::Fetch,
        _ => ToolKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ToolAnnotations;
    use std::sync::Arc;

    fn tool(annotations: Option<ToolAnnotations>) -> Tool {
        let mut tool = Tool::new("t", "A tool.", Arc::new(serde_json::Map::new()));
        tool.annotations = annotations;
        tool
    }

    #[test]
    fn hints_choose_the_kind() {
        let cases = [
            (None, ToolKind::Other),
            (Some(ToolAnnotations::new()), ToolKind::Other),
            (Some(ToolAnnotations::new().read_only(true)), ToolKind::Read),
            (
                Some(ToolAnnotations::new().read_only(true).open_world(true)),
                ToolKind::Fetch,
            ),
            (
                Some(ToolAnnotations::new().read_only(false)),
                ToolKind::Edit,
            ),
            (
                Some(ToolAnnotations::new().destructive(true)),
                ToolKind::Edit,
            ),
            (
                Some(ToolAnnotations::new().open_world(true)),
                ToolKind::Fetch,
            ),
            (
                Some(ToolAnnotations::new().destructive(true).open_world(true)),
                ToolKind::Edit,
            ),
        ];
        for (annotations, kind) in cases {
            assert_eq!(kind_of(&tool(annotations.clone())), kind, "{annotations:?}");
        }
    }

    #[test]
    fn the_tools_title_comes_before_its_annotations_and_a_blank_one_is_none() {
        let mut titled = tool(Some(ToolAnnotations::with_title("From hints")));
        assert_eq!(Look::of(&titled).title.as_deref(), Some("From hints"));
        titled.title = Some("Own title".to_owned());
        assert_eq!(Look::of(&titled).title.as_deref(), Some("Own title"));
        titled.title = Some("  ".to_owned());
        titled.annotations = None;
        assert_eq!(Look::of(&titled).title, None);
    }
}
