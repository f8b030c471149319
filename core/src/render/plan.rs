//! The render plan: a registry state's sections compiled once, so that
//! rendering them copies literal runs and variable values by index.
//!
//! Consecutive sections that always render the same way — fixed text, not
//! bound to a tool, never empty, every reference resolved — are fused: their
//! literal text, separators included, is one run of `literals`, and their
//! references are indices into the variable layout. Rendering such a run
//! costs what concatenating the output costs. Every other section is a
//! [`Step::Section`], rendered the general way.
//!
//! # The invariant
//!
//! A plan may render an assembly only when it describes that assembly's
//! sections and variables exactly; [`RenderPlan::of`] is the one place that
//! decides it, from two facts:
//!
//! - **The sections are the list the plan was compiled from.** The registry
//!   attaches the plan (`Sections::compiled`) only to its own list of the
//!   same state — shared, or copied with the texts of provided sections
//!   set, which the plan never fuses (they have no parsed template), so
//!   their text may differ. Any mutable access to `Sections` drops the
//!   plan.
//! - **The variables have the plan's layout.** The plan holds the layout it
//!   indexes; an assembly whose variables are changed gets a layout of its
//!   own (`Arc::make_mut` copies a shared layout), so pointer identity is
//!   layout identity.
//!
//! Values are still read per assembly: a fused reference to a valueless
//! variable makes [`render_planned`](super) give up, and the general path
//! reports it, as it would have without a plan.
//!
//! # The last render
//!
//! An agent renders the same prompt at every step. What a plan renders is
//! a function of the assembly's variable values and, for each section it
//! renders the general way, that section's text and whether it shows (its
//! tool is in the assembly); everything else is the plan's. So a plan
//! remembers the inputs of its last render ([`LastRender`]), and once the
//! same inputs come twice, the prompt too: a render with those inputs again
//! is one copy of it. A prompt whose values change at every step keeps no
//! copy. A plan of few steps ([`RECALL_FROM_STEPS`]) remembers nothing: it
//! renders about as fast as it would recall.

use std::sync::Arc;

use arc_swap::ArcSwapOption;
use dsh_prompt_template::{Segment, Template};

use super::{SEPARATOR, shows};
use crate::assembly::{Compiled, VariableLayout};
use crate::{AssembledSection, PromptAssembly, RenderError, Text};

/// A registry state's sections, compiled for rendering.
pub(crate) struct RenderPlan {
    /// The layout the plan's variable indices refer to. Holding it keeps it
    /// alive, so a layout at the same address is the same layout.
    layout: Arc<VariableLayout>,
    /// The literal text of the fused sections, in render order.
    literals: String,
    steps: Vec<Step>,
    /// The sections rendered the general way, by index.
    general: Vec<usize>,
    last: ArcSwapOption<LastRender>,
}

/// Plans of fewer steps render about as fast as they would recall, and
/// remembering is not free: recalling every plan made W1 (420 bytes in 7
/// steps) 1.5 % faster when its prompt repeats and 38 % slower when a value
/// changes at every step (BENCHMARKS.md, "Scoped layers"). So they do not
/// remember.
const RECALL_FROM_STEPS: usize = 16;

/// The inputs of a plan's last render, and its prompt once the same inputs
/// came twice.
struct LastRender {
    values: Vec<Option<Text>>,
    /// Of each section rendered the general way: its text, and whether it
    /// shows.
    sections: Vec<(Text, bool)>,
    prompt: Option<String>,
}

impl LastRender {
    fn of(plan: &RenderPlan, assembly: &PromptAssembly, prompt: Option<String>) -> Self {
        let sections = &assembly.sections;
        Self {
            values: assembly.variables.values().to_vec(),
            sections: (plan.general.iter())
                .map(|&at| (sections[at].text().clone(), shows(assembly, &sections[at])))
                .collect(),
            prompt,
        }
    }

