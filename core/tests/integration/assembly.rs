//! Assembly: the waterfall, the owned snapshot, and tool-bound guidance.

use crate::support;

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use dsh_system_prompt::inspect::render_prompt_with_spans;
use dsh_system_prompt::{
    AssembleContext, AssembledSection, PromptAssembly, PromptSection, Registration, RenderError,
    SystemPrompt, ToolSchema, render_prompt,
};
use serde_json::json;
use support::{Caller, registry, render_default, section_names, tool, tool_names};

/// A typed field a waterfall listener attaches to an assembly.
#[derive(Debug, PartialEq)]
struct Budget(usize);

/// A listener that appends `label` to the `trail` variable, so the order
/// listeners ran in, and what each saw of the earlier ones, is visible.
fn append_to_trail(prompt: &SystemPrompt, label: &'static str) -> Registration {
    support::listener(prompt, label, move |_, assembly| {
        let trail = assembly.variables.value("trail").unwrap_or("").to_owned();
        assembly.variables.set("trail", Some(trail + label));
    })
}

// ---------------------------------------------------------------------------
// The waterfall

#[test]
fn waterfall_listeners_run_in_registration_order_each_seeing_what_earlier_ones_did() {
    let (prompt, _trail) = registry([PromptSection::new("trail", 0, "trail: <<trail>>")], &[]);
    let c = append_to_trail(&prompt, "c");
    let _a = append_to_trail(&prompt, "a");
    let _b = append_to_trail(&prompt, "b");

    let assembly = prompt.assemble(&AssembleContext::default());
    assert_eq!(assembly.variables.value("trail"), Some("cab"));
    assert_eq!(render_prompt(&assembly).unwrap(), "trail: cab");

    drop(c);
    let _c_again = append_to_trail(&prompt, "c");
    let assembly = prompt.assemble(&AssembleContext::default());
    assert_eq!(
        assembly.variables.value("trail"),
        Some("abc"),
        "a re-registered listener runs last"
    );
}

#[test]
fn waterfall_listeners_see_the_callers_context() {
    let prompt = SystemPrompt::empty();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let _listeners: Vec<Registration> = ["first", "second"]
        .into_iter()
        .map(|name| {
            let seen = Arc::clone(&seen);
            support::listener(&prompt, name, move |cx, _| {
                seen.lock()
                    .unwrap()
                    .push(cx.get::<Caller>().map(|caller| caller.0));
            })
        })
        .collect();

    prompt.assemble(&AssembleContext::new().with(Caller("alice")));
    prompt.assemble(&AssembleContext::default());
    assert_eq!(
        *seen.lock().unwrap(),
        [Some("alice"), Some("alice"), None, None]
    );
}

#[test]
fn waterfall_listeners_see_the_assembly_the_registry_built() {
    let (prompt, _handles) = registry(
        [PromptSection::provided("agent:persona", 0, |cx| {
            format!("for {}", cx.get::<Caller>().map_or("?", |c| c.0))
        })],
        &[("model", Some("gpt-5"))],
    );
    let _tools = prompt.tools("tools#106", |_| vec![tool("bash")]).unwrap();
    let seen = Arc::new(Mutex::new(None));
    let _listener = {
        let seen = Arc::clone(&seen);
        support::listener(&prompt, "listener#111", move |_, assembly| {
            *seen.lock().unwrap() = Some((
                section_names(assembly),
                assembly.sections[0].text().to_string(),
                assembly
                    .variables
                    .get("model")
                    .map(|v| v.map(str::to_owned)),
                tool_names(assembly),
            ));
        })
    };

    prompt.assemble(&AssembleContext::new().with(Caller("bob")));
    assert_eq!(
        seen.lock().unwrap().take().unwrap(),
        (
            vec!["agent:persona".to_owned()],
            "for bob".to_owned(),
            Some(Some("gpt-5".to_owned())),
            vec!["bash".to_owned()],
        )
    );
}

#[test]
fn a_waterfall_listener_inserts_sections_at_their_order_and_name_position() {
    let (prompt, _handles) = registry(
        [("a", 0), ("c", 10), ("e", 20)]
            .map(|(name, order)| PromptSection::new(name, order, name.to_uppercase())),
        &[],
    );
    let _listener = support::listener(&prompt, "listener#146", |_, assembly| {
        for (name, order) in [("d", 10), ("b", 10), ("z", -1), ("f", 20), ("y", 99)] {
            let replaced =
                assembly
                    .sections
                    .insert(AssembledSection::new(name, order, name.to_uppercase()));
            assert!(replaced.is_none());
        }
    });

    let assembly = prompt.assemble(&AssembleContext::default());
    assert_eq!(
        section_names(&assembly),
        ["z", "a", "b", "c", "d", "e", "f", "y"]
    );
    assert_eq!(
        render_prompt(&assembly).unwrap(),
        "Z\n\nA\n\nB\n\nC\n\nD\n\nE\n\nF\n\nY"
    );
}

