//! `ToolOrder`: where each tool goes in the list sent beside the system
//! prompt. The list is part of the request prefix a provider caches, so
//! its order is chosen, never an accident of registration.

use std::sync::Arc;

use crate::suggestion::closest;
use crate::{Text, ToolSchema};

/// The entry of a [`ToolOrder`] that stands for every tool it does not
/// list: they go there, sorted by name.
pub const UNLISTED_TOOLS: &str = "<unlisted-tools>";

/// The order of the tools of an assembly: the listed tools where they are
/// listed, every other tool at [`UNLISTED_TOOLS`], sorted by name.
///
/// Registered per layer with
/// [`SystemPrompt::tool_order`](crate::SystemPrompt::tool_order); the
/// nearest layer's order wins. Without one, every tool is sorted by name.
///
/// ```
/// use dsh_system_prompt::{ToolOrder, ToolOrderError, UNLISTED_TOOLS};
///
/// let order = ToolOrder::new(["todo_write", UNLISTED_TOOLS, "bash"])?;
/// assert_eq!(order.listed().collect::<Vec<_>>(), ["todo_write", "bash"]);
/// assert!(matches!(ToolOrder::new(["bash"]), Err(ToolOrderError::NoMarker)));
/// # Ok::<(), ToolOrderError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolOrder {
    /// The tools listed before the marker.
    before: Vec<Text>,
    /// The tools listed after it.
    after: Vec<Text>,
}

/// A tool order that cannot be used. Each holds the entry at fault by its
/// index in the list (from 0), so a front end can point at it; the message
/// counts entries from 1, as the list's author does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolOrderError {
    /// The list has no [`UNLISTED_TOOLS`].
    #[error(
        "the tool order does not say where unlisted tools go: add `{UNLISTED_TOOLS}` to the list \
         (first, to list only the tools that go last)"
    )]
    NoMarker,
    /// [`UNLISTED_TOOLS`] is listed twice.
    #[error(
        "`{UNLISTED_TOOLS}` is listed twice in the tool order (entries {} and {}); keep one",
        .first + 1,
        .second + 1
    )]
    MarkerTwice {
        /// The index of the first one.
        first: usize,
        /// The index of the second one.
        second: usize,
    },
    /// A tool is listed twice.
    #[error(
        "tool `{name}` is listed twice in the tool order (entries {} and {}); keep one",
        .first + 1,
        .second + 1
    )]
    ListedTwice {
        /// The tool.
        name: String,
        /// The index of the first listing.
        first: usize,
        /// The index of the second one.
        second: usize,
    },
    /// A listed tool no provider knows.
    #[error(
        "the tool order lists `{name}` (entry {}), which is not a tool; {}the tools are {}",
        .at + 1,
        suggestion.as_ref().map(|name| format!("did you mean `{name}`? ")).unwrap_or_default(),
        quoted(.known)
    )]
    UnknownTool {
        /// The listed name.
        name: String,
        /// Its index in the list.
        at: usize,
        /// Every known tool, sorted.
        known: Vec<String>,
        /// The known tool closest to `name`, if any is close.
        suggestion: Option<String>,
    },
    /// A tool is named like the marker, so no order could place it.
    #[error(
        "a tool is named `{UNLISTED_TOOLS}`, the tool order's marker for unlisted tools; rename the tool"
    )]
    MarkerTool,
}

fn quoted(names: &[String]) -> String {
    if names.is_empty() {
        return "none: no tool is registered".to_owned();
    }
    dsh_prompt_template::quoted_list(names)
}

impl ToolOrder {
    /// An order from its list: tool names, and [`UNLISTED_TOOLS`] once.
    /// Fails when the marker is missing or listed twice, or a name is
    /// listed twice.
    pub fn new<I>(names: I) -> Result<Self, ToolOrderError>
    where
        I: IntoIterator,
        I::Item: Into<Text>,
    {
        let names: Vec<Text> = names.into_iter().map(Into::into).collect();
        let mut marker = None;
        for (at, name) in names.iter().enumerate() {
            if *name == UNLISTED_TOOLS {
                if let Some(first) = marker {
                    return Err(ToolOrderError::MarkerTwice { first, second: at });
                }
                marker = Some(at);
            } else if let Some(first) = names[..at].iter().position(|earlier| earlier == name) {
                return Err(ToolOrderError::ListedTwice {
                    name: name.to_string(),
                    first,
                    second: at,
                });
            }
        }
        let marker = marker.ok_or(ToolOrderError::NoMarker)?;
        let mut before = names;
        let after = before.split_off(marker + 1);
        before.pop();
        Ok(Self { before, after })
    }