    fn rendered_from(&self, plan: &RenderPlan, assembly: &PromptAssembly) -> bool {
        let sections = &assembly.sections;
        self.values == assembly.variables.values()
            && plan
                .general
                .iter()
                .zip(&self.sections)
                .all(|(&at, (text, shown))| {
                    sections[at].text() == text && shows(assembly, &sections[at]) == *shown
                })
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Step {
    /// Starts a run of fused sections: a separator, unless nothing has been
    /// rendered yet.
    Run,
    /// Copies `literals` from where the previous `Literal` ended to here.
    Literal(usize),
    /// Copies the value of the variable at this index of the layout.
    Value(usize),
    /// Renders the section at this index the general way.
    Section(usize),
}

impl RenderPlan {
    /// Compiles a registry state's sections, for `Sections::compiled`.
    pub(crate) fn compile(sections: &[AssembledSection], layout: &Arc<VariableLayout>) -> Compiled {
        Arc::new(Self::new(sections, layout))
    }

    /// The plan that may render `assembly`, if any (see the invariant).
    pub(crate) fn of(assembly: &PromptAssembly) -> Option<&Self> {
        let plan = assembly.sections.compiled_form()?;
        Arc::ptr_eq(&plan.layout, assembly.variables.layout()).then_some(plan)
    }

    fn new(sections: &[AssembledSection], layout: &Arc<VariableLayout>) -> Self {
        let mut plan = Self {
            layout: Arc::clone(layout),
            literals: String::new(),
            steps: Vec::new(),
            general: Vec::new(),
            last: ArcSwapOption::empty(),
        };
        let mut closed = 0;
        let mut in_run = false;
        for (at, section) in sections.iter().enumerate() {
            let Some(template) = fusable(section, layout) else {
                plan.close_literal(&mut closed);
                plan.steps.push(Step::Section(at));
                plan.general.push(at);
                in_run = false;
                continue;
            };
            if in_run {
                plan.literals.push_str(SEPARATOR);
            } else {
                plan.close_literal(&mut closed);
                plan.steps.push(Step::Run);
                in_run = true;
            }
            for segment in template.segments(section.text()) {
                match segment {
                    Segment::Literal(text) => plan.literals.push_str(text),
                    Segment::Reference(reference) => {
                        plan.close_literal(&mut closed);
                        let at = layout
                            .index_of(reference.name)
                            .expect("`fusable` checked that every reference resolves");
                        plan.steps.push(Step::Value(at));
                    }
                }
            }
        }
        plan.close_literal(&mut closed);
        plan
    }

    fn close_literal(&mut self, closed: &mut usize) {
        if self.literals.len() > *closed {
            *closed = self.literals.len();
            self.steps.push(Step::Literal(*closed));
        }
    }

    pub(crate) fn steps(&self) -> &[Step] {
        &self.steps
    }

    pub(crate) fn literals(&self) -> &str {
        &self.literals
    }

    /// The sections rendered the general way, by index.
    pub(crate) fn general(&self) -> &[usize] {
        &self.general
    }

    /// The prompt of `assembly`: the last render's when its inputs were the
    /// same (see "The last render"), else what `render` returns, whose
    /// inputs (and, the second time in a row, prompt) are then remembered.
    pub(crate) fn render_or_recall(
        &self,
        assembly: &PromptAssembly,
        render: impl FnOnce() -> Option<Result<String, RenderError>>,
    ) -> Option<Result<String, RenderError>> {
        if self.steps.len() < RECALL_FROM_STEPS {
            return render();
        }
        let last = self.last.load();
        let again = last
            .as_deref()
            .is_some_and(|last| last.rendered_from(self, assembly));
        if again && let Some(prompt) = last.as_deref().and_then(|last| last.prompt.as_ref()) {
            return Some(Ok(prompt.clone()));
        }
        let rendered = render()?;
        if let Ok(prompt) = &rendered {
            let prompt = again.then(|| prompt.clone());
            self.last
                .store(Some(Arc::new(LastRender::of(self, assembly, prompt))));
        }
        Some(rendered)
    }
}

/// The section's template, when the section renders the same way in every
/// assembly of the state and never to nothing: fixed text, not bound to a
/// tool, some literal text, every reference a registered variable.
fn fusable<'s>(section: &'s AssembledSection, layout: &VariableLayout) -> Option<&'s Template> {
    let template = section.template()?;
    let fusable = section.tool().is_none()
        && template.literal_len() > 0
        && template
            .references(section.text())
            .all(|reference| layout.index_of(reference.name).is_some());
    fusable.then_some(template)
}
