//! The render plan: a registry state's sections compiled once, so that
//! rendering them copies literal runs and variable values by index.
//!
//! Consecutive sections that always render the same way — fixed text, not
//! bound to a tool, not complete, some literal text (so never empty),
//! every reference a registered variable — are fused: their literal text,
//! separators included, is one run of `literals`, and their references are
//! indices into the variable layout. Every other section is a
//! [`Step::Section`], rendered the general way from the assembly's own
//! list. Nothing is remembered from one render to the next: a plan is
//! compiled from the registry's state, never from a render.
//!
//! # The invariant
//!
//! A plan may render an assembly only when it describes that assembly's
//! sections and variables exactly; `render::plan_of` is the one place that
//! decides it, from two facts:
//!
//! - **The sections are the list the plan was compiled from.** The registry
//!   attaches the plan (`SectionList::plan`) only to its own list of the
//!   same state — shared, or copied with the texts of provided sections
//!   set, which the plan never fuses (they have no parsed template), so
//!   their text may differ. Any mutable access to `Sections` drops the
//!   plan.
//! - **The variables have the plan's layout** ([`RenderPlan::indexes`]).
//!   The plan holds the layout it indexes; an assembly whose set of
//!   variables is changed gets a layout of its own (`Arc::make_mut` copies
//!   a layout the plan shares), so pointer identity is layout identity.
//!   Values are read per assembly.
//!
//! Whatever the plan cannot render, the general path renders:
//! [`RenderPlan::render`] gives up (`None`) at a fused reference to a
//! valueless variable and at a section rendered the general way that
//! fails, and `render::render_planned` gives up when the assembly shows two
//! complete sections; `render_prompt` then renders the assembly again the
//! general way, whose error collection (`render::problems`) is the one
//! source of errors. So a plan changes how fast a prompt renders, never
//! what it renders or which errors it reports.
//!
//! The plan reads sections and variables, never the `PromptAssembly` that
//! holds them: the assembly carries the plan, so the plan importing the
//! assembly would make the two modules import each other.

use std::sync::Arc;

use dsh_prompt_template::{Segment, Template};

use super::SEPARATOR;
use crate::assembly::section::AssembledSection;
use crate::assembly::variables::{VariableLayout, Variables};

/// A registry state's sections, compiled for rendering.
#[derive(Debug)]
pub(crate) struct RenderPlan {
    /// The layout the plan's variable indices refer to. Holding it keeps it
    /// alive, so a layout at the same address is the same layout.
    layout: Arc<VariableLayout>,
    /// The literal text of the fused sections, in render order.
    literals: String,
    steps: Vec<Step>,
    /// The sections rendered the general way, by index.
    general: Vec<usize>,
    /// Whether two sections are complete: only then can an assembly of
    /// the list show two, which only the general path reports.
    complete_conflict_possible: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
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
    /// Compiles a registry state's sections, whose variables have `layout`.
    pub(crate) fn compile(
        sections: &[AssembledSection],
        layout: &Arc<VariableLayout>,
    ) -> Arc<Self> {
        let mut plan = Self {
            layout: Arc::clone(layout),
            literals: String::new(),
            steps: Vec::new(),
            general: Vec::new(),
            complete_conflict_possible: (sections.iter())
                .filter(|section| section.is_complete())
                .nth(1)
                .is_some(),
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
        Arc::new(plan)
    }

    fn close_literal(&mut self, closed: &mut usize) {
        if self.literals.len() > *closed {
            *closed = self.literals.len();
            self.steps.push(Step::Literal(*closed));
        }
    }

    /// Whether `variables` have the layout the plan indexes, so the plan
    /// may read their values (see the invariant).
    pub(crate) fn indexes(&self, variables: &Variables) -> bool {
        Arc::ptr_eq(&self.layout, variables.layout())
    }

    /// Whether two of the plan's sections are complete: only then can an
    /// assembly of its list show two, which only the general path reports.
    pub(crate) fn may_show_two_complete(&self) -> bool {
        self.complete_conflict_possible
    }

    /// Renders `sections`, the list the plan was compiled from, with
    /// `variables` of its layout, along the plan; `render_general` renders
    /// a section the plan left to the general way. `None` when the general
    /// path must render the whole prompt instead (see the invariant).
    pub(crate) fn render(
        &self,
        sections: &[AssembledSection],
        variables: &Variables,
        mut render_general: impl FnMut(&AssembledSection, &mut String) -> Option<()>,
    ) -> Option<String> {
        // Values usually make the prompt longer than its texts, as in the
        // general path.
        let literals = self.literals.as_str();
        let mut capacity = literals.len() + literals.len() / 8;
        for &at in &self.general {
            capacity += sections[at].text().len() + SEPARATOR.len();
        }
        let mut out = String::with_capacity(capacity);
        let mut copied = 0;
        for step in &self.steps {
            match *step {
                Step::Literal(end) => {
                    out.push_str(&literals[copied..end]);
                    copied = end;
                }
                Step::Value(at) => out.push_str(variables.value_at(at)?),
                Step::Run => {
                    if !out.is_empty() {
                        out.push_str(SEPARATOR);
                    }
                }
                Step::Section(at) => render_general(&sections[at], &mut out)?,
            }
        }
        Some(out)
    }
}

/// The section's template, when the section renders the same way in every
/// assembly of the state and never to nothing: fixed text, not bound to a
/// tool, not complete, some literal text, every reference a registered
/// variable.
fn fusable<'s>(section: &'s AssembledSection, layout: &VariableLayout) -> Option<&'s Template> {
    let template = section.template()?;
    let fusable = section.tool().is_none()
        && !section.is_complete()
        && template.literal_len() > 0
        && template
            .references(section.text())
            .all(|reference| layout.index_of(reference.name).is_some());
    fusable.then_some(template)
}

