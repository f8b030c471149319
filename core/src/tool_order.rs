//! `ToolOrder`: where each tool goes in the list sent beside the system
//! prompt. The list is part of the request prefix a provider caches, so
//! its order is chosen, never an accident of registration.

use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwapOption;

use crate::{Text, ToolSchema, closest};

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
    let names: Vec<String> = names.iter().map(|name| format!("`{name}`")).collect();
    names.join(", ")
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

    /// Where each of `tools` goes: `placed[at]` is the index in `tools` of
    /// the tool that goes at `at`. Tools already in order stay where they
    /// are, so the common case costs one comparison a tool.
    ///
    /// An order without a list compares names alone (W1 in BENCHMARKS.md:
    /// 346 ns sorting by [`key`](Self::key), 291 ns by name, 269 ns not
    /// sorting).
    fn placement(&self, tools: &[Arc<ToolSchema>]) -> Vec<usize> {
        let mut placed: Vec<usize> = (0..tools.len()).collect();
        let name = |at: &usize| tools[*at].name.as_str();
        if self.before.is_empty() && self.after.is_empty() {
            if !placed.is_sorted_by(|a, b| name(a) <= name(b)) {
                // Tool names are unique in an assembly: no order to keep.
                placed.sort_unstable_by(|a, b| name(a).cmp(name(b)));
            }
        } else {
            let key = |at: &usize| self.key(&tools[*at]);
            if !placed.is_sorted_by(|a, b| key(a) <= key(b)) {
                placed.sort_by(|a, b| key(a).cmp(&key(b)));
            }
        }
        placed
    }

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

/// A tool order as assemblies apply it: with the placements it found.
///
/// Providers usually return the same tools at every assembly, each the
/// same `Arc`. The first list placed is kept for good, and the last other
/// list placed until the next one (their tools held, so no other tool can
/// take their addresses), each with the swaps that placed it: a list of the
/// same tools at the same positions is placed by those swaps, with no
/// comparison of names. A tool changed behind its `Arc` is a new `Arc`
/// while a kept list shares the old one, so it is never mistaken for it.
///
/// Reading the first placement is a plain load; the last one is read
/// through an `ArcSwap` (two atomic operations), only when the first does
/// not match.
#[derive(Default)]
pub(crate) struct ToolPlacement {
    order: Arc<ToolOrder>,
    first: OnceLock<Placement>,
    last: ArcSwapOption<Placement>,
}

struct Placement {
    given: Vec<Arc<ToolSchema>>,
    swaps: Vec<(usize, usize)>,
}

impl Placement {
    /// Places `tools` by the kept swaps, if they are the kept list.
    fn replay(&self, tools: &mut [Arc<ToolSchema>]) -> bool {
        let same = self.given.len() == tools.len()
            && self
                .given
                .iter()
                .zip(&*tools)
                .all(|(a, b)| Arc::ptr_eq(a, b));
        if same {
            for &(a, b) in &self.swaps {
                tools.swap(a, b);
            }
        }
        same
    }
}

impl ToolPlacement {
    pub(crate) fn new(order: Arc<ToolOrder>) -> Self {
        Self {
            order,
            first: OnceLock::new(),
            last: ArcSwapOption::empty(),
        }
    }

    /// Puts `tools` in the order.
    pub(crate) fn place(&self, tools: &mut [Arc<ToolSchema>]) {
        if let Some(first) = self.first.get()
            && first.replay(tools)
        {
            return;
        }
        if let Some(last) = &*self.last.load()
            && last.replay(tools)
        {
            return;
        }
        let placement = Placement {
            given: tools.to_vec(),
            swaps: swaps_to(&self.order.placement(tools)),
        };
        placement.replay(tools);
        if let Err(placement) = self.first.set(placement) {
            self.last.store(Some(Arc::new(placement)));
        }
    }
}

/// The swaps that turn a list into `placed` (a permutation: `placed[at]` is
/// the index of the item that goes at `at`), at most one a position.
fn swaps_to(placed: &[usize]) -> Vec<(usize, usize)> {
    // Where each item is, and which item is at each position, as the swaps
    // go.
    let mut position: Vec<usize> = (0..placed.len()).collect();
    let mut item: Vec<usize> = position.clone();
    let mut swaps = Vec::new();
    for (at, &wanted) in placed.iter().enumerate() {
        let from = position[wanted];
        if from != at {
            let displaced = item[at];
            item.swap(at, from);
            position[wanted] = at;
            position[displaced] = from;
            swaps.push((at, from));
        }
    }
    swaps
}
