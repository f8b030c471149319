//! The render plan changes how fast a prompt renders, never what it
//! renders or which errors it reports: `render_prompt` (which renders
//! along the registry's plan when it may) against `render_prompt_with_spans`
//! (always the general path), over registries and assemblies of every kind
//! the plan must tell apart.

use dsh_system_prompt::inspect::render_prompt_with_spans;
use dsh_system_prompt::{
    AssembleContext, AssembledSection, PromptAssembly, PromptSection, Registration, RenderErrors,
    Scope, ScopeId, SystemPrompt, render_prompt,
};
use proptest::prelude::*;

use crate::support::{self, tool};

/// Pieces of fixed text: each parses, and references a valued, a maybe
/// valueless, or an unknown variable, or none.
const FIXED: [&str; 6] = ["text ", "<<a>>", "<<b>>", "<<unknown>>", "é\n", ""];
/// Pieces of provided text, which may also be malformed.
const PROVIDED: [&str; 7] = [
    "text ",
    "<<a>>",
    "<<b>>",
    "<<unknown>>",
    "é\n",
    "",
    "<<<a>>>",
];
/// The values `a` takes: plain, empty, and one that looks like a reference.
const VALUES: [&str; 3] = ["x", "", "y <<a>>"];

/// One section to register: its pieces, order, whether it is bound to the
/// tool `t`, and whether it is complete.
#[derive(Clone, Debug)]
struct Part {
    pieces: Vec<usize>,
    order: i32,
    bound: bool,
    complete: bool,
}

fn part(pieces: usize) -> impl Strategy<Value = Part> {
    (
        prop::collection::vec(0..pieces, 0..5),
        0..6i32,
        prop::bool::weighted(0.25),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(pieces, order, bound, complete)| Part {
            pieces,
            order,
            bound,
            complete,
        })
}

/// What the waterfall listener does to the assembly.
#[derive(Clone, Copy, Debug)]
enum Change {
    Nothing,
    /// Sets the value of `a` (the layout stays the registry's).
    SetValue,
    /// Sets a new variable `c` (the layout is the assembly's own).
    AddVariable,
    /// Removes the variable `b`.
    RemoveVariable,
    /// Changes the text of the first fixed section.
    SetSectionText,
    /// Inserts a section of its own.
    InsertSection,
    /// Removes the tool `t`.
    RemoveTool,
    /// Adds the tool `t`.
    AddTool,
}

const CHANGES: [Change; 8] = [
    Change::Nothing,
    Change::SetValue,
    Change::AddVariable,
    Change::RemoveVariable,
    Change::SetSectionText,
    Change::InsertSection,
    Change::RemoveTool,
    Change::AddTool,
];

fn apply(change: Change, assembly: &mut PromptAssembly) {
    match change {
        Change::Nothing => {}
        Change::SetValue => assembly.variables.set("a", Some("set")),
        Change::AddVariable => assembly.variables.set("c", Some("new")),
        Change::RemoveVariable => {
            assembly.variables.remove("b");
        }
        Change::SetSectionText => {
            if let Some(section) = assembly.sections.get_mut("f0") {
                section.set_text("changed <<a>>");
            }
        }
        Change::InsertSection => {
            assembly
                .sections
                .insert(AssembledSection::new("inserted", 3, "inserted <<a>>"));
        }
        Change::RemoveTool => {
            assembly.remove_tool("t");
        }
        Change::AddTool => {
            if !assembly.has_tool("t") {
                assembly.tools.push(tool("t"));
            }
        }
    }
}

fn text(pieces: &[usize], from: &[&str]) -> String {
    pieces.iter().map(|&at| from[at]).collect()
}

/// `section`, bound and complete as `part` says.
fn shaped(part: &Part, mut section: PromptSection) -> PromptSection {
    if part.bound {
        section = section.bound_to_tool("t");
    }
    if part.complete {
        section = section.complete();
    }
    section
}

