//! Concurrency: one registry shared by threads that assemble, render,
//! register and unregister at once.
//!
//! Every test that could hang runs under [`support::within_deadline`]: a
//! deadlock fails the test instead of stalling the run. The deadline is
//! generous and says nothing about speed.

use crate::support;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;

use dsh_system_prompt::NameKind;
use dsh_system_prompt::inspect::render_prompt_with_spans;
use dsh_system_prompt::{
    AssembleContext, ChangeAction, PromptAssembly, PromptSection, Registration, RegistryError,
    RenderError, SystemPrompt, ToolSchema, render_prompt,
};
use support::{Slot, within_deadline};

const fn assert_send_sync_clone<T: Send + Sync + Clone + 'static>() {}
const fn assert_send_sync<T: Send + Sync + 'static>() {}

// Checked when the test crate compiles.
const _: () = {
    assert_send_sync_clone::<SystemPrompt>();
    assert_send_sync_clone::<PromptAssembly>();
    assert_send_sync_clone::<AssembleContext>();
    assert_send_sync_clone::<RenderError>();
    assert_send_sync::<Registration>();
    assert_send_sync::<RegistryError>();
};

#[test]
fn system_prompt_is_send_sync_and_clone() {
    assert_send_sync_clone::<SystemPrompt>();
    fn boxed_error<E: std::error::Error + Send + Sync + 'static>() {}
    boxed_error::<RegistryError>();
    boxed_error::<RenderError>();
}

// ---------------------------------------------------------------------------
// The stress test

/// Pairs each variable writer keeps alive at once (one more while it swaps).
const WINDOW: usize = 3;
/// Registrations per writer.
const ITERATIONS: usize = 2_000;
/// Writers keep going until readers have assembled this often, so readers
/// and writers are known to overlap.
const MIN_READS: usize = 500;
const VARIABLE_WRITERS: usize = 2;
const READERS: usize = 2;

/// Whether a writer goes on with registration `k`: at least ITERATIONS, and
/// on until readers have read enough — bounded, so that a reader that
/// panicked fails the test instead of stalling it.
fn keep_writing(k: usize, reads: &AtomicUsize) -> bool {
    k < ITERATIONS || (reads.load(Ordering::Relaxed) < MIN_READS && k < 50 * ITERATIONS)
}

/// The variable a writer's pair `k` registers, and the section that
/// references it.
fn pair_names(writer: usize, k: usize) -> (String, String) {
    (format!("w{writer}_{k}"), format!("w{writer}:{k:05}"))
}

fn value_of(variable: &str) -> String {
    format!("value of {variable}")
}

/// Registers variable-then-section pairs and drops them section-then-
/// variable, so in every registry state each section's variable exists.
/// Returns how many registrations succeeded.
fn variable_writer(prompt: &SystemPrompt, writer: usize, reads: &AtomicUsize) -> usize {
    let mut live: VecDeque<(Registration, Registration)> = VecDeque::new();
    let mut registered = 0;
    let mut k = 0;
    while keep_writing(k, reads) {
        let (variable, section) = pair_names(writer, k);
        let value = value_of(&variable);
        let variable_handle = prompt
            .variable(variable.clone(), move |_| Some(value.clone().into()))
            .unwrap();
        let text = format!("<<{variable}>>");
        // Orders repeat across pairs and go negative, so sorting by name
        // inside one order matters.
        let order = (k % 7) as i32 - 3;
        let section_to_register = if k % 2 == 0 {
            PromptSection::new(section.clone(), order, text)
        } else {
            PromptSection::provided(section.clone(), order, move |_| text.clone())
        };
        let section_handle = prompt.section(section_to_register).unwrap();
        registered += 2;

        // While both are live, the names are taken: the check and the
        // publication of a registration are one step.
        assert!(matches!(
            prompt.section(PromptSection::new(section.clone(), 0, "dup")),
            Err(RegistryError::Duplicate {
                kind: NameKind::Section,
                ..
            })
        ));
        assert!(matches!(
            prompt.variable(variable.clone(), |_| None),
            Err(RegistryError::Duplicate {
                kind: NameKind::Variable,
                ..
            })
        ));

        live.push_back((section_handle, variable_handle));
        if live.len() > WINDOW {
            let (section_handle, variable_handle) = live.pop_front().unwrap();
            drop(section_handle);
            drop(variable_handle);
        }
        k += 1;
    }
    while let Some((section_handle, variable_handle)) = live.pop_front() {
        drop(section_handle);
        drop(variable_handle);
    }
    registered
}

