//! Registration: what `SystemPrompt::section`, `variable`, `tools`,
//! `on_assemble` and `on_change` accept, refuse, and undo.

use crate::support;

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use dsh_system_prompt::NameKind;
use dsh_system_prompt::{
    AssembleContext, BoxError, ChangeAction, ChangeEvent, Contribution, Owner, PromptSection,
    Registration, RegistryError, RenderErrors, SystemPrompt, TemplateProblem, ToolSchema,
    render_prompt,
};
use proptest::strategy::Strategy;
use support::{
    Caller, Slot, assert_mentions, registry, render_default, section_names, within_deadline,
};

/// Everything an assembly of `prompt` shows, to compare registry states.
#[derive(Debug, PartialEq)]
struct Snapshot {
    sections: Vec<support::SectionRow>,
    variables: Vec<support::VariableRow>,
    tools: Vec<String>,
    rendered: Result<String, RenderErrors>,
    section_names: Vec<String>,
    variable_names: Vec<String>,
}

fn snapshot(prompt: &SystemPrompt) -> Snapshot {
    let assembly = prompt.assemble(&AssembleContext::default());
    Snapshot {
        sections: support::section_rows(&assembly),
        variables: support::variable_rows(&assembly),
        tools: assembly
            .tools
            .iter()
            .map(|tool| tool.name.clone())
            .collect(),
        rendered: render_prompt(&assembly),
        section_names: prompt
            .section_names()
            .iter()
            .map(ToString::to_string)
            .collect(),
        variable_names: prompt
            .variable_names()
            .iter()
            .map(ToString::to_string)
            .collect(),
    }
}

/// A registry with one section, one variable and one tool, so that
/// "unchanged" has something to compare.
fn populated() -> (SystemPrompt, Vec<Registration>) {
    let (prompt, mut handles) = registry(
        [
            PromptSection::new("agent:persona", 0, "You run <<model>>."),
            PromptSection::new("tool:bash", 105, "Check exit codes.").bound_to_tool("bash"),
        ],
        &[("model", Some("gpt-5"))],
    );
    let bash = Arc::new(ToolSchema::new(
        "bash",
        "Runs a command.",
        serde_json::json!({"type": "object"}),
    ));
    handles.push(
        prompt
            .tools("tools#69", move |_| vec![bash.clone()])
            .unwrap(),
    );
    (prompt, handles)
}

/// Records every change event of `prompt`.
fn record_events(prompt: &SystemPrompt) -> (Registration, Arc<Mutex<Vec<ChangeEvent>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let handle = prompt
        .on_change(move |event| {
            sink.lock().unwrap().push(event.clone());
            Ok(())
        })
        .unwrap();
    (handle, events)
}

fn registered(contribution: Contribution) -> ChangeEvent {
    ChangeEvent {
        action: ChangeAction::Registered,
        contribution,
        layer: None,
    }
}

fn unregistered(contribution: Contribution) -> ChangeEvent {
    ChangeEvent {
        action: ChangeAction::Unregistered,
        contribution,
        layer: None,
    }
}

fn section(name: &str) -> Contribution {
    Contribution::Section {
        name: name.to_owned(),
    }
}

fn variable(name: &str) -> Contribution {
    Contribution::Variable {
        name: name.to_owned(),
    }
}

/// The error a vetoing change listener returns.
#[derive(Debug, PartialEq)]
struct Veto(String);

impl fmt::Display for Veto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "vetoed {}", self.0)
    }
}

impl std::error::Error for Veto {}

// ---------------------------------------------------------------------------
// Order

