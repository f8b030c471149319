//! Scoped layers: shadowing and restore for every kind of contribution,
//! shadowed providers never called, scoped listeners, duplicates within a
//! layer, tool order and complete sections — and a reference model.

use crate::support;

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use dsh_system_prompt::NameKind;
use dsh_system_prompt::inspect::section_origins;
use dsh_system_prompt::{
    AssembleContext, PromptAssembly, PromptSection, Registration, RegistryError, RenderError,
    Scope, ScopeId, SystemPrompt, ToolOrder, ToolOrderError, UNLISTED_TOOLS, render_prompt,
};
use proptest::prelude::*;
use support::{section_names, tool, tool_names};

fn preset() -> ScopeId {
    ScopeId::preset("review")
}

fn agent() -> ScopeId {
    ScopeId::agent("reviewer")
}

/// The context of an assembly for the agent: global → preset → agent.
fn for_agent() -> AssembleContext {
    AssembleContext::new().with_scope(Scope::new([preset(), agent()]))
}

fn global() -> AssembleContext {
    AssembleContext::default()
}

/// The names of the tools an assembly for `cx` offers, in order.
fn tools_for(prompt: &SystemPrompt, cx: &AssembleContext) -> Vec<String> {
    tool_names(&prompt.assemble(cx))
}

fn rendered(prompt: &SystemPrompt, cx: &AssembleContext) -> String {
    render_prompt(&prompt.assemble(cx)).expect("renders")
}

fn section(name: &str, order: i32, text: &str) -> PromptSection {
    PromptSection::new(name.to_owned(), order, text.to_owned())
}

/// Registers `section` into the layer of `scope` (the global one for `None`).
fn scoped(
    prompt: &SystemPrompt,
    scope: impl Into<Option<ScopeId>>,
    section: PromptSection,
) -> Registration {
    match scope.into() {
        None => prompt.section(section),
        Some(scope) => prompt.in_scope(scope).section(section),
    }
    .unwrap()
}

// ---------------------------------------------------------------------------
// Shadowing and restore, each kind

#[test]
fn a_scoped_section_shadows_for_its_scope_only_and_dropping_it_restores() {
    let prompt = SystemPrompt::empty();
    let _persona = scoped(&prompt, None, section("agent:persona", 0, "Coder."));
    let _habit = scoped(&prompt, None, section("tool:bash", 105, "Run anything."));
    let strict = scoped(
        &prompt,
        agent(),
        section("tool:bash", 105, "Run read-only commands."),
    );

    assert_eq!(
        rendered(&prompt, &for_agent()),
        "Coder.\n\nRun read-only commands."
    );
    assert_eq!(rendered(&prompt, &global()), "Coder.\n\nRun anything.");
    let other = AssembleContext::new().with_scope(Scope::new([ScopeId::agent("coder")]));
    assert_eq!(rendered(&prompt, &other), "Coder.\n\nRun anything.");

    drop(strict);
    assert_eq!(rendered(&prompt, &for_agent()), "Coder.\n\nRun anything.");
}

#[test]
fn the_nearest_layer_wins_and_each_drop_falls_back_one_layer() {
    let prompt = SystemPrompt::empty();
    let _global = scoped(&prompt, None, section("tone", 0, "global"));
    let preset_tone = scoped(&prompt, preset(), section("tone", 0, "preset"));
    let agent_tone = scoped(&prompt, agent(), section("tone", 0, "agent"));
    let preset_only = AssembleContext::new().with_scope(Scope::new([preset()]));

    assert_eq!(rendered(&prompt, &for_agent()), "agent");
    assert_eq!(rendered(&prompt, &preset_only), "preset");
    drop(agent_tone);
    assert_eq!(rendered(&prompt, &for_agent()), "preset");
    drop(preset_tone);
    assert_eq!(rendered(&prompt, &for_agent()), "global");
}