#[test]
fn inserting_a_section_of_an_existing_name_replaces_it_and_moves_it_to_its_new_order() {
    let (prompt, _handles) = registry(
        [
            PromptSection::new("a", 0, "A"),
            PromptSection::new("b", 1, "B"),
        ],
        &[],
    );
    let replaced = Arc::new(Mutex::new(None));
    let _listener = {
        let replaced = Arc::clone(&replaced);
        support::listener(&prompt, "listener#183", move |_, assembly| {
            let previous = assembly
                .sections
                .insert(AssembledSection::new("a", 2, "A moved"));
            *replaced.lock().unwrap() = previous.map(|s| (s.order(), s.text().to_string()));
        })
    };
    let assembly = prompt.assemble(&AssembleContext::default());
    assert_eq!(*replaced.lock().unwrap(), Some((0, "A".to_owned())));
    assert_eq!(section_names(&assembly), ["b", "a"]);
    assert_eq!(render_prompt(&assembly).unwrap(), "B\n\nA moved");
}

#[test]
fn a_waterfall_listener_adds_variables_that_rendering_sees() {
    let (prompt, _section) = registry(
        [PromptSection::new(
            "budget",
            0,
            "Budget: <<budget>> tokens.",
        )],
        &[],
    );

    // Without the listener, the reference is unknown...
    let err = render_default(&prompt).unwrap_err();
    assert!(
        matches!(&err, RenderError::UnknownVariable { site, .. } if site.reference == "budget"),
        "{err:?}"
    );

    // ...with it, rendering sees the listener's variable.
    let _listener = support::listener(&prompt, "listener#218", |_, assembly| {
        assembly.variables.set("budget", Some("4096".to_owned()));
    });
    assert_eq!(render_default(&prompt).unwrap(), "Budget: 4096 tokens.");
}

#[test]
fn a_waterfall_listener_changes_a_fixed_sections_text_and_rendering_uses_the_new_text() {
    let (prompt, _handles) = registry(
        [PromptSection::new(
            "agent:persona",
            0,
            "Old text, no references.",
        )],
        &[("model", Some("gpt-5"))],
    );
    let _listener = support::listener(&prompt, "listener#237", |_, assembly| {
        let persona = assembly.sections.get_mut("agent:persona").unwrap();
        // Longer than the original and with a reference, so a stale
        // parse of the old text cannot render it.
        persona.set_text("New persona text for <<model>>, longer than before.");
    });
    assert_eq!(
        render_default(&prompt).unwrap(),
        "New persona text for gpt-5, longer than before."
    );
}

#[test]
fn a_waterfall_listener_replaces_the_assembly() {
    let (prompt, _handles) = registry(
        [PromptSection::new("agent:persona", 0, "Persona.")],
        &[("model", Some("gpt-5"))],
    );
    let _tools = prompt.tools("tools#257", |_| vec![tool("bash")]).unwrap();
    let _replace = support::listener(&prompt, "listener#259", |_, assembly| {
        *assembly = PromptAssembly::new();
        assembly
            .sections
            .insert(AssembledSection::new("replacement", 0, "Only this."));
    });
    let seen_by_next = Arc::new(Mutex::new(None));
    let _next = {
        let seen_by_next = Arc::clone(&seen_by_next);
        support::listener(&prompt, "listener#271", move |_, assembly| {
            *seen_by_next.lock().unwrap() = Some(section_names(assembly));
        })
    };

    let assembly = prompt.assemble(&AssembleContext::default());
    assert_eq!(
        seen_by_next.lock().unwrap().take().unwrap(),
        ["replacement"],
        "later listeners see the replacement"
    );
    assert_eq!(section_names(&assembly), ["replacement"]);
    assert!(assembly.variables.is_empty());
    assert!(assembly.tools.is_empty());
    assert_eq!(render_prompt(&assembly).unwrap(), "Only this.");
}