/// Registers a tool provider and the guidance bound to it, and drops them
/// in either order; also registers and drops a waterfall listener that adds
/// a section and the variable it references in one step. Returns how many
/// registrations succeeded.
fn tool_writer(prompt: &SystemPrompt, reads: &AtomicUsize) -> usize {
    let mut registered = 0;
    let mut k = 0;
    while keep_writing(k, reads) {
        let tool_name = format!("tool_{k}");
        let schema = Arc::new(ToolSchema::new(
            tool_name.clone(),
            "A tool.",
            serde_json::json!({"type": "object"}),
        ));
        let tools = prompt
            .tools("tools#138", move |_| vec![Arc::clone(&schema)])
            .unwrap();
        let guidance = prompt
            .section(
                PromptSection::new(
                    format!("guide:{k:05}"),
                    150,
                    format!("guidance for {tool_name}"),
                )
                .bound_to_tool(tool_name),
            )
            .unwrap();
        let waterfall = support::listener(prompt, "listener#150", move |_, assembly| {
            assembly.variables.set("wf", Some(format!("waterfall {k}")));
            assembly
                .sections
                .insert(dsh_system_prompt::AssembledSection::new(
                    "wf", -100, "<<wf>>",
                ));
        });
        registered += 3;
        if k % 2 == 0 {
            drop(tools);
            drop(guidance);
        } else {
            drop(guidance);
            drop(tools);
        }
        drop(waterfall);
        k += 1;
    }
    registered
}

/// Assembles and renders until `done`, checking each assembly on its own.
/// Returns how many assemblies held a writer's section.
fn reader(prompt: &SystemPrompt, reads: &AtomicUsize, done: &AtomicBool) -> usize {
    let cx = AssembleContext::default();
    let mut saw_writers = 0;
    while !done.load(Ordering::Acquire) {
        let assembly = prompt.assemble(&cx);
        check_consistent(&assembly);
        if assembly
            .sections
            .iter()
            .any(|s| s.name().starts_with('w') && s.name() != "wf")
        {
            saw_writers += 1;
        }
        reads.fetch_add(1, Ordering::Relaxed);
    }
    saw_writers
}

/// What must hold of every assembly, whatever registers concurrently.
fn check_consistent(assembly: &PromptAssembly) {
    // Sections are in strictly ascending (order, name).
    let keys: Vec<(i32, &str)> = assembly
        .sections
        .iter()
        .map(|s| (s.order(), s.name().as_str()))
        .collect();
    assert!(
        keys.windows(2).all(|pair| pair[0] < pair[1]),
        "sections out of order: {keys:?}"
    );

    // Every writer section's variable is there: a variable is registered
    // before its section and dropped after it.
    let rendered = match render_prompt_with_spans(assembly) {
        Ok(rendered) => rendered,
        Err(err) => panic!("a torn assembly failed to render: {err}\n{assembly:?}"),
    };
    for span in &rendered.sections {
        let text = &rendered.text[span.range.clone()];
        let name = span.name.as_str();
        if let Some(rest) = name.strip_prefix('w').filter(|_| name != "wf") {
            let (writer, k) = rest.split_once(':').unwrap();
            let variable = format!("w{writer}_{}", k.parse::<usize>().unwrap());
            assert_eq!(text, value_of(&variable), "section {name}");
            assert_eq!(
                assembly.variables.value(&variable),
                Some(value_of(&variable).as_str())
            );
        } else if let Some(k) = name.strip_prefix("guide:") {
            let tool = format!("tool_{}", k.parse::<usize>().unwrap());
            assert!(assembly.has_tool(&tool), "{name} rendered without {tool}");
            assert_eq!(text, format!("guidance for {tool}"));
        } else if name == "wf" {
            assert!(text.starts_with("waterfall "), "{text}");
        } else {
            panic!("unexpected section {name}");
        }
    }
    // A writer keeps at most WINDOW + 1 pairs alive.
    for writer in 0..VARIABLE_WRITERS {
        let prefix = format!("w{writer}:");
        let live = assembly
            .sections
            .iter()
            .filter(|s| s.name().starts_with(&prefix))
            .count();
        assert!(live <= WINDOW + 1, "writer {writer} has {live} sections");
    }
    // The prompt from render_prompt is the same text.
    assert_eq!(render_prompt(assembly).unwrap(), rendered.text);
}