#[test]
fn a_layer_listed_twice_in_a_chain_counts_at_its_nearest_place() {
    let prompt = SystemPrompt::empty();
    let _preset_tone = scoped(&prompt, preset(), section("tone", 0, "preset"));
    let _agent_tone = scoped(&prompt, agent(), section("tone", 0, "agent"));
    let repeated = Scope::new([agent(), preset(), agent()]);

    assert_eq!(repeated.layers(), [preset(), agent()]);
    let cx = AssembleContext::new().with_scope(repeated);
    assert_eq!(rendered(&prompt, &cx), "agent");
}

#[test]
fn a_scoped_section_may_move_and_a_scope_may_add_new_sections() {
    let prompt = SystemPrompt::empty();
    let _a = scoped(&prompt, None, section("a", 1, "A"));
    let _b = scoped(&prompt, None, section("b", 2, "B"));
    let _moved = scoped(&prompt, agent(), section("a", 3, "A last"));
    let _added = scoped(&prompt, preset(), section("review:rules", 0, "Rules"));

    let assembly = prompt.assemble(&for_agent());
    assert_eq!(section_names(&assembly), ["review:rules", "b", "a"]);
    assert_eq!(section_names(&prompt.assemble(&global())), ["a", "b"]);
}

#[test]
fn a_scoped_context_shadows_the_global_one() {
    let prompt = SystemPrompt::empty();
    let _todo = prompt.context(section("todo", 0, "global list")).unwrap();
    let scoped = prompt
        .in_scope(agent())
        .context(section("todo", 0, "agent list"))
        .unwrap();
    let contexts = |cx: &AssembleContext| {
        dsh_system_prompt::render_context(&prompt.assemble(cx)).expect("renders")
    };
    assert_eq!(contexts(&for_agent()), "agent list");
    assert_eq!(contexts(&global()), "global list");
    drop(scoped);
    assert_eq!(contexts(&for_agent()), "global list");
}

#[test]
fn a_scoped_variable_shadows_and_the_shadowed_provider_is_never_called() {
    let prompt = SystemPrompt::empty();
    let (calls, model) = support::counting(|_| Some("gpt-5".into()));
    let _model = prompt.variable("model", model).unwrap();
    let _persona = scoped(&prompt, None, section("agent:persona", 0, "On <<model>>."));
    let mini = prompt
        .in_scope(agent())
        .variable("model", |_| Some("gpt-5-mini".into()))
        .unwrap();

    for _ in 0..3 {
        assert_eq!(rendered(&prompt, &for_agent()), "On gpt-5-mini.");
    }
    assert_eq!(calls.load(Ordering::Relaxed), 0, "shadowed, so never asked");
    assert_eq!(rendered(&prompt, &global()), "On gpt-5.");
    assert_eq!(calls.load(Ordering::Relaxed), 1);

    drop(mini);
    assert_eq!(rendered(&prompt, &for_agent()), "On gpt-5.");
    assert_eq!(calls.load(Ordering::Relaxed), 2);
}

#[test]
fn a_shadowed_text_provider_is_never_called() {
    let prompt = SystemPrompt::empty();
    let (calls, persona) = support::counting(|_| "Parent persona.".to_owned());
    let _persona = scoped(
        &prompt,
        None,
        PromptSection::provided("agent:persona", 0, persona),
    );
    let _own = scoped(
        &prompt,
        agent(),
        section("agent:persona", 0, "Child persona."),
    );

    assert_eq!(rendered(&prompt, &for_agent()), "Child persona.");
    assert_eq!(calls.load(Ordering::Relaxed), 0);
    assert_eq!(rendered(&prompt, &global()), "Parent persona.");
    assert_eq!(calls.load(Ordering::Relaxed), 1);
}