    /// The order without a list: every tool sorted by name.
    pub fn by_name() -> Self {
        Self {
            before: Vec::new(),
            after: Vec::new(),
        }
    }

    /// The listed tools, in their order (the marker left out).
    pub fn listed(&self) -> impl Iterator<Item = &str> + '_ {
        self.before.iter().chain(&self.after).map(Text::as_str)
    }

    /// Checks the order against every tool there is (before any agent's
    /// restriction: a tool merely hidden from one agent is still a tool):
    /// each listed name must be one, and none may be named like the
    /// marker.
    pub fn check_known<'a>(
        &self,
        known: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), ToolOrderError> {
        let mut known: Vec<String> = known.into_iter().map(str::to_owned).collect();
        known.sort_unstable();
        if known.iter().any(|name| name == UNLISTED_TOOLS) {
            return Err(ToolOrderError::MarkerTool);
        }
        for (name, at) in self.listed().zip(self.listed_indices()) {
            if known
                .binary_search_by(|own| own.as_str().cmp(name))
                .is_err()
            {
                return Err(ToolOrderError::UnknownTool {
                    name: name.to_owned(),
                    at,
                    suggestion: closest(name, &known).cloned(),
                    known,
                });
            }
        }
        Ok(())
    }

    /// The index each listed tool had in the list the order was made from.
    fn listed_indices(&self) -> impl Iterator<Item = usize> + '_ {
        let marker = self.before.len();
        (0..marker).chain((0..self.after.len()).map(move |at| marker + 1 + at))
    }

    /// Puts `tools` in this order (a stable sort: tools of the same name,
    /// which an assembly should not have, keep their providers' order).
    /// Tools already in order, as providers usually return them, are left
    /// as they are after one comparison a tool; without a list, a tool's
    /// key is its name, compared as such.
    pub(crate) fn sort(&self, tools: &mut [Arc<ToolSchema>]) {
        if self.before.is_empty() && self.after.is_empty() {
            if !tools.is_sorted_by(|a, b| a.name <= b.name) {
                tools.sort_by(|a, b| a.name.cmp(&b.name));
            }
        } else if !tools.is_sorted_by(|a, b| self.key(a) <= self.key(b)) {
            tools.sort_by(|a, b| self.key(a).cmp(&self.key(b)));
        }
    }

    /// A tool's place: listed before the marker (by position), unlisted (by
    /// name), or listed after it (by position).
    fn key<'a>(&self, tool: &'a ToolSchema) -> (u8, usize, &'a str) {
        let name = tool.name.as_str();
        if let Some(at) = self.before.iter().position(|listed| *listed == name) {
            (0, at, "")
        } else if let Some(at) = self.after.iter().position(|listed| *listed == name) {
            (2, at, "")
        } else {
            (1, 0, name)
        }
    }
}

impl Default for ToolOrder {
    fn default() -> Self {
        Self::by_name()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;

    use super::{ToolOrder, UNLISTED_TOOLS};
    use crate::ToolSchema;

    const NAMES: [&str; 5] = ["bash", "bash_kill", "bash_output", "read", "todo_write"];

    proptest! {
        /// Whichever way `sort` takes (in order already, by name alone, by
        /// key), it gives the stable sort by the order's key; tools of the
        /// same name keep their providers' order.
        #[test]
        fn sort_is_the_stable_sort_by_key(
            picks in prop::collection::vec(0..NAMES.len(), 0..12),
            listed in any::<bool>(),
        ) {
            let order = if listed {
                ToolOrder::new(["todo_write", UNLISTED_TOOLS, "bash"]).unwrap()
            } else {
                ToolOrder::by_name()
            };
            let tools: Vec<Arc<ToolSchema>> = (picks.iter().enumerate())
                .map(|(at, &pick)| {
                    Arc::new(ToolSchema::new(NAMES[pick], at.to_string(), serde_json::json!({})))
                })
                .collect();
            let mut expected = tools.clone();
            expected.sort_by(|a, b| order.key(a).cmp(&order.key(b)));
            let mut sorted = tools;
            order.sort(&mut sorted);
            let ids = |tools: &[Arc<ToolSchema>]| -> Vec<(String, String)> {
                tools.iter().map(|tool| (tool.name.clone(), tool.description.clone())).collect()
            };
            prop_assert_eq!(ids(&sorted), ids(&expected));
        }
    }
}