#[test]
fn assemblies_stay_consistent_while_other_threads_register_and_drop() {
    within_deadline("the stress test", || {
        let prompt = SystemPrompt::empty();
        let events = Arc::new((AtomicUsize::new(0), AtomicUsize::new(0)));
        let _counter = {
            let events = Arc::clone(&events);
            prompt
                .on_change(move |event| {
                    match event.action {
                        ChangeAction::Registered => events.0.fetch_add(1, Ordering::SeqCst),
                        ChangeAction::Unregistered => events.1.fetch_add(1, Ordering::SeqCst),
                    };
                    Ok(())
                })
                .unwrap()
        };
        let reads = AtomicUsize::new(0);
        let done = AtomicBool::new(false);

        let (registered, saw_writers) = thread::scope(|scope| {
            let readers: Vec<_> = (0..READERS)
                .map(|_| scope.spawn(|| reader(&prompt, &reads, &done)))
                .collect();
            let mut writers: Vec<_> = (0..VARIABLE_WRITERS)
                .map(|writer| {
                    let (prompt, reads) = (&prompt, &reads);
                    scope.spawn(move || variable_writer(prompt, writer, reads))
                })
                .collect();
            writers.push(scope.spawn(|| tool_writer(&prompt, &reads)));

            let registered: usize = writers.into_iter().map(|w| w.join().unwrap()).sum();
            done.store(true, Ordering::Release);
            let saw_writers: usize = readers.into_iter().map(|r| r.join().unwrap()).sum();
            (registered, saw_writers)
        });

        assert!(
            saw_writers > 0,
            "no reader ever saw a writer's section, so nothing overlapped"
        );
        // Every successful registration and every drop told the listener,
        // none twice and none lost.
        assert_eq!(events.0.load(Ordering::SeqCst), registered);
        assert_eq!(events.1.load(Ordering::SeqCst), registered);
        // Everything the writers registered is gone again.
        let after = prompt.assemble(&AssembleContext::default());
        assert!(after.sections.is_empty(), "{:?}", after.sections);
        assert!(after.variables.is_empty());
        assert!(after.tools.is_empty());
    });
}

#[test]
fn of_threads_racing_to_register_one_name_exactly_one_wins() {
    within_deadline("the registration race", || {
        const THREADS: usize = 4;
        let prompt = SystemPrompt::empty();
        for round in 0..200 {
            let barrier = Barrier::new(THREADS);
            let results: Vec<(
                Result<Registration, RegistryError>,
                Result<Registration, RegistryError>,
            )> = thread::scope(|scope| {
                let racers: Vec<_> = (0..THREADS)
                    .map(|thread| {
                        let (prompt, barrier) = (&prompt, &barrier);
                        scope.spawn(move || {
                            barrier.wait();
                            let section = prompt.section(PromptSection::new(
                                "contested",
                                0,
                                format!("thread {thread}"),
                            ));
                            let variable = prompt
                                .variable("contested", move |_| Some(thread.to_string().into()));
                            (section, variable)
                        })
                    })
                    .collect();
                racers.into_iter().map(|r| r.join().unwrap()).collect()
            });
            let section_wins = results.iter().filter(|(s, _)| s.is_ok()).count();
            let variable_wins = results.iter().filter(|(_, v)| v.is_ok()).count();
            assert_eq!(section_wins, 1, "round {round}");
            assert_eq!(variable_wins, 1, "round {round}");
            for (section, variable) in &results {
                if let Err(err) = section {
                    support::duplicate(err, NameKind::Section);
                }
                if let Err(err) = variable {
                    support::duplicate(err, NameKind::Variable);
                }
            }
            let assembly = prompt.assemble(&AssembleContext::default());
            assert_eq!(assembly.sections.len(), 1);
            assert_eq!(assembly.variables.len(), 1);
            drop(results);
            assert!(
                prompt
                    .assemble(&AssembleContext::default())
                    .sections
                    .is_empty()
            );
        }
    });
}