#[test]
fn a_waterfall_listener_that_breaks_skips_the_listeners_after_it() {
    let (prompt, _section) = registry([PromptSection::new("s", 0, "<<trail>>")], &[]);
    let later_calls = Arc::new(AtomicUsize::new(0));
    let _first = append_to_trail(&prompt, "1");
    let _breaker = prompt
        .on_assemble("listener#296", |_, assembly| {
            assembly
                .variables
                .set("trail", Some("1 then break".to_owned()));
            ControlFlow::Break(())
        })
        .unwrap();
    let _skipped = {
        let later_calls = Arc::clone(&later_calls);
        support::listener(&prompt, "listener#306", move |_, assembly| {
            later_calls.fetch_add(1, Ordering::SeqCst);
            assembly
                .variables
                .set("trail", Some("skipped ran".to_owned()));
        })
    };

    let assembly = prompt.assemble(&AssembleContext::default());
    assert_eq!(later_calls.load(Ordering::SeqCst), 0);
    assert_eq!(render_prompt(&assembly).unwrap(), "1 then break");
    // The short-circuit is per assembly, not permanent.
    prompt.assemble(&AssembleContext::default());
    assert_eq!(later_calls.load(Ordering::SeqCst), 0);
}

#[test]
fn a_waterfall_listener_attaches_typed_extensions_to_the_assembly() {
    let prompt = SystemPrompt::empty();
    let _listener = support::listener(&prompt, "listener#328", |_, assembly| {
        assembly.extensions.insert(Budget(4096));
    });
    let assembly = prompt.assemble(&AssembleContext::default());
    assert_eq!(assembly.extensions.get::<Budget>(), Some(&Budget(4096)));
}

// ---------------------------------------------------------------------------
// The owned snapshot

/// What an assembly holds, as plain values, to compare two assemblies.
#[derive(Debug, PartialEq)]
struct Contents {
    sections: Vec<support::SectionRow>,
    variables: Vec<support::VariableRow>,
    tools: Vec<ToolSchema>,
    extensions: usize,
}

fn contents(assembly: &PromptAssembly) -> Contents {
    Contents {
        sections: support::section_rows(assembly),
        variables: support::variable_rows(assembly),
        tools: assembly
            .tools
            .iter()
            .map(|t| ToolSchema::clone(t))
            .collect(),
        extensions: assembly.extensions.len(),
    }
}

fn snapshot_registry() -> (SystemPrompt, Vec<Registration>, Arc<ToolSchema>) {
    let (prompt, mut handles) = registry(
        [
            PromptSection::new("agent:persona", 0, "You run <<model>>."),
            PromptSection::provided("status", 1, |_| "All good.".to_owned()),
            PromptSection::new("tool:bash", 105, "Check exit codes.").bound_to_tool("bash"),
        ],
        &[("model", Some("gpt-5")), ("cwd", None)],
    );
    let bash = tool("bash");
    let shared = Arc::clone(&bash);
    handles.push(
        prompt
            .tools("tools#373", move |_| vec![Arc::clone(&shared)])
            .unwrap(),
    );
    (prompt, handles, bash)
}

#[test]
fn mutating_an_assemblys_sections_never_changes_the_next_assembly() {
    let (prompt, _handles, _bash) = snapshot_registry();
    let cx = AssembleContext::default();
    let baseline = contents(&prompt.assemble(&cx));

    let mut assembly = prompt.assemble(&cx);
    assembly
        .sections
        .get_mut("agent:persona")
        .unwrap()
        .set_text("Changed.");
    assembly
        .sections
        .get_mut("status")
        .unwrap()
        .set_text("Changed too.");
    assembly
        .sections
        .get_mut("tool:bash")
        .unwrap()
        .set_tool(None);
    assembly.sections.remove("status");
    assembly
        .sections
        .insert(AssembledSection::new("extra", 3, "Extra."));
    assert_ne!(contents(&assembly), baseline);

    assert_eq!(contents(&prompt.assemble(&cx)), baseline);

    let mut cleared = prompt.assemble(&cx);
    cleared.sections.to_mut().clear();
    assert_eq!(contents(&prompt.assemble(&cx)), baseline);

    let mut retained = prompt.assemble(&cx);
    retained.sections.retain(|_| false);
    assert_eq!(contents(&prompt.assemble(&cx)), baseline);
}

#[test]
fn mutating_an_assemblys_variables_never_changes_the_next_assembly() {
    let (prompt, _handles, _bash) = snapshot_registry();
    let cx = AssembleContext::default();
    let baseline = contents(&prompt.assemble(&cx));

    let mut assembly = prompt.assemble(&cx);
    assembly.variables.set("model", Some("changed".to_owned()));
    assembly.variables.set("cwd", Some("/changed".to_owned()));
    assembly.variables.set("added", Some("new".to_owned()));
    assert!(assembly.variables.remove("model"));
    assert_eq!(assembly.variables.get("cwd"), Some(Some("/changed")));
    assert_eq!(assembly.variables.get("added"), Some(Some("new")));
    assert_eq!(assembly.variables.get("model"), None);

    let next = prompt.assemble(&cx);
    assert_eq!(contents(&next), baseline);
    assert_eq!(next.variables.get("model"), Some(Some("gpt-5")));
    assert_eq!(next.variables.get("cwd"), Some(None));
    assert_eq!(next.variables.get("added"), None);
}