#[test]
fn a_scoped_tool_provider_shadows_and_the_shadowed_one_is_never_called() {
    let prompt = SystemPrompt::empty();
    let (calls, builtins) = support::counting(|_| vec![tool("read"), tool("bash")]);
    let _all = prompt.tools("builtins", builtins).unwrap();
    let _todo = prompt.tools("todo", |_| vec![tool("todo_write")]).unwrap();
    let read_only = prompt
        .in_scope(preset())
        .tools("builtins", |_| vec![tool("read")])
        .unwrap();

    assert_eq!(tools_for(&prompt, &for_agent()), ["read", "todo_write"]);
    assert_eq!(calls.load(Ordering::Relaxed), 0);
    assert_eq!(
        tools_for(&prompt, &global()),
        ["bash", "read", "todo_write"]
    );
    assert_eq!(calls.load(Ordering::Relaxed), 1);

    drop(read_only);
    assert_eq!(
        tools_for(&prompt, &for_agent()),
        ["bash", "read", "todo_write"]
    );
}

#[test]
fn scoped_waterfall_listeners_fire_only_for_their_scope_and_shadow_by_name() {
    let prompt = SystemPrompt::empty();
    let _a = scoped(&prompt, None, section("a", 0, "A"));
    let fired = |label: &'static str| {
        move |_: &AssembleContext, assembly: &mut PromptAssembly| {
            let trail = assembly.variables.value("trail").unwrap_or("").to_owned();
            assembly.variables.set("trail", Some(trail + label));
            ControlFlow::Continue(())
        }
    };
    let _global = prompt.on_assemble("mark", fired("g")).unwrap();
    let _other = prompt.on_assemble("other", fired("o")).unwrap();
    let scoped = prompt
        .in_scope(agent())
        .on_assemble("mark", fired("a"))
        .unwrap();
    let _elsewhere = prompt
        .in_scope(ScopeId::agent("coder"))
        .on_assemble("coder-only", fired("c"))
        .unwrap();
    let trail = |cx: &AssembleContext| {
        prompt
            .assemble(cx)
            .variables
            .value("trail")
            .map(str::to_owned)
    };

    assert_eq!(
        trail(&for_agent()).as_deref(),
        Some("oa"),
        "the scoped one instead of the global one, in registration order"
    );
    assert_eq!(trail(&global()).as_deref(), Some("go"));
    drop(scoped);
    assert_eq!(trail(&for_agent()).as_deref(), Some("go"));
}

#[test]
fn a_scoped_tool_order_shadows_the_global_one() {
    let prompt = SystemPrompt::empty();
    let _tools = prompt
        .tools("all", |_| {
            vec![tool("read"), tool("todo_write"), tool("bash")]
        })
        .unwrap();
    assert_eq!(
        tools_for(&prompt, &global()),
        ["bash", "read", "todo_write"],
        "without a tool order, by name"
    );
    let _deployment = prompt
        .tool_order(ToolOrder::new(["todo_write", UNLISTED_TOOLS]).unwrap())
        .unwrap();
    let agent_order = prompt
        .in_scope(agent())
        .tool_order(ToolOrder::new([UNLISTED_TOOLS, "read"]).unwrap())
        .unwrap();

    assert_eq!(
        tools_for(&prompt, &global()),
        ["todo_write", "bash", "read"]
    );
    assert_eq!(
        tools_for(&prompt, &for_agent()),
        ["bash", "todo_write", "read"]
    );
    drop(agent_order);
    assert_eq!(
        tools_for(&prompt, &for_agent()),
        ["todo_write", "bash", "read"]
    );
}

#[test]
fn the_tool_order_applies_after_the_waterfall() {
    let prompt = SystemPrompt::empty();
    let _tools = prompt.tools("all", |_| vec![tool("read")]).unwrap();
    let _added = support::listener(&prompt, "add-bash", |_, assembly| {
        assembly.tools.push(tool("bash"));
    });
    assert_eq!(tools_for(&prompt, &global()), ["bash", "read"]);
}