#[test]
fn a_registration_dropped_on_another_thread_unregisters() {
    within_deadline("dropping on another thread", || {
        let prompt = SystemPrompt::empty();
        let handle = prompt
            .section(PromptSection::new("moved", 0, "moved"))
            .unwrap();
        thread::spawn(move || drop(handle)).join().unwrap();
        assert!(prompt.section_names().is_empty());
    });
}

#[test]
fn an_assembly_is_not_changed_by_registrations_made_after_it() {
    let prompt = SystemPrompt::empty();
    let _a = prompt.section(PromptSection::new("a", 0, "A")).unwrap();
    let assembly = prompt.assemble(&AssembleContext::default());
    let b = prompt.section(PromptSection::new("b", 1, "B")).unwrap();
    assert_eq!(render_prompt(&assembly).unwrap(), "A");
    drop(b);
    assert_eq!(render_prompt(&assembly).unwrap(), "A");
}

// ---------------------------------------------------------------------------
// Callbacks that call back into the registry

#[test]
fn a_change_listener_that_assembles_does_not_deadlock() {
    within_deadline("assembling inside a change listener", || {
        let prompt = SystemPrompt::empty();
        let registry: Slot<SystemPrompt> = Arc::new(Mutex::new(Some(prompt.clone())));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let _listener = {
            let (registry, seen) = (Arc::clone(&registry), Arc::clone(&seen));
            prompt
                .on_change(move |_| {
                    let Some(prompt) = registry.lock().unwrap().clone() else {
                        return Ok(());
                    };
                    let rendered = render_prompt(&prompt.assemble(&AssembleContext::default()))?;
                    seen.lock().unwrap().push(rendered);
                    Ok(())
                })
                .unwrap()
        };
        let a = prompt.section(PromptSection::new("a", 0, "A")).unwrap();
        let _b = prompt.section(PromptSection::new("b", 1, "B")).unwrap();
        drop(a);
        // A registration is published after its listeners accept it; an
        // unregistration before they hear of it.
        assert_eq!(*seen.lock().unwrap(), ["", "A", "B"]);
        registry.lock().unwrap().take();
    });
}

#[test]
fn an_assemble_listener_that_registers_does_not_deadlock_and_changes_only_later_assemblies() {
    within_deadline("registering inside an assemble listener", || {
        let prompt = SystemPrompt::empty();
        let registry: Slot<SystemPrompt> = Arc::new(Mutex::new(Some(prompt.clone())));
        let registered: Slot<Registration> = Arc::new(Mutex::new(None));
        let once = Arc::new(AtomicBool::new(false));
        let _listener = {
            let (registry, registered) = (Arc::clone(&registry), Arc::clone(&registered));
            support::listener(&prompt, "listener#428", move |_, _| {
                let mut registered = registered.lock().unwrap();
                if !once.swap(true, Ordering::SeqCst)
                    && let Some(prompt) = registry.lock().unwrap().clone()
                {
                    *registered = Some(
                        prompt
                            .section(PromptSection::new("late", 0, "Late."))
                            .unwrap(),
                    );
                }
            })
        };
        let first = prompt.assemble(&AssembleContext::default());
        assert!(
            first.sections.is_empty(),
            "the running assembly keeps its snapshot"
        );
        let second = prompt.assemble(&AssembleContext::default());
        assert_eq!(render_prompt(&second).unwrap(), "Late.");

        // Dropping inside a provider does not deadlock either.
        let doomed: Slot<Registration> = Arc::new(Mutex::new(registered.lock().unwrap().take()));
        let _dropper = {
            let doomed = Arc::clone(&doomed);
            prompt
                .tools("tools#456", move |_| {
                    drop(doomed.lock().unwrap().take());
                    Vec::new()
                })
                .unwrap()
        };
        prompt.assemble(&AssembleContext::default());
        assert!(prompt.section_names().is_empty());
        registry.lock().unwrap().take();
    });
}