#[cfg(test)]
mod tests {
    use std::ops::ControlFlow;
    use std::sync::Arc;

    use super::Step;
    use crate::render::{plan_of, render_planned};
    use crate::{
        AssembleContext, PromptAssembly, PromptSection, Registration, Scope, ScopeId, SystemPrompt,
        ToolSchema,
    };

    /// What the plan renders of `assembly` (`None`: it may not, or gives
    /// up), after checking that `render_prompt` gives what the general
    /// path gives.
    fn planned(assembly: &PromptAssembly) -> Option<String> {
        let general = super::super::render(assembly, |_, _| {});
        assert_eq!(crate::render_prompt(assembly), general);
        let planned = render_planned(assembly)?;
        assert_eq!(Ok(&planned), general.as_ref());
        Some(planned)
    }

    fn registry(
        sections: impl IntoIterator<Item = PromptSection>,
    ) -> (SystemPrompt, Vec<Registration>) {
        let prompt = SystemPrompt::empty();
        let mut keep = vec![
            prompt.variable("a", |_| Some("A".into())).unwrap(),
            prompt.variable("none", |_| None).unwrap(),
        ];
        for section in sections {
            keep.push(prompt.section(section).unwrap());
        }
        (prompt, keep)
    }

    fn bash() -> Vec<Arc<ToolSchema>> {
        vec![Arc::new(ToolSchema::new("bash", "", serde_json::json!({})))]
    }

    #[test]
    fn consecutive_fixed_sections_are_one_run_of_literals_and_values() {
        let (prompt, _keep) = registry([
            PromptSection::new("one", 0, "One <<a>>."),
            PromptSection::new("two", 1, "Two."),
            PromptSection::new("three", 2, "<<a>> three"),
        ]);
        let assembly = prompt.assemble(&AssembleContext::default());
        let plan = plan_of(&assembly).unwrap();
        assert_eq!(
            plan.steps,
            [
                Step::Run,
                Step::Literal(4),
                Step::Value(0),
                Step::Literal(13),
                Step::Value(0),
                Step::Literal(19),
            ]
        );
        assert_eq!(plan.literals, "One .\n\nTwo.\n\n three");
        assert_eq!(planned(&assembly).unwrap(), "One A.\n\nTwo.\n\nA three");
    }

