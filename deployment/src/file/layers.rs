//! What a deployment adds to the prompt per layer: an agent's or a
//! preset's `sections` and `tool_order`, and the deployment-wide
//! `tool_order`.
//!
//! ```toml
//! tool_order = ["todo_write", "<unlisted-tools>"]  # deployment-wide
//!
//! [presets.review]                 # shared by the agents that say `preset = "review"`
//! tool_order = ["<unlisted-tools>", "bash"]
//! [[presets.review.sections]]
//! name = "review:rules"            # a new section needs an `order`
//! order = 50
//! text = "Report problems; change nothing."
//!
//! [[agents]]
//! id = "reviewer"
//! preset = "review"
//! [[agents.sections]]
//! name = "tool:bash"               # shadows the crate's section, for this agent only
//! text = "Run read-only commands only."
//! ```
//!
//! A section without `order` shadows the section of that name an outer
//! layer has (its order and tool binding kept); one with `order` is new,
//! or moves the one it shadows. The layers are registered into the
//! prompt registry's scopes: `preset:<id>` and `agent:<id>`.

use std::collections::{HashMap, HashSet};

use dsh_system_prompt::{ToolOrder, ToolOrderError};
use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

use crate::problem::{Problem, SourceFile};

/// `[[agents.sections]]`, `[[presets.<id>.sections]]`: a section the
/// deployment owns, in one layer.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SectionSpec {
    /// The section's name, `<crate>:<item>` (`review:rules`). A name an
    /// outer layer has (a tool crate's `tool:bash`, a preset's) shadows
    /// that section for this layer.
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// The section's text, a template: `<<model>>` and `<<cwd>>` are
    /// replaced.
    #[schemars(with = "String")]
    pub text: Spanned<String>,
    /// Where the section goes in the prompt, lowest first; at least 1
    /// (the persona is 0). Given: a new section, or the shadowed one
    /// moved. Left out: the order of the section it shadows, which must
    /// exist.
    #[schemars(with = "Option<i32>")]
    pub order: Option<Spanned<i32>>,
}

/// A `tool_order` list as written.
pub(super) type ToolOrderList = Spanned<Vec<Spanned<String>>>;

/// A `tool_order`, checked, with the list it was made from.
#[derive(Debug, Clone)]
pub struct ToolOrderSpec {
    pub order: ToolOrder,
    pub list: ToolOrderList,
}

impl ToolOrderSpec {
    /// The problem of this order against `known` (every tool of the
    /// deployment), located at the entry at fault.
    pub(crate) fn check_known<'a>(
        &self,
        file: &SourceFile,
        whose: &str,
        known: impl IntoIterator<Item = &'a str>,
    ) -> Option<Problem> {
        let error = self.order.check_known(known).err()?;
        Some(tool_order_problem(file, whose, &self.list, &error))
    }
}

/// What one layer adds: its sections and its tool order.
#[derive(Debug, Clone, Default)]
pub struct LayerSpec {
    /// The layer's sections, new or shadowing an outer layer's.
    pub sections: Vec<SectionSpec>,
    /// The layer's order of the tools, if it sets one.
    pub tool_order: Option<ToolOrderSpec>,
    /// Where each name is first in `sections`, made with them: a search
    /// for every section of a prompt made checking 10,000 sections
    /// quadratic. Used only while `sections` has the length it was made
    /// for.
    by_name: HashMap<String, usize>,
}

impl LayerSpec {
    /// Whether the layer adds nothing: no section, no tool order.
    pub fn is_empty(&self) -> bool {
        self.sections.is_empty() && self.tool_order.is_none()
    }

    /// The section of this layer named `name`.
    pub fn section(&self, name: &str) -> Option<&SectionSpec> {
        if self.by_name.len() == self.sections.len() {
            return (self.by_name.get(name)).and_then(|at| self.sections.get(*at));
        }
        self.sections
            .iter()
            .find(|section| section.name.get_ref() == name)
    }
}

/// The lowest `order` a deployment's section may have: the persona's is 0.
pub(super) const MIN_SECTION_ORDER: i32 = 1;

/// `[presets.<id>]`: a layer the agents naming it in `preset` share.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct PresetFile {
    /// Sections of the preset's layer: new ones, or ones that shadow a
    /// section of the same name for the preset's agents.
    #[serde(default)]
    pub sections: Vec<SectionSpec>,
    /// The order of the preset's agents' tools, as the top-level
    /// `tool_order`; an agent's own overrides it.
    #[schemars(with = "Option<Vec<String>>")]
    pub tool_order: Option<ToolOrderList>,
}

/// Checks one layer as written (`whose`: "agent `reviewer`"): each
/// section named once, the tool order well-formed. What needs the
/// registry (a shadow with nothing to shadow, unknown tools) is checked
/// when the layers are registered.
pub(super) fn check_layer(
    file: &SourceFile,
    whose: &str,
    sections: Vec<SectionSpec>,
    tool_order: Option<ToolOrderList>,
    problems: &mut Vec<Problem>,
) -> LayerSpec {
    let mut seen = HashSet::new();
    for section in &sections {
        // The persona is section `agent:persona` at order 0 and renders
        // first: a deployment's own sections come after it. (A section that
        // sorts before it would put text ahead of the agent's identity.)
        if let Some(order) = &section.order
            && *order.get_ref() < MIN_SECTION_ORDER
        {
            problems.push(
                file.problem(format!(
                    "section `{}` of {whose} has order {}, before the persona",
                    section.name.get_ref(),
                    order.get_ref()
                ))
                .label(order.span(), "renders before the persona")
                .help(format!(
                    "the persona (order 0) renders first; give the section an order of \
                     {MIN_SECTION_ORDER} or more"
                )),
            );
        }
        if !seen.insert(section.name.get_ref().as_str()) {
            problems.push(
                file.problem(format!(
                    "section `{}` is given twice for {whose}",
                    section.name.get_ref()
                ))
                .label(section.name.span(), "given again")
                .help("a layer has one section of a name; merge the two texts"),
            );
        }
    }
    let tool_order = tool_order.and_then(|list| {
        let names = list.get_ref().iter().map(|name| name.get_ref().clone());
        match ToolOrder::new(names) {
            Ok(order) => Some(ToolOrderSpec { order, list }),
            Err(error) => {
                problems.push(tool_order_problem(file, whose, &list, &error));
                None
            }
        }
    });
    let mut by_name = HashMap::new();
    for (at, section) in sections.iter().enumerate() {
        by_name.entry(section.name.get_ref().clone()).or_insert(at);
    }
    LayerSpec {
        sections,
        tool_order,
        by_name,
    }
}

/// A tool order's problem, labelled at the entry it is about (the whole
/// list when it is about no one entry).
fn tool_order_problem(
    file: &SourceFile,
    whose: &str,
    list: &ToolOrderList,
    error: &ToolOrderError,
) -> Problem {
    let entry = |at: usize| list.get_ref().get(at).map(Spanned::span);
    let (span, label) = match error {
        ToolOrderError::MarkerTwice { second, .. } | ToolOrderError::ListedTwice { second, .. } => {
            (entry(*second), "listed again")
        }
        ToolOrderError::UnknownTool { at, .. } => (entry(*at), "not a tool"),
        _ => (None, "this list"),
    };
    file.problem(format!("the `tool_order` of {whose}: {error}"))
        .label(span.unwrap_or_else(|| list.span()), label)
}