#[test]
fn section_origins_name_the_layer_and_what_it_shadows() {
    let prompt = SystemPrompt::empty();
    let _global = scoped(
        &prompt,
        None,
        section("tool:bash", 105, "G").bound_to_tool("bash"),
    );
    let _preset = scoped(&prompt, preset(), section("tool:bash", 105, "P"));
    let _agent = scoped(&prompt, agent(), section("tool:bash", 105, "A"));
    let _new = scoped(&prompt, agent(), section("extra", 1, "E"));

    let origins = section_origins(&prompt, &Scope::new([preset(), agent()]));
    /// A section's name, layer, and the layers it shadows.
    type Row<'a> = (&'a str, Option<&'a ScopeId>, Vec<Option<&'a ScopeId>>);
    let rows: Vec<Row<'_>> = origins
        .iter()
        .map(|origin| {
            (
                origin.name.as_str(),
                origin.layer.as_ref(),
                origin
                    .shadows
                    .iter()
                    .map(|(layer, _)| layer.as_ref())
                    .collect(),
            )
        })
        .collect();
    let (preset, agent) = (preset(), agent());
    assert_eq!(
        rows,
        [
            ("extra", Some(&agent), vec![]),
            ("tool:bash", Some(&agent), vec![Some(&preset), None]),
        ]
    );
    let global = section_origins(&prompt, &Scope::global());
    assert_eq!(global.len(), 1);
    assert_eq!(global[0].tool.as_deref(), Some("bash"));
}

// ---------------------------------------------------------------------------
// Duplicates within one layer

/// Registers twice what `register` registers, the first time kept until the
/// second is refused; the refusal's message.
fn refused_twice(register: impl Fn() -> Result<Registration, RegistryError>) -> String {
    let _first = register().unwrap();
    register().unwrap_err().to_string()
}

#[test]
fn a_duplicate_within_a_layer_names_the_scope() {
    let prompt = SystemPrompt::empty();
    let reviewer = prompt.in_scope(agent());
    let _first = reviewer.section(section("tool:bash", 105, "One.")).unwrap();
    let error = reviewer
        .section(section("tool:bash", 105, "Two."))
        .unwrap_err();
    assert!(
        matches!(&error, RegistryError::Duplicate { kind: NameKind::Section, layer: Some(layer), .. } if *layer == agent()),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("already registered in scope `agent:reviewer`"),
        "{message}"
    );

    let message = refused_twice(|| reviewer.variable("model", |_| Some("m".into())));
    assert!(
        message.contains("variable `model` is already registered in scope `agent:reviewer`"),
        "{message}"
    );

    let message = refused_twice(|| reviewer.tools("builtins", |_| Vec::new()));
    assert!(
        message
            .contains("tool provider `builtins` is already registered in scope `agent:reviewer`"),
        "{message}"
    );

    let message = refused_twice(|| reviewer.on_assemble("mark", |_, _| ControlFlow::Continue(())));
    assert!(
        message
            .contains("waterfall listener `mark` is already registered in scope `agent:reviewer`"),
        "{message}"
    );

    let message = refused_twice(|| reviewer.tool_order(ToolOrder::by_name()));
    assert!(
        message.starts_with("a tool order is already set in scope `agent:reviewer` by "),
        "{message}"
    );
    assert!(
        message.ends_with(
            "; a layer has one tool order: drop that `Registration` first, \
             or set this one in another scope"
        ),
        "{message}"
    );
    let _global = prompt.tool_order(ToolOrder::by_name()).unwrap();
    let error = prompt.tool_order(ToolOrder::by_name()).unwrap_err();
    assert!(
        matches!(error, RegistryError::ToolOrderTwice { layer: None, .. }),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .starts_with("a tool order is already set in the global layer by "),
        "{error}"
    );

    // The same name in the global layer and in another scope is fine.
    let _global = scoped(&prompt, None, section("tool:bash", 105, "G."));
    let _coder = scoped(
        &prompt,
        ScopeId::agent("coder"),
        section("tool:bash", 105, "C."),
    );
    let message = prompt
        .section(section("tool:bash", 105, "G again."))
        .unwrap_err()
        .to_string();
    assert!(!message.contains("in scope"), "{message}");
}