#[test]
fn sections_assemble_in_ascending_order_then_name_whatever_the_registration_order() {
    let sections: [(&str, i32); 9] = [
        ("tool:read", 100),
        ("tool:bash", 105),
        ("agent:persona", 0),
        ("b", 0),
        ("a", 0),
        ("preamble", -5),
        ("a.early", -5),
        ("first", i32::MIN),
        ("last", i32::MAX),
    ];
    let expected = [
        "first",
        "a.early",
        "preamble",
        "a",
        "agent:persona",
        "b",
        "tool:read",
        "tool:bash",
        "last",
    ];

    // Forward, reversed, and every rotation: the result never depends on
    // the registration order.
    let mut orders: Vec<Vec<(&str, i32)>> = Vec::new();
    for rotation in 0..sections.len() {
        let mut rotated = sections.to_vec();
        rotated.rotate_left(rotation);
        orders.push(rotated.clone());
        rotated.reverse();
        orders.push(rotated);
    }
    for registration_order in orders {
        let (prompt, _handles) = registry(
            registration_order
                .iter()
                .map(|&(name, order)| PromptSection::new(name, order, name)),
            &[],
        );
        let assembly = prompt.assemble(&AssembleContext::default());
        assert_eq!(
            section_names(&assembly),
            expected,
            "registered as {registration_order:?}"
        );
        let orders: Vec<i32> = assembly.sections.iter().map(|s| s.order()).collect();
        assert!(orders.is_sorted(), "orders {orders:?}");
        assert_eq!(render_prompt(&assembly).unwrap(), expected.join("\n\n"));
        assert_eq!(
            prompt.section_names(),
            expected,
            "section_names() follows render order"
        );
    }
}

proptest::proptest! {
    /// Any set of sections, registered in any order, assembles sorted by
    /// `(order, name)`.
    #[test]
    fn any_sections_in_any_registration_order_assemble_sorted(
        sections in proptest::collection::btree_map("[a-zA-Z][a-z0-9:._-]{0,6}", -3i32..3, 0..16)
            .prop_map(|sections| sections.into_iter().collect::<Vec<_>>())
            .prop_shuffle(),
    ) {
        let (prompt, _handles) = registry(
            sections.iter().map(|(name, order)| PromptSection::new(name.clone(), *order, "text")),
            &[],
        );
        let mut expected: Vec<(i32, String)> =
            sections.iter().map(|(name, order)| (*order, name.clone())).collect();
        expected.sort();
        let assembly = prompt.assemble(&AssembleContext::default());
        let found: Vec<(i32, String)> = assembly
            .sections
            .iter()
            .map(|section| (section.order(), section.name().to_string()))
            .collect();
        proptest::prop_assert_eq!(found, expected);
    }
}

#[test]
fn provided_and_fixed_sections_sort_together() {
    let (prompt, _handles) = registry(
        [
            PromptSection::provided("z", 1, |_| "provided z".to_owned()),
            PromptSection::new("m", 1, "fixed m"),
            PromptSection::provided("a", 2, |_| "provided a".to_owned()),
        ],
        &[],
    );
    let assembly = prompt.assemble(&AssembleContext::default());
    assert_eq!(section_names(&assembly), ["m", "z", "a"]);
    assert_eq!(
        render_prompt(&assembly).unwrap(),
        "fixed m\n\nprovided z\n\nprovided a"
    );
}

// ---------------------------------------------------------------------------
// Context

#[test]
fn a_text_provider_is_called_at_each_assembly_with_that_assemblys_context() {
    let prompt = SystemPrompt::empty();
    let (calls, greeting) = support::counting(|cx| {
        format!(
            "Hello, {}.",
            cx.get::<Caller>().map_or("nobody", |caller| caller.0)
        )
    });
    let _greeting = prompt
        .section(PromptSection::provided("greeting", 0, greeting))
        .unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "not called at registration"
    );

    let alice = AssembleContext::new().with(Caller("alice"));
    let bob = AssembleContext::new().with(Caller("bob"));

    let for_alice = prompt.assemble(&alice);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let for_bob = prompt.assemble(&bob);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let again_for_alice = prompt.assemble(&alice);
    assert_eq!(calls.load(Ordering::SeqCst), 3, "called at every assembly");

    assert_eq!(render_prompt(&for_alice).unwrap(), "Hello, alice.");
    assert_eq!(render_prompt(&for_bob).unwrap(), "Hello, bob.");
    assert_eq!(render_prompt(&again_for_alice).unwrap(), "Hello, alice.");
}

#[test]
fn variable_and_tool_providers_see_the_assemblys_context() {
    let prompt = SystemPrompt::empty();
    let _user = prompt
        .variable("user", |cx| cx.get::<Caller>().map(|c| c.0.into()))
        .unwrap();
    let _tools = prompt
        .tools("tools#275", |cx| match cx.get::<Caller>() {
            Some(caller) => vec![Arc::new(ToolSchema::new(
                format!("tool_for_{}", caller.0),
                "",
                serde_json::Value::Null,
            ))],
            None => Vec::new(),
        })
        .unwrap();

    let assembly = prompt.assemble(&AssembleContext::new().with(Caller("carol")));
    assert_eq!(assembly.variables.get("user"), Some(Some("carol")));
    assert!(assembly.has_tool("tool_for_carol"));

    let bare = prompt.assemble(&AssembleContext::default());
    assert_eq!(bare.variables.get("user"), Some(None));
    assert!(bare.tools.is_empty());
}