#[test]
fn mutating_a_tools_parameters_never_changes_the_next_assembly_or_the_providers_schema() {
    let (prompt, _handles, bash) = snapshot_registry();
    let original = ToolSchema::clone(&bash);
    let cx = AssembleContext::default();
    let baseline = contents(&prompt.assemble(&cx));

    let mut assembly = prompt.assemble(&cx);
    assembly.tool_mut("bash").unwrap().parameters["properties"]["timeout"] =
        json!({"type": "integer"});
    assert!(!Arc::ptr_eq(&assembly.tools[0], &bash), "copied on write");
    assert_eq!(
        assembly.tool("bash").unwrap().parameters["properties"]["timeout"],
        json!({"type": "integer"})
    );
    assert_eq!(contents(&prompt.assemble(&cx)), baseline);

    let mut assembly = prompt.assemble(&cx);
    let schema = Arc::make_mut(&mut assembly.tools[0]);
    schema.description = "Changed.".to_owned();
    schema.parameters = json!(null);
    assert_eq!(contents(&prompt.assemble(&cx)), baseline);

    let mut assembly = prompt.assemble(&cx);
    assert!(assembly.remove_tool("bash"));
    assembly.tools.push(tool("read"));
    assert_eq!(contents(&prompt.assemble(&cx)), baseline);

    assert_eq!(*bash, original, "the provider's schema is untouched");
}

#[test]
fn a_waterfall_listeners_mutations_never_accumulate_across_assemblies() {
    let (prompt, _handles, _bash) = snapshot_registry();
    let _listener = support::listener(&prompt, "listener#473", |_, assembly| {
        let persona = assembly.sections.get_mut("agent:persona").unwrap();
        let text = format!("{} Again.", persona.text());
        persona.set_text(text);
        let model = assembly.variables.value("model").unwrap().to_owned();
        assembly.variables.set("model", Some(model + "+"));
        let bash = assembly.tool_mut("bash").unwrap();
        bash.description.push_str(" More.");
    });
    let cx = AssembleContext::default();
    let first = contents(&prompt.assemble(&cx));
    for _ in 0..3 {
        assert_eq!(contents(&prompt.assemble(&cx)), first);
    }
    assert_eq!(
        render_prompt(&prompt.assemble(&cx)).unwrap(),
        "You run gpt-5+. Again.\n\nAll good.\n\nCheck exit codes."
    );
    assert_eq!(first.tools[0].description, "The bash tool. More.");
}

#[test]
fn tools_are_shared_between_assemblies_not_deep_copied() {
    let (prompt, _handles, bash) = snapshot_registry();
    let cx = AssembleContext::default();
    let first = prompt.assemble(&cx);
    let second = prompt.assemble(&cx);
    assert!(Arc::ptr_eq(&first.tools[0], &second.tools[0]));
    assert!(Arc::ptr_eq(&first.tools[0], &bash));

    // Changing one assembly's copy leaves the others sharing.
    let mut changed = prompt.assemble(&cx);
    changed.tool_mut("bash").unwrap().description = "changed".to_owned();
    let third = prompt.assemble(&cx);
    assert!(Arc::ptr_eq(&third.tools[0], &bash));
    assert!(Arc::ptr_eq(&first.tools[0], &bash));
}

#[test]
fn fixed_section_texts_are_shared_between_assemblies_not_copied() {
    // A text known only at run time, so it is shared by reference count
    // rather than being a `&'static str` by construction.
    let runtime_text = format!("A persona built at {} run time.", "this");
    let (prompt, _persona) = registry([PromptSection::new("agent:persona", 0, runtime_text)], &[]);
    let cx = AssembleContext::default();
    let text = |assembly: &PromptAssembly| {
        assembly
            .sections
            .get("agent:persona")
            .unwrap()
            .text()
            .as_ptr()
    };
    let shared = text(&prompt.assemble(&cx));
    assert_eq!(text(&prompt.assemble(&cx)), shared, "only fixed sections");

    // With a provided section beside it, the fixed text is still shared.
    let _status = prompt
        .section(PromptSection::provided("status", 1, |_| {
            "provided".to_owned()
        }))
        .unwrap();
    assert_eq!(
        text(&prompt.assemble(&cx)),
        shared,
        "with a provided section"
    );
    assert_eq!(text(&prompt.assemble(&cx)), shared);
}