#[test]
fn change_events_name_the_layer() {
    let prompt = SystemPrompt::empty();
    let layers = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&layers);
    let _listener = prompt
        .on_change(move |event| {
            seen.lock().unwrap().push(event.layer.clone());
            Ok(())
        })
        .unwrap();
    let registration = scoped(&prompt, agent(), section("a", 0, "A"));
    drop(registration);
    assert_eq!(*layers.lock().unwrap(), [Some(agent()), Some(agent())]);
}

// ---------------------------------------------------------------------------
// Tool order rules

#[test]
fn tool_order_errors_say_what_is_wrong() {
    let error = ToolOrder::new(["bash", "read"]).unwrap_err();
    assert_eq!(error, ToolOrderError::NoMarker);
    assert!(
        error
            .to_string()
            .contains("add `<unlisted-tools>` to the list"),
        "{error}"
    );

    let error = ToolOrder::new([UNLISTED_TOOLS, "bash", UNLISTED_TOOLS]).unwrap_err();
    assert_eq!(
        error,
        ToolOrderError::MarkerTwice {
            first: 0,
            second: 2
        }
    );
    assert_eq!(
        error.to_string(),
        "`<unlisted-tools>` is listed twice in the tool order (entries 1 and 3); keep one"
    );

    let error = ToolOrder::new(["bash", UNLISTED_TOOLS, "bash"]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool `bash` is listed twice in the tool order (entries 1 and 3); keep one"
    );

    let order = ToolOrder::new(["todo_write", UNLISTED_TOOLS, "bsh"]).unwrap();
    let error = order
        .check_known(["read", "bash", "todo_write"])
        .unwrap_err();
    assert_eq!(
        error,
        ToolOrderError::UnknownTool {
            name: "bsh".to_owned(),
            at: 2,
            known: vec![
                "bash".to_owned(),
                "read".to_owned(),
                "todo_write".to_owned()
            ],
            suggestion: Some("bash".to_owned()),
        }
    );
    assert_eq!(
        error.to_string(),
        "the tool order lists `bsh` (entry 3), which is not a tool; did you mean `bash`? \
         the tools are `bash`, `read`, `todo_write`"
    );

    let order = ToolOrder::new([UNLISTED_TOOLS]).unwrap();
    let error = order.check_known(["bash", UNLISTED_TOOLS]).unwrap_err();
    assert_eq!(error, ToolOrderError::MarkerTool);
    assert!(error.to_string().contains("rename the tool"), "{error}");

    assert!(order.check_known(["bash"]).is_ok());
}

// ---------------------------------------------------------------------------
// Complete sections

#[test]
fn an_active_complete_section_is_the_whole_prompt_whatever_the_waterfall_did() {
    let prompt = SystemPrompt::empty();
    let _model = prompt.variable("model", |_| Some("gpt-5".into())).unwrap();
    let _persona = scoped(&prompt, None, section("agent:persona", 0, "Coder."));
    let _habit = scoped(
        &prompt,
        None,
        section("tool:bash", 105, "Check exit codes."),
    );
    let _listener = support::listener(&prompt, "edit", |_, assembly| {
        for section in assembly.sections.to_mut() {
            section.set_text("edited");
        }
        assembly
            .sections
            .insert(dsh_system_prompt::AssembledSection::new(
                "added", 1, "added",
            ));
    });
    let minimal = scoped(
        &prompt,
        agent(),
        section("minimal", 50, "You answer in one word on <<model>>.").complete(),
    );

    let assembly = prompt.assemble(&for_agent());
    assert_eq!(section_names(&assembly), ["minimal"]);
    assert_eq!(
        render_prompt(&assembly).unwrap(),
        "You answer in one word on gpt-5."
    );
    assert_eq!(
        section_names(&prompt.assemble(&global())),
        ["agent:persona", "added", "tool:bash"],
        "other scopes keep every section"
    );
    drop(minimal);
    assert_eq!(section_names(&prompt.assemble(&for_agent())).len(), 3);
}