#[test]
fn a_bare_default_context_assembles_and_renders() {
    let prompt = SystemPrompt::empty();
    let _model = prompt
        .variable("model", |cx| {
            Some(cx.get::<Caller>().map_or("default-model", |c| c.0).into())
        })
        .unwrap();
    let _persona = prompt
        .section(PromptSection::provided("agent:persona", 0, |cx| {
            match cx.get::<Caller>() {
                Some(caller) => format!("You serve {}.", caller.0),
                None => "You serve whoever asks.".to_owned(),
            }
        }))
        .unwrap();
    let _model_line = prompt
        .section(PromptSection::new("model", 1, "Model: <<model>>."))
        .unwrap();

    assert_eq!(
        render_default(&prompt).unwrap(),
        "You serve whoever asks.\n\nModel: default-model."
    );
}

// ---------------------------------------------------------------------------
// Refused registrations

#[test]
fn a_duplicate_section_name_fails_naming_it_and_leaves_the_registry_unchanged() {
    let (prompt, _handles) = populated();
    let before = snapshot(&prompt);

    for duplicate in [
        PromptSection::new("agent:persona", 0, "Another persona."),
        PromptSection::new("agent:persona", 50, "Same name, other order."),
        PromptSection::provided("agent:persona", 0, |_| "provided".to_owned()),
    ] {
        let err = prompt.section(duplicate).unwrap_err();
        let (name, existing) = support::duplicate(&err, NameKind::Section);
        assert_eq!(name, "agent:persona");
        assert!(
            existing.file.ends_with("registration.rs"),
            "the existing owner is the code that registered it: {existing:?}"
        );
        assert!(err.to_string().contains("`agent:persona`"), "{err}");
        assert_eq!(snapshot(&prompt), before);
    }
}

#[test]
fn a_duplicate_variable_name_fails_naming_it_and_leaves_the_registry_unchanged() {
    let (prompt, _handles) = populated();
    let before = snapshot(&prompt);

    let err = prompt
        .variable("model", |_| Some("another-model".into()))
        .unwrap_err();
    let (name, existing) = support::duplicate(&err, NameKind::Variable);
    assert_eq!(name, "model");
    assert!(existing.file.ends_with("registration.rs"), "{existing:?}");
    assert!(err.to_string().contains("`model`"), "{err}");

    let after = snapshot(&prompt);
    assert_eq!(after, before);
    assert_eq!(
        after.variables,
        [("model".to_owned(), Some("gpt-5".to_owned()))]
    );
}

#[test]
fn an_invalid_variable_name_fails_naming_it_and_leaves_the_registry_unchanged() {
    let (prompt, _handles) = populated();
    let before = snapshot(&prompt);

    for invalid in ["Model", "a-b", "", "2fa", "a b", "_x", "modèle"] {
        let err = prompt
            .variable(invalid.to_owned(), |_| Some("value".into()))
            .unwrap_err();
        let RegistryError::InvalidVariableName { name } = &err else {
            panic!("expected InvalidVariableName for {invalid:?}, got {err:?}");
        };
        assert_eq!(name, invalid);
        let message = err.to_string();
        assert!(message.contains(&format!("`{invalid}`")), "{message}");
        assert!(message.contains("[a-z][a-z0-9_]*"), "{message}");
        assert_eq!(snapshot(&prompt), before, "after {invalid:?}");
    }
}

#[test]
fn an_invalid_section_name_fails_naming_it_and_leaves_the_registry_unchanged() {
    let (prompt, _handles) = populated();
    let before = snapshot(&prompt);

    for invalid in ["", "tool bash", ":bash", "1st", "/bash", "naïve"] {
        let err = prompt
            .section(PromptSection::new(invalid.to_owned(), 0, "text"))
            .unwrap_err();
        let RegistryError::InvalidSectionName { name } = &err else {
            panic!("expected InvalidSectionName for {invalid:?}, got {err:?}");
        };
        assert_eq!(name, invalid);
        assert!(err.to_string().contains(&format!("`{invalid}`")), "{err}");
        assert_eq!(snapshot(&prompt), before, "after {invalid:?}");
    }
}