// ---------------------------------------------------------------------------
// Tool-bound guidance

fn bound_registry() -> (SystemPrompt, Vec<Registration>) {
    registry(
        [
            PromptSection::new("agent:persona", 0, "Persona."),
            PromptSection::new("tool:read", 100, "Use read, not cat.").bound_to_tool("read"),
            PromptSection::new("tool:bash", 105, "Check the exit code marker.")
                .bound_to_tool("bash"),
        ],
        &[],
    )
}

#[test]
fn a_section_bound_to_a_tool_renders_only_when_that_tool_is_assembled() {
    let (prompt, _handles) = bound_registry();
    assert_eq!(render_default(&prompt).unwrap(), "Persona.");

    let bash_tools = prompt.tools("tools#565", |_| vec![tool("bash")]).unwrap();
    assert_eq!(
        render_default(&prompt).unwrap(),
        "Persona.\n\nCheck the exit code marker."
    );

    let _read_tools = prompt.tools("tools#571", |_| vec![tool("read")]).unwrap();
    assert_eq!(
        render_default(&prompt).unwrap(),
        "Persona.\n\nUse read, not cat.\n\nCheck the exit code marker."
    );

    drop(bash_tools);
    assert_eq!(
        render_default(&prompt).unwrap(),
        "Persona.\n\nUse read, not cat."
    );
}

#[test]
fn a_waterfall_that_removes_a_tool_removes_its_guidance() {
    let (prompt, _handles) = bound_registry();
    let _tools = prompt
        .tools("tools#587", |_| vec![tool("bash"), tool("read")])
        .unwrap();
    let _no_bash = support::listener(&prompt, "listener#589", |cx, assembly| {
        if cx.get::<Caller>().is_some_and(|c| c.0 == "restricted") {
            assert!(assembly.remove_tool("bash"));
        }
    });

    let restricted = prompt.assemble(&AssembleContext::new().with(Caller("restricted")));
    assert_eq!(tool_names(&restricted), ["read"]);
    assert_eq!(
        render_prompt(&restricted).unwrap(),
        "Persona.\n\nUse read, not cat."
    );
    let spans = render_prompt_with_spans(&restricted).unwrap();
    let names: Vec<&str> = spans.sections.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["agent:persona", "tool:read"]);

    assert_eq!(
        render_default(&prompt).unwrap(),
        "Persona.\n\nUse read, not cat.\n\nCheck the exit code marker."
    );
}

#[test]
fn a_waterfall_that_adds_a_tool_brings_its_guidance() {
    let (prompt, _handles) = bound_registry();
    let _add_bash = support::listener(&prompt, "listener#617", |_, assembly| {
        assembly.tools.push(tool("bash"));
    });
    assert_eq!(
        render_default(&prompt).unwrap(),
        "Persona.\n\nCheck the exit code marker."
    );
}

#[test]
fn a_bound_sections_references_are_not_checked_when_its_tool_is_absent() {
    // Guidance that is not rendered cannot make rendering fail.
    let (prompt, _guidance) = registry(
        [PromptSection::new("tool:bash", 105, "Shell: <<shell>>.").bound_to_tool("bash")],
        &[],
    );
    assert_eq!(render_default(&prompt).unwrap(), "");
    let _tools = prompt.tools("tools#636", |_| vec![tool("bash")]).unwrap();
    let err = render_default(&prompt).unwrap_err();
    assert!(
        matches!(&err, RenderError::UnknownVariable { site, .. }
            if site.reference == "shell" && site.section == "tool:bash"),
        "{err:?}"
    );
}

// ---------------------------------------------------------------------------
// Serialization

#[test]
fn an_assembly_serializes_its_sections_variables_and_tools() {
    let (prompt, _handles, _bash) = snapshot_registry();
    let assembly = prompt.assemble(&AssembleContext::default());
    let value = serde_json::to_value(&assembly).unwrap();
    assert_eq!(
        value["sections"][0],
        json!({
            "name": "agent:persona",
            "order": 0,
            "owner": value["sections"][0]["owner"].clone(),
            "tool": null,
            "text": "You run <<model>>.",
        })
    );
    assert_eq!(value["sections"][0]["owner"]["krate"], "runtime");
    assert_eq!(value["sections"][2]["tool"], "bash");
    assert_eq!(value["variables"], json!({"cwd": null, "model": "gpt-5"}));
    assert_eq!(value["tools"][0]["name"], "bash");
    assert_eq!(
        value["tools"][0]["parameters"]["properties"]["command"]["type"],
        "string"
    );
}