/// The result of both paths on `assembly`, asserted equal.
fn both(assembly: &PromptAssembly) -> Result<String, RenderErrors> {
    let general = render_prompt_with_spans(assembly).map(|rendered| rendered.text);
    let planned = render_prompt(assembly);
    assert_eq!(planned, general);
    planned
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_plan_renders_what_the_general_path_renders(
        fixed in prop::collection::vec(part(FIXED.len()), 0..6),
        provided in prop::collection::vec(part(PROVIDED.len()), 0..3),
        value in 0..VALUES.len(),
        b_valued in any::<bool>(),
        with_tool in any::<bool>(),
        change in 0..CHANGES.len(),
        scoped in any::<bool>(),
    ) {
        let prompt = SystemPrompt::empty();
        let mut keep: Vec<Registration> = Vec::new();
        let a = VALUES[value];
        keep.push(prompt.variable("a", move |_| Some(a.into())).unwrap());
        keep.push(
            prompt
                .variable("b", move |_| b_valued.then(|| "bee".into()))
                .unwrap(),
        );
        for (at, part) in fixed.iter().enumerate() {
            let text = text(&part.pieces, &FIXED);
            let registered = PromptSection::new(format!("f{at}"), part.order, text);
            keep.push(prompt.section(shaped(part, registered)).unwrap());
        }
        for (at, part) in provided.iter().enumerate() {
            let text = text(&part.pieces, &PROVIDED);
            let registered = PromptSection::provided(format!("p{at}"), part.order, move |_| text.clone());
            keep.push(prompt.section(shaped(part, registered)).unwrap());
        }
        keep.push(
            prompt
                .tools("t", move |_| if with_tool { vec![tool("t")] } else { Vec::new() })
                .unwrap(),
        );
        let change = CHANGES[change];
        keep.push(
            support::listener(&prompt, "change", move |_, assembly| {
                    apply(change, assembly);
}),
        );
        let cx = if scoped {
            let agent = ScopeId::agent("a");
            let layer = prompt.in_scope(agent.clone());
            keep.push(layer.section(PromptSection::new("f0", 1, "shadow <<a>>")).unwrap());
            keep.push(layer.variable("a", |_| Some("scoped".into())).unwrap());
            AssembleContext::new().with_scope(Scope::new([agent]))
        } else {
            AssembleContext::default()
        };

        // Twice: the second assembly renders along a plan compiled at the
        // first; an earlier assembly renders the same after a later one.
        let first = prompt.assemble(&cx);
        let rendered = both(&first);
        let second = prompt.assemble(&cx);
        prop_assert_eq!(both(&second), rendered.clone());
        prop_assert_eq!(both(&first), rendered);
    }
}

/// A plan never renders an assembly changed after it was assembled: each
/// change below makes the prompt differ from the registry's, and the
/// prompt follows the change.
#[test]
fn a_changed_assembly_renders_its_changes() {
    let prompt = SystemPrompt::empty();
    let _keep = [
        prompt.variable("a", |_| Some("x".into())).unwrap(),
        prompt
            .section(PromptSection::new("one", 0, "One <<a>>."))
            .unwrap(),
        prompt
            .section(PromptSection::new("two", 1, "Two <<a>>."))
            .unwrap(),
        prompt
            .section(PromptSection::new("bound", 2, "Use t.").bound_to_tool("t"))
            .unwrap(),
    ];
    let assemble = || prompt.assemble(&AssembleContext::default());
    assert_eq!(both(&assemble()).unwrap(), "One x.\n\nTwo x.");

    let mut assembly = assemble();
    assembly.variables.set("a", Some("y"));
    assert_eq!(both(&assembly).unwrap(), "One y.\n\nTwo y.");

    let mut assembly = assemble();
    assembly.variables.set("new", Some("n"));
    assembly.variables.set("a", Some("z"));
    assert_eq!(both(&assembly).unwrap(), "One z.\n\nTwo z.");

    let mut assembly = assemble();
    assembly
        .sections
        .get_mut("two")
        .unwrap()
        .set_text("2 <<a>>.");
    assert_eq!(both(&assembly).unwrap(), "One x.\n\n2 x.");

    let mut assembly = assemble();
    assembly.tools.push(tool("t"));
    assert_eq!(both(&assembly).unwrap(), "One x.\n\nTwo x.\n\nUse t.");

    let mut assembly = assemble();
    assembly.variables.remove("a");
    let errors = both(&assembly).unwrap_err();
    assert_eq!(errors.len(), 2);

    let mut assembly = assemble();
    assembly.variables.set("a", None::<&str>);
    let errors = both(&assembly).unwrap_err();
    assert_eq!(errors.len(), 2);

    // The registry's prompt is untouched by all of the above.
    assert_eq!(both(&assemble()).unwrap(), "One x.\n\nTwo x.");
}

/// Two complete sections that show only once a tool is added after the
/// assembly: the general path's conflict, whichever path renders.
#[test]
fn two_complete_sections_shown_after_assembly_conflict() {
    let prompt = SystemPrompt::empty();
    let _keep = [
        prompt
            .section(PromptSection::new("base", 0, "Base."))
            .unwrap(),
        prompt
            .section(
                PromptSection::new("only", 1, "Only.")
                    .bound_to_tool("t")
                    .complete(),
            )
            .unwrap(),
        prompt
            .section(
                PromptSection::new("other", 2, "Other.")
                    .bound_to_tool("t")
                    .complete(),
            )
            .unwrap(),
    ];
    let mut assembly = prompt.assemble(&AssembleContext::default());
    assert_eq!(both(&assembly).unwrap(), "Base.");
    assembly.tools.push(tool("t"));
    let errors = both(&assembly).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert!(matches!(
        errors.first(),
        dsh_system_prompt::RenderError::CompleteSections { .. }
    ));
}