#[test]
fn malformed_fixed_text_fails_registration_with_every_template_error() {
    let (prompt, _handles) = populated();
    let before = snapshot(&prompt);

    let err = prompt
        .section(PromptSection::new(
            "broken",
            10,
            "Run <<Model>> in\n  << cwd >>.",
        ))
        .unwrap_err();
    let RegistryError::Template(problem) = &err else {
        panic!("expected Template, got {err:?}");
    };
    let TemplateProblem {
        section, errors, ..
    } = &**problem;
    assert_eq!(section, "broken");
    let found: Vec<(&str, usize, usize)> = errors
        .iter()
        .map(|error| {
            (
                error.text.as_str(),
                error.position.line,
                error.position.column,
            )
        })
        .collect();
    assert_eq!(found, [("<<Model>>", 1, 5), ("<< cwd >>", 2, 3)]);
    assert_mentions(
        &err.to_string(),
        &["`broken`", "<<Model>>", "1:5", "<< cwd >>", "2:3", "\\<<"],
    );
    assert_eq!(snapshot(&prompt), before);
}

#[test]
fn a_refused_name_can_be_registered_once_the_original_is_dropped() {
    let (prompt, original) = registry([PromptSection::new("note", 0, "original")], &[]);
    assert!(
        prompt
            .section(PromptSection::new("note", 0, "second"))
            .is_err()
    );
    drop(original);
    let _second = prompt
        .section(PromptSection::new("note", 0, "second"))
        .unwrap();
    assert_eq!(render_default(&prompt).unwrap(), "second");
}

// ---------------------------------------------------------------------------
// Owners

#[test]
fn a_runtime_registration_is_owned_by_the_code_that_registers_it() {
    let prompt = SystemPrompt::empty();
    // Each call on one line: a caller location is the line of the call.
    let owned = PromptSection::new("owned", 0, "text");
    let _section = prompt.section(owned).unwrap();
    let line = line!() - 1;
    let _variable = prompt.variable("owned_var", |_| None).unwrap();
    let variable_line = line!() - 1;

    let owner = prompt.section_owner("owned").unwrap();
    assert!(owner.file.ends_with("registration.rs"), "{owner:?}");
    assert_eq!(owner.line, line, "{owner:?}");
    assert_eq!(owner.item, "owned");

    let assembly = prompt.assemble(&AssembleContext::default());
    assert_eq!(assembly.sections.get("owned").unwrap().owner(), &owner);
    let variable_owner = assembly.variables.owner("owned_var").unwrap();
    assert!(
        variable_owner.file.ends_with("registration.rs"),
        "{variable_owner:?}"
    );
    assert_eq!(variable_owner.line, variable_line);
}

#[test]
fn an_explicit_owner_is_kept() {
    let prompt = SystemPrompt::empty();
    let owner = Owner::new("dsh-tool-bash", "dsh_tool_bash::HABIT", "src/lib.rs", 7);
    let _section = prompt
        .section(PromptSection::new("tool:bash", 105, "habit").owned_by(owner.clone()))
        .unwrap();
    assert_eq!(prompt.section_owner("tool:bash"), Some(owner.clone()));
    let err = prompt
        .section(PromptSection::new("tool:bash", 105, "again"))
        .unwrap_err();
    // The duplicate names the first owner.
    support::assert_mentions(&err.to_string(), &["dsh-tool-bash"]);
}

// ---------------------------------------------------------------------------
// Handles