#[test]
fn two_active_complete_sections_fail_naming_both() {
    let prompt = SystemPrompt::empty();
    let _one = scoped(&prompt, preset(), section("minimal", 0, "One.").complete());
    let _two = scoped(&prompt, agent(), section("terse", 1, "Two.").complete());

    let assembly = prompt.assemble(&for_agent());
    let error = support::only(render_prompt(&assembly).unwrap_err());
    assert!(
        matches!(&error, RenderError::CompleteSections { section, other, .. } if section == "minimal" && other == "terse"),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .starts_with("sections `minimal` (`minimal` of runtime"),
        "{error}"
    );
    assert!(error.to_string().contains("and `terse`"), "{error}");

    // Each scope alone has one.
    let preset_only = AssembleContext::new().with_scope(Scope::new([preset()]));
    assert_eq!(rendered(&prompt, &preset_only), "One.");
}

#[test]
fn a_complete_section_shadowed_by_a_plain_one_is_not_complete() {
    let prompt = SystemPrompt::empty();
    let _a = scoped(&prompt, None, section("a", 0, "A"));
    let _complete = scoped(&prompt, None, section("only", 1, "Only.").complete());
    let _plain = scoped(&prompt, agent(), section("only", 1, "Not only."));
    assert_eq!(rendered(&prompt, &global()), "Only.");
    assert_eq!(rendered(&prompt, &for_agent()), "A\n\nNot only.");
}

#[test]
fn a_complete_section_bound_to_an_absent_tool_is_not_active() {
    let prompt = SystemPrompt::empty();
    let _a = scoped(&prompt, None, section("a", 0, "A"));
    let _bound = scoped(
        &prompt,
        None,
        section("only", 1, "Only bash.")
            .bound_to_tool("bash")
            .complete(),
    );
    // Without the tool it does not show, so it is not the prompt (which
    // would be empty): the other sections are.
    assert_eq!(rendered(&prompt, &global()), "A");

    // With an unbound complete section beside it, that one alone shows:
    // no conflict.
    let _other = scoped(&prompt, None, section("other", 2, "Other.").complete());
    assert_eq!(rendered(&prompt, &global()), "Other.");

    // With the tool, both show, and that is the conflict.
    let _bash = prompt.tools("bash", |_| vec![tool("bash")]).unwrap();
    let error = support::only(render_prompt(&prompt.assemble(&global())).unwrap_err());
    assert!(
        matches!(&error, RenderError::CompleteSections { section, other, .. } if section == "only" && other == "other"),
        "{error:?}"
    );
}

#[test]
fn a_complete_section_with_no_text_for_the_caller_is_not_active() {
    #[derive(Clone, Copy)]
    struct Summarizing;
    let prompt = SystemPrompt::empty();
    let _a = scoped(&prompt, None, section("a", 0, "A"));
    let _only = scoped(
        &prompt,
        None,
        PromptSection::provided("only", 1, |cx: &AssembleContext| {
            if cx.get::<Summarizing>().is_some() {
                "Summarize.".to_owned()
            } else {
                String::new()
            }
        })
        .complete(),
    );
    // Empty for this caller: the other sections are the prompt.
    assert_eq!(rendered(&prompt, &global()), "A");
    // With text: it alone is.
    let summarizing = AssembleContext::new().with(Summarizing);
    assert_eq!(rendered(&prompt, &summarizing), "Summarize.");
    // Beside another complete section it is no conflict while empty.
    let _other = scoped(&prompt, None, section("other", 2, "Other.").complete());
    assert_eq!(rendered(&prompt, &global()), "Other.");
}

// ---------------------------------------------------------------------------
// Against a reference model: a map per layer, nearest wins

const LAYERS: usize = 3;
const NAMES: [&str; 3] = ["a", "b", "c"];