    #[test]
    fn provided_tool_bound_and_unresolved_sections_render_the_general_way() {
        let (prompt, _keep) = registry([
            PromptSection::new("fixed", 0, "Fixed."),
            PromptSection::provided("provided", 1, |_| "Provided <<a>>.".to_owned()),
            PromptSection::new("bound", 2, "Use bash.").bound_to_tool("bash"),
            PromptSection::new("only_ref", 3, "<<a>>"),
            PromptSection::new("after", 4, "After."),
        ]);
        let assembly = prompt.assemble(&AssembleContext::default());
        let plan = plan_of(&assembly).unwrap();
        assert_eq!(plan.general, [1, 2, 3]);
        assert_eq!(
            planned(&assembly).unwrap(),
            "Fixed.\n\nProvided A.\n\nA\n\nAfter."
        );

        let _tools = prompt.tools("bash", |_| bash()).unwrap();
        let assembly = prompt.assemble(&AssembleContext::default());
        assert_eq!(
            planned(&assembly).unwrap(),
            "Fixed.\n\nProvided A.\n\nUse bash.\n\nA\n\nAfter."
        );
    }

    #[test]
    fn a_failing_section_leaves_the_render_to_the_general_path() {
        for text in ["Here <<none>>.", "Here <<unknown>>."] {
            let (prompt, _keep) = registry([
                PromptSection::new("fine", 0, "Fine."),
                PromptSection::new("failing", 1, text),
            ]);
            let assembly = prompt.assemble(&AssembleContext::default());
            assert!(plan_of(&assembly).is_some());
            assert_eq!(planned(&assembly), None);
        }
        let (prompt, _keep) = registry([PromptSection::provided("p", 0, |_| "<<<a>>>".to_owned())]);
        let assembly = prompt.assemble(&AssembleContext::default());
        assert!(plan_of(&assembly).is_some());
        assert_eq!(planned(&assembly), None);
    }

    #[test]
    fn an_assembly_whose_sections_or_layout_changed_has_no_plan() {
        let (prompt, _keep) = registry([PromptSection::new("one", 0, "One <<a>>.")]);
        let cx = AssembleContext::default();

        let mut assembly = prompt.assemble(&cx);
        assembly.variables.set("a", Some("B"));
        assert_eq!(planned(&assembly).unwrap(), "One B.");

        let mut assembly = prompt.assemble(&cx);
        assembly.variables.set("new", Some("N"));
        assert!(plan_of(&assembly).is_none());
        assert_eq!(planned(&assembly), None);

        let mut assembly = prompt.assemble(&cx);
        assembly
            .sections
            .get_mut("one")
            .unwrap()
            .set_text("Changed.");
        assert!(plan_of(&assembly).is_none());

        // A listener's change is a change like any other.
        let _listener = prompt
            .on_assemble("edit", |_, assembly| {
                assembly.sections.retain(|_| true);
                ControlFlow::Continue(())
            })
            .unwrap();
        assert!(plan_of(&prompt.assemble(&cx)).is_none());
    }

    #[test]
    fn each_scope_chain_renders_along_its_own_plan() {
        let (prompt, mut keep) = registry([
            PromptSection::new("one", 0, "One <<a>>."),
            PromptSection::new("two", 1, "Two."),
        ]);
        let agent = ScopeId::agent("coder");
        let layer = prompt.in_scope(agent.clone());
        keep.push(
            layer
                .section(PromptSection::new("two", 1, "Agent two <<a>>."))
                .unwrap(),
        );
        keep.push(layer.variable("a", |_| Some("scoped".into())).unwrap());
        let scoped = AssembleContext::new().with_scope(Scope::new([agent]));

        let global = prompt.assemble(&AssembleContext::default());
        assert_eq!(planned(&global).unwrap(), "One A.\n\nTwo.");
        let assembly = prompt.assemble(&scoped);
        assert_eq!(
            planned(&assembly).unwrap(),
            "One scoped.\n\nAgent two scoped."
        );
    }

    #[test]
    fn a_complete_section_renders_the_general_way() {
        let (prompt, _keep) = registry([
            PromptSection::new("base", 0, "Base."),
            PromptSection::provided("maybe", 1, |_| String::new()).complete(),
        ]);
        let assembly = prompt.assemble(&AssembleContext::default());
        let plan = plan_of(&assembly).unwrap();
        assert_eq!(plan.general, [1]);
        assert_eq!(planned(&assembly).unwrap(), "Base.");
    }
}