#[test]
fn dropping_a_registration_removes_exactly_that_contribution() {
    let prompt = SystemPrompt::empty();
    let tool = |name: &str| Arc::new(ToolSchema::new(name, "", serde_json::Value::Null));
    let (read, bash) = (tool("read"), tool("bash"));

    let a = prompt.section(PromptSection::new("a", 0, "A")).unwrap();
    let b = prompt
        .section(PromptSection::new("b", 1, "B <<x>>"))
        .unwrap();
    let c = prompt.section(PromptSection::new("c", 2, "C")).unwrap();
    let x = prompt.variable("x", |_| Some("x".into())).unwrap();
    let y = prompt.variable("y", |_| Some("y".into())).unwrap();
    let reads = prompt.tools("reads", move |_| vec![read.clone()]).unwrap();
    let bashes = prompt.tools("bashes", move |_| vec![bash.clone()]).unwrap();
    let listener = prompt
        .on_assemble("listener#529", |_, assembly| {
            assembly
                .variables
                .set("from_listener", Some("on".to_owned()));
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();

    let full = snapshot(&prompt);
    assert_eq!(full.section_names, ["a", "b", "c"]);
    assert_eq!(
        full.variables,
        [
            ("x".to_owned(), Some("x".to_owned())),
            ("y".to_owned(), Some("y".to_owned())),
            ("from_listener".to_owned(), Some("on".to_owned())),
        ]
    );
    assert_eq!(
        full.tools,
        ["bash", "read"],
        "without a tool order, by name"
    );

    drop(b);
    let now = snapshot(&prompt);
    assert_eq!(now.section_names, ["a", "c"]);
    assert_eq!(now.variables, full.variables);
    assert_eq!(now.tools, full.tools);

    drop(y);
    let now = snapshot(&prompt);
    assert_eq!(now.section_names, ["a", "c"]);
    assert_eq!(now.variable_names, ["x"]);
    assert_eq!(now.tools, full.tools);

    drop(reads);
    let now = snapshot(&prompt);
    assert_eq!(now.tools, ["bash"]);
    assert_eq!(now.variable_names, ["x"]);

    drop(listener);
    let now = snapshot(&prompt);
    assert_eq!(
        now.variables,
        [("x".to_owned(), Some("x".to_owned()))],
        "the waterfall listener's variable left with it"
    );
    assert_eq!(now.section_names, ["a", "c"]);
    assert_eq!(now.tools, ["bash"]);
    assert_eq!(now.rendered, Ok("A\n\nC".to_owned()));

    drop((a, c, x, bashes));
    let empty = snapshot(&prompt);
    assert!(empty.sections.is_empty() && empty.variables.is_empty() && empty.tools.is_empty());
}

#[test]
fn a_kept_registration_stays_and_a_handle_outliving_its_registry_drops_quietly() {
    let prompt = SystemPrompt::empty();
    prompt
        .section(PromptSection::new("kept", 0, "kept"))
        .unwrap()
        .keep();
    assert_eq!(snapshot(&prompt).section_names, ["kept"]);

    let clone = prompt.clone();
    let orphan = clone
        .section(PromptSection::new("orphan", 1, "orphan"))
        .unwrap();
    assert_eq!(
        snapshot(&prompt).section_names,
        ["kept", "orphan"],
        "clones share one registry"
    );
    drop(prompt);
    drop(clone);
    drop(orphan);
}

// ---------------------------------------------------------------------------
// Change events

#[test]
fn a_change_event_is_emitted_on_every_register_and_unregister() {
    let prompt = SystemPrompt::empty();
    let (_recorder, events) = record_events(&prompt);

    let persona = prompt
        .section(PromptSection::new("agent:persona", 0, "P"))
        .unwrap();
    let model = prompt.variable("model", |_| None).unwrap();
    let tools = prompt.tools("tools#617", |_| Vec::new()).unwrap();
    let waterfall = prompt
        .on_assemble("listener#619", |_, _| std::ops::ControlFlow::Continue(()))
        .unwrap();
    let other_listener = prompt.on_change(|_| Ok(())).unwrap();
    // Refused registrations change nothing, so they emit nothing.
    assert!(
        prompt
            .section(PromptSection::new("agent:persona", 0, "again"))
            .is_err()
    );
    assert!(prompt.variable("Model", |_| None).is_err());
    assert!(
        prompt
            .section(PromptSection::new("bad", 0, "<<>>"))
            .is_err()
    );

    drop(model);
    drop(other_listener);
    drop(persona);
    drop(waterfall);
    drop(tools);

    assert_eq!(
        *events.lock().unwrap(),
        [
            registered(section("agent:persona")),
            registered(variable("model")),
            registered(Contribution::Tools {
                name: "tools#617".into()
            }),
            registered(Contribution::AssembleListener {
                name: "listener#619".into()
            }),
            registered(Contribution::ChangeListener),
            unregistered(variable("model")),
            unregistered(Contribution::ChangeListener),
            unregistered(section("agent:persona")),
            unregistered(Contribution::AssembleListener {
                name: "listener#619".into()
            }),
            unregistered(Contribution::Tools {
                name: "tools#617".into()
            }),
        ]
    );
}

#[test]
fn a_dropped_change_listener_hears_nothing_more() {
    let prompt = SystemPrompt::empty();
    let (recorder, events) = record_events(&prompt);
    let first = prompt.section(PromptSection::new("first", 0, "1")).unwrap();
    drop(recorder);
    let _second = prompt
        .section(PromptSection::new("second", 0, "2"))
        .unwrap();
    drop(first);
    assert_eq!(*events.lock().unwrap(), [registered(section("first"))]);
}

#[test]
fn a_failing_change_listener_rolls_the_registration_back_and_its_error_reaches_the_caller() {
    let (prompt, _allowed) = registry([PromptSection::new("allowed", 0, "A")], &[]);
    let veto = prompt
        .on_change(|event| match &event.contribution {
            Contribution::Section { name } | Contribution::Variable { name }
                if name.starts_with("forbidden") && event.action == ChangeAction::Registered =>
            {
                Err(Box::new(Veto(name.clone())) as BoxError)
            }
            _ => Ok(()),
        })
        .unwrap();
    let before = snapshot(&prompt);

    let err = prompt
        .section(PromptSection::new("forbidden", 1, "F"))
        .unwrap_err();
    let RegistryError::ChangeListener {
        contribution,
        source,
    } = &err
    else {
        panic!("expected ChangeListener, got {err:?}");
    };
    assert!(contribution.contains("forbidden"), "{contribution}");
    assert_eq!(
        source.downcast_ref::<Veto>(),
        Some(&Veto("forbidden".to_owned()))
    );
    let chained = std::error::Error::source(&err).expect("the listener's error is the source");
    assert_eq!(chained.to_string(), "vetoed forbidden");
    assert!(err.to_string().contains("`forbidden`"), "{err}");
    assert_eq!(
        snapshot(&prompt),
        before,
        "the refused section is not visible"
    );

    let err = prompt
        .variable("forbidden_var", |_| Some("v".into()))
        .unwrap_err();
    assert!(
        matches!(err, RegistryError::ChangeListener { .. }),
        "{err:?}"
    );
    assert_eq!(
        snapshot(&prompt),
        before,
        "the refused variable is not visible"
    );

    // Others still register while the listener is there...
    let _fine = prompt.section(PromptSection::new("fine", 2, "ok")).unwrap();
    assert_eq!(snapshot(&prompt).section_names, ["allowed", "fine"]);

    // ...and once it is gone, the refused names are free.
    drop(veto);
    let _forbidden = prompt
        .section(PromptSection::new("forbidden", 1, "F"))
        .unwrap();
    let _var = prompt
        .variable("forbidden_var", |_| Some("v".into()))
        .unwrap();
    assert_eq!(
        snapshot(&prompt).section_names,
        ["allowed", "forbidden", "fine"]
    );
}

#[test]
fn a_change_listener_cannot_refuse_an_unregistration() {
    let (prompt, doomed) = registry([PromptSection::new("doomed", 0, "D")], &[]);
    let _grumpy = prompt
        .on_change(|event| match event.action {
            ChangeAction::Unregistered => Err(Box::new(Veto("unregister".to_owned())) as BoxError),
            ChangeAction::Registered => Ok(()),
        })
        .unwrap();
    drop(doomed);
    assert!(snapshot(&prompt).section_names.is_empty());
}

// ---------------------------------------------------------------------------
// Re-entrancy

/// A change listener that, while the registration of section `trigger` is
/// being notified, calls `inside` with the registry, reached through the
/// test's `registry` slot.
fn on_trigger(
    prompt: &SystemPrompt,
    registry: &Slot<SystemPrompt>,
    inside: impl Fn(&SystemPrompt) + Send + Sync + 'static,
) -> Registration {
    let registry = Arc::clone(registry);
    prompt
        .on_change(move |event| {
            if event.contribution == section("trigger") && event.action == ChangeAction::Registered
            {
                let prompt = registry.lock().unwrap().clone().unwrap();
                inside(&prompt);
            }
            Ok(())
        })
        .unwrap()
}

#[test]
fn registering_inside_a_change_listener_fails_with_reentrant() {
    within_deadline("registering inside a change listener", || {
        let prompt = SystemPrompt::empty();
        let registry: Slot<SystemPrompt> = Arc::new(Mutex::new(Some(prompt.clone())));
        let inner_result: Slot<Result<Registration, RegistryError>> = Arc::new(Mutex::new(None));

        let _listener = {
            let inner_result = Arc::clone(&inner_result);
            on_trigger(&prompt, &registry, move |prompt| {
                let result = prompt.section(PromptSection::new("nested", 1, "N"));
                *inner_result.lock().unwrap() = Some(result);
            })
        };

        let _trigger = prompt
            .section(PromptSection::new("trigger", 0, "T"))
            .unwrap();
        let result = inner_result.lock().unwrap().take().expect("listener ran");
        let err = result.unwrap_err();
        let RegistryError::Reentrant { contribution } = &err else {
            panic!("expected Reentrant, got {err:?}");
        };
        assert!(contribution.contains("nested"), "{contribution}");
        assert!(err.to_string().contains("`nested`"), "{err}");
        assert_eq!(snapshot(&prompt).section_names, ["trigger"]);

        // Outside the listener, registering works again.
        let _nested = prompt
            .section(PromptSection::new("nested", 1, "N"))
            .unwrap();
        assert_eq!(snapshot(&prompt).section_names, ["trigger", "nested"]);
        registry.lock().unwrap().take();
    });
}

#[test]
fn dropping_a_handle_inside_a_change_listener_is_deferred_then_applied() {
    within_deadline("dropping inside a change listener", || {
        let prompt = SystemPrompt::empty();
        let (_recorder, events) = record_events(&prompt);
        let registry: Slot<SystemPrompt> = Arc::new(Mutex::new(Some(prompt.clone())));
        let doomed: Slot<Registration> = Arc::new(Mutex::new(Some(
            prompt
                .section(PromptSection::new("doomed", 5, "D"))
                .unwrap(),
        )));
        let seen_inside: Slot<Vec<String>> = Arc::new(Mutex::new(None));

        let _listener = {
            let doomed = Arc::clone(&doomed);
            let seen_inside = Arc::clone(&seen_inside);
            on_trigger(&prompt, &registry, move |prompt| {
                drop(doomed.lock().unwrap().take());
                // A change listener may assemble; the drop is not applied
                // yet, since this notification is still running.
                *seen_inside.lock().unwrap() = Some(snapshot(prompt).section_names);
            })
        };

        let _trigger = prompt
            .section(PromptSection::new("trigger", 0, "T"))
            .unwrap();
        assert_eq!(
            seen_inside.lock().unwrap().take().expect("listener ran"),
            ["doomed"],
            "inside the listener, the registration being notified is not published yet and the drop is deferred"
        );
        assert_eq!(snapshot(&prompt).section_names, ["trigger"]);
        assert_eq!(
            *events.lock().unwrap(),
            [
                registered(section("doomed")),
                registered(Contribution::ChangeListener),
                registered(section("trigger")),
                unregistered(section("doomed")),
            ]
        );
        registry.lock().unwrap().take();
    });
}

// ---------------------------------------------------------------------------
// Variables

#[test]
fn every_registered_variable_appears_in_the_assembly() {
    let (prompt, _handles) = registry(
        [],
        &[
            ("model", Some("gpt-5")),
            ("cwd", Some("/work")),
            ("unused", Some("u")),
        ],
    );
    // No section references any of them: they appear all the same.
    let assembly = prompt.assemble(&AssembleContext::default());
    assert_eq!(assembly.variables.len(), 3);
    let mut names: Vec<&str> = assembly.variables.names().collect();
    names.sort_unstable();
    assert_eq!(names, ["cwd", "model", "unused"]);
    assert_eq!(assembly.variables.get("model"), Some(Some("gpt-5")));
    assert_eq!(assembly.variables.get("cwd"), Some(Some("/work")));
    assert_eq!(assembly.variables.get("unused"), Some(Some("u")));
    assert_eq!(assembly.variables.get("absent"), None);
}

#[test]
fn a_provider_returning_none_is_recorded_as_registered_but_valueless() {
    let prompt = SystemPrompt::empty();
    let _cwd = prompt
        .variable("cwd", |cx| {
            cx.get::<Caller>().map(|c| format!("/home/{}", c.0).into())
        })
        .unwrap();

    let bare = prompt.assemble(&AssembleContext::default());
    assert_eq!(bare.variables.get("cwd"), Some(None));
    assert!(bare.variables.contains("cwd"));
    assert_eq!(bare.variables.value("cwd"), None);
    assert_eq!(bare.variables.get("nope"), None);
    assert!(!bare.variables.contains("nope"));

    let with = prompt.assemble(&AssembleContext::new().with(Caller("ann")));
    assert_eq!(with.variables.get("cwd"), Some(Some("/home/ann")));
}

#[test]
fn listeners_that_accepted_a_vetoed_registration_are_told_it_is_undone() {
    let prompt = SystemPrompt::empty();
    let (_recorder, events) = record_events(&prompt);
    let _veto = prompt
        .on_change(|event| match &event.contribution {
            Contribution::Section { name } if name == "forbidden" => {
                Err(Box::new(Veto(name.clone())) as BoxError)
            }
            _ => Ok(()),
        })
        .unwrap();

    let refused = prompt.section(PromptSection::new("forbidden", 0, "F"));

    assert!(matches!(refused, Err(RegistryError::ChangeListener { .. })));
    assert_eq!(
        *events.lock().unwrap(),
        [
            registered(Contribution::ChangeListener),
            registered(section("forbidden")),
            unregistered(section("forbidden")),
        ],
        "the recorder saw the registration and then its undoing"
    );
}

/// `SystemPrompt::sections` registers a batch as one change of the
/// registry, refusing the same parts `section` would, one by one: an
/// invalid name, a name taken (before or earlier in the batch), a
/// malformed text, a listener's veto. Its one registration drops the
/// rest together, an event for each.
#[test]
fn sections_register_as_a_batch_refusing_what_section_would_refuse() {
    let (prompt, _taken) = registry([PromptSection::new("taken", 0, "T")], &[]);
    let events = Arc::new(Mutex::new(Vec::new()));
    let heard = Arc::clone(&events);
    let _listener = prompt
        .on_change(move |event| {
            let Contribution::Section { name } = &event.contribution else {
                return Ok(());
            };
            heard.lock().unwrap().push((event.action, name.clone()));
            if name == "vetoed" && event.action == ChangeAction::Registered {
                return Err(Box::new(Veto(name.clone())) as BoxError);
            }
            Ok(())
        })
        .unwrap();
    let (batch, refused) = prompt.sections([
        PromptSection::new("a", 1, "A"),
        PromptSection::new("taken", 2, "again"),
        PromptSection::new("bad name!", 3, "x"),
        PromptSection::new("b", 4, "B <<Model>>"),
        PromptSection::new("vetoed", 5, "V"),
        PromptSection::new("a", 6, "twice in the batch"),
        PromptSection::new("c", 7, "C"),
    ]);
    let refused: Vec<(usize, String)> = (refused.iter())
        .map(|(at, error)| (*at, format!("{error:?}").chars().take(24).collect()))
        .collect();
    let kinds: Vec<usize> = refused.iter().map(|(at, _)| *at).collect();
    assert_eq!(kinds, [1, 2, 3, 4, 5], "{refused:?}");
    assert!(refused[0].1.starts_with("Duplicate"), "{refused:?}");
    assert!(
        refused[1].1.starts_with("InvalidSectionName"),
        "{refused:?}"
    );
    assert!(refused[2].1.starts_with("Template"), "{refused:?}");
    assert!(refused[3].1.starts_with("ChangeListener"), "{refused:?}");
    assert!(refused[4].1.starts_with("Duplicate"), "{refused:?}");
    assert_eq!(snapshot(&prompt).section_names, ["taken", "a", "c"]);
    let registered: Vec<(ChangeAction, String)> = events.lock().unwrap().drain(..).collect();
    assert_eq!(
        registered,
        [
            (ChangeAction::Registered, "a".to_owned()),
            (ChangeAction::Registered, "vetoed".to_owned()),
            (ChangeAction::Registered, "c".to_owned()),
        ]
    );
    drop(batch);
    assert_eq!(snapshot(&prompt).section_names, ["taken"]);
    let mut unregistered: Vec<(ChangeAction, String)> = events.lock().unwrap().drain(..).collect();
    unregistered.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        unregistered,
        [
            (ChangeAction::Unregistered, "a".to_owned()),
            (ChangeAction::Unregistered, "c".to_owned()),
        ]
    );
}