/// What a registration of the reference model contributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// Section `name`, with the registration's order and text.
    Section,
    /// Variable `name`, whose value is the registration's text.
    Variable,
    /// Tool provider `name`, giving tool `name` described by the text.
    Tools,
    /// The layer's tool order: tool `name` first, then the rest by name.
    /// One per layer, so its key has no name.
    ToolOrder,
}

#[derive(Clone, Debug)]
enum Op {
    /// Register `kind` named `NAMES[name]` into `LAYERS[layer]`.
    Register {
        kind: Kind,
        layer: usize,
        name: usize,
        order: i32,
    },
    /// Drop the `n`-th live registration (modulo how many there are).
    Drop(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let kind = prop_oneof![
        Just(Kind::Section),
        Just(Kind::Variable),
        Just(Kind::Tools),
        Just(Kind::ToolOrder),
    ];
    prop_oneof![
        3 => (kind, 0..LAYERS, 0..NAMES.len(), -2..3i32).prop_map(|(kind, layer, name, order)| {
            Op::Register { kind, layer, name, order }
        }),
        1 => any::<usize>().prop_map(Op::Drop),
    ]
}

fn layer(at: usize) -> Option<ScopeId> {
    match at {
        0 => None,
        1 => Some(preset()),
        _ => Some(agent()),
    }
}

/// One layer of the model: (kind, name) → (order, name, text). A tool order's
/// name is the tool it lists first, so its key holds no name.
type ModelLayer = BTreeMap<(Kind, &'static str), (i32, &'static str, String)>;

/// Registers `kind` into `handle` as the model describes it.
fn register(
    handle: &SystemPrompt,
    kind: Kind,
    name: &'static str,
    order: i32,
    text: &str,
) -> Result<Registration, RegistryError> {
    match kind {
        Kind::Section => handle.section(section(name, order, text)),
        Kind::Variable => {
            let value = text.to_owned();
            handle.variable(name, move |_| Some(value.clone().into()))
        }
        Kind::Tools => {
            let described = Arc::new(dsh_system_prompt::ToolSchema::new(
                name,
                text,
                serde_json::json!({}),
            ));
            handle.tools(name, move |_| vec![Arc::clone(&described)])
        }
        Kind::ToolOrder => handle.tool_order(ToolOrder::new([name, UNLISTED_TOOLS]).unwrap()),
    }
}

/// What an assembly seeing `layers` holds, by the model: its sections'
/// texts in `(order, name)` order, its variables' values by name, its
/// tools (name and description) in place.
#[allow(clippy::type_complexity)]
fn expected(layers: &[ModelLayer]) -> (Vec<String>, Vec<(&str, String)>, Vec<(&str, String)>) {
    let mut seen: ModelLayer = BTreeMap::new();
    for layer in layers {
        seen.extend(layer.iter().map(|(key, entry)| (*key, entry.clone())));
    }
    let of = |kind: Kind| seen.iter().filter(move |((own, _), _)| *own == kind);
    let mut sections: Vec<(i32, &str, String)> = of(Kind::Section)
        .map(|((_, name), (order, _, text))| (*order, *name, text.clone()))
        .collect();
    sections.sort();
    let variables = of(Kind::Variable)
        .map(|((_, name), (_, _, text))| (*name, text.clone()))
        .collect();
    let first = of(Kind::ToolOrder)
        .map(|(_, (_, listed, _))| *listed)
        .next();
    let mut tools: Vec<(&str, String)> = of(Kind::Tools)
        .map(|((_, name), (_, _, text))| (*name, text.clone()))
        .collect();
    tools.sort_by_key(|(name, _)| (Some(*name) != first, *name));
    let sections = sections.into_iter().map(|(_, _, text)| text).collect();
    (sections, variables, tools)
}

proptest! {
    /// For any sequence of registrations and drops of every kind of
    /// contribution, in any layer, each assembly equals the model's: a map
    /// per layer, the nearest layer winning; a duplicate within one layer
    /// fails and changes nothing.
    #[test]
    fn assemblies_equal_a_map_per_layer_with_the_nearest_winning(ops in prop::collection::vec(op(), 0..40)) {
        let prompt = SystemPrompt::empty();
        let mut model: Vec<ModelLayer> = vec![BTreeMap::new(); LAYERS];
        let mut live: Vec<(usize, (Kind, &str), Registration)> = Vec::new();
        for (step, op) in ops.into_iter().enumerate() {
            match op {
                Op::Register { kind, layer: at, name, order } => {
                    let name = NAMES[name];
                    let text = format!("{name}@{at}#{step}");
                    let handle = match layer(at) {
                        None => prompt.clone(),
                        Some(scope) => prompt.in_scope(scope),
                    };
                    let key = (kind, if kind == Kind::ToolOrder { "" } else { name });
                    let result = register(&handle, kind, name, order, &text);
                    match model[at].entry(key) {
                        Entry::Occupied(_) => prop_assert!(
                            result.is_err(),
                            "a duplicate {:?} within a layer must fail",
                            key
                        ),
                        Entry::Vacant(entry) => {
                            entry.insert((order, name, text));
                            live.push((at, key, result.unwrap()));
                        }
                    }
                }
                Op::Drop(n) if !live.is_empty() => {
                    let (at, key, registration) = live.remove(n % live.len());
                    drop(registration);
                    model[at].remove(&key);
                }
                Op::Drop(_) => {}
            }
            for depth in 0..LAYERS {
                let scope = Scope::new((1..=depth).filter_map(layer));
                let (sections, variables, tools) = expected(&model[..=depth]);
                let assembly = prompt.assemble(&AssembleContext::new().with_scope(scope));
                let actual: Vec<String> =
                    assembly.sections.iter().map(|s| s.text().to_string()).collect();
                prop_assert_eq!(actual, sections, "sections at depth {}", depth);
                let actual: Vec<(&str, String)> = NAMES
                    .iter()
                    .filter_map(|&name| Some((name, assembly.variables.value(name)?.to_owned())))
                    .collect();
                prop_assert_eq!(actual, variables, "variables at depth {}", depth);
                let actual: Vec<(&str, String)> = assembly
                    .tools
                    .iter()
                    .map(|tool| (tool.name.as_str(), tool.description.clone()))
                    .collect();
                prop_assert_eq!(actual, tools, "tools at depth {}", depth);
            }
        }
    }
}

proptest! {
    /// Over any sequence of lists drawn from a few shared tools, the
    /// assembly's tools are the ones listed before the marker, then the
    /// rest by name, then the ones listed after it.
    #[test]
    fn any_list_of_tools_is_placed_by_the_order(
        lists in proptest::collection::vec(
            Just((0..5usize).collect::<Vec<_>>()).prop_shuffle().prop_flat_map(|all| {
                (0..=all.len()).prop_map(move |len| all[..len].to_vec())
            }),
            1..16,
        ),
    ) {
        use std::sync::Mutex;

        const NAMES: [&str; 5] = ["todo_write", "bash", "read", "fork", "task"];
        let shared: Vec<_> = NAMES.iter().map(|name| tool(name)).collect();
        let current = Arc::new(Mutex::new(Vec::new()));
        let prompt = SystemPrompt::empty();
        let given = Arc::clone(&current);
        let _tools = prompt
            .tools("drawn", move |_| given.lock().unwrap().clone())
            .unwrap();
        let _order = prompt
            .tool_order(ToolOrder::new(["todo_write", UNLISTED_TOOLS, "bash"]).unwrap())
            .unwrap();
        for list in lists {
            *current.lock().unwrap() = list.iter().map(|&at| Arc::clone(&shared[at])).collect();
            let mut expected: Vec<&str> = list.iter().map(|&at| NAMES[at]).collect();
            expected.sort_by_key(|&name| match name {
                "todo_write" => (0, ""),
                "bash" => (2, ""),
                other => (1, other),
            });
            prop_assert_eq!(tools_for(&prompt, &global()), expected);
        }
    }
}
