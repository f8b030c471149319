//! What the integration tests of `dsh-system-prompt` share: how they build
//! a registry or an assembly by hand, what they read out of one as plain
//! values to compare, and how they guard against a deadlock.
#![allow(
    dead_code,
    reason = "each test binary that shares this module uses part of it"
)]

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::Duration;

use dsh_system_prompt::{
    AssembleContext, AssembledSection, NameKind, Owner, PromptAssembly, PromptSection,
    Registration, RegistryError, RenderError, RenderErrors, SystemPrompt, Text, ToolSchema,
    render_prompt,
};

/// A typed field a caller adds to the context.
pub(crate) struct Caller(pub(crate) &'static str);

/// A slot through which a callback reaches the registry that calls it;
/// emptied at the end of a test to break the reference cycle.
pub(crate) type Slot<T> = Arc<Mutex<Option<T>>>;

/// One section as plain values: name, order, text, bound tool.
pub(crate) type SectionRow = (String, i32, String, Option<String>);

/// One variable as plain values: name, value.
pub(crate) type VariableRow = (String, Option<String>);

/// `provide`, counting its calls: the count, and the provider that adds
/// one to it before each answer. For a provider that must be called at
/// each assembly, or never while shadowed.
pub(crate) fn counting<T>(
    provide: impl Fn(&AssembleContext) -> T + Send + Sync + 'static,
) -> (
    Arc<AtomicUsize>,
    impl Fn(&AssembleContext) -> T + Send + Sync + 'static,
) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let counted = move |cx: &AssembleContext| {
        counter.fetch_add(1, Ordering::SeqCst);
        provide(cx)
    };
    (calls, counted)
}

/// A tool schema named `name`, with a description and one parameter.
pub(crate) fn tool(name: &str) -> Arc<ToolSchema> {
    Arc::new(ToolSchema::new(
        name,
        format!("The {name} tool."),
        serde_json::json!({"type": "object", "properties": {"command": {"type": "string"}}}),
    ))
}

/// The names of `assembly`'s tools, in order.
pub(crate) fn tool_names(assembly: &PromptAssembly) -> Vec<String> {
    assembly
        .tools
        .iter()
        .map(|tool| tool.name.clone())
        .collect()
}

/// The sections of `assembly`, in render order.
pub(crate) fn section_rows(assembly: &PromptAssembly) -> Vec<SectionRow> {
    assembly
        .sections
        .iter()
        .map(|section| {
            (
                section.name().to_string(),
                section.order(),
                section.text().to_string(),
                section.tool().map(ToString::to_string),
            )
        })
        .collect()
}

/// The names of the sections of `assembly`, in render order.
pub(crate) fn section_names(assembly: &PromptAssembly) -> Vec<String> {
    assembly
        .sections
        .iter()
        .map(|section| section.name().to_string())
        .collect()
}

/// The variables of `assembly`, by name.
pub(crate) fn variable_rows(assembly: &PromptAssembly) -> Vec<VariableRow> {
    assembly
        .variables
        .iter()
        .map(|variable| (variable.name.to_owned(), variable.value.map(str::to_owned)))
        .collect()
}

/// An assembly of the given `(name, text)` sections, in that order, with
/// the given variables. Each section's owner is the caller's line.
#[track_caller]
pub(crate) fn assembly(
    sections: &[(&str, &str)],
    variables: &[(&str, Option<&str>)],
) -> PromptAssembly {
    let mut assembly = PromptAssembly::new();
    for (order, (name, text)) in sections.iter().enumerate() {
        assembly.sections.insert(AssembledSection::new(
            name.to_string(),
            order as i32,
            text.to_string(),
        ));
    }
    for (name, value) in variables {
        assembly
            .variables
            .set(name.to_string(), value.map(str::to_owned));
    }
    assembly
}

/// An empty registry holding the given variables, each with a fixed value
/// (`None`: registered without one), and `sections`. Every contribution's
/// owner is the caller's line; keep the registrations to keep them.
#[track_caller]
pub(crate) fn registry(
    sections: impl IntoIterator<Item = PromptSection>,
    variables: &[(&str, Option<&str>)],
) -> (SystemPrompt, Vec<Registration>) {
    let prompt = SystemPrompt::empty();
    let mut handles = Vec::new();
    // Plain loops, not closures: a closure would not pass the caller's
    // location on to `variable` and `section`.
    for (name, value) in variables {
        let value = value.map(|value| Text::from(value.to_owned()));
        handles.push(
            prompt
                .variable(name.to_string(), move |_| value.clone())
                .unwrap(),
        );
    }
    for section in sections {
        handles.push(prompt.section(section).unwrap());
    }
    (prompt, handles)
}

/// Registers the waterfall listener `name` on `prompt`: `edit`, and the
/// waterfall goes on. Its owner is the caller's line.
#[track_caller]
pub(crate) fn listener(
    prompt: &SystemPrompt,
    name: &str,
    edit: impl Fn(&AssembleContext, &mut PromptAssembly) + Send + Sync + 'static,
) -> Registration {
    prompt
        .on_assemble(name.to_owned(), move |cx, assembly| {
            edit(cx, assembly);
            ControlFlow::Continue(())
        })
        .unwrap()
}

/// The prompt of `prompt` for a caller that adds nothing to the context:
/// assembled with the default context, then rendered; its one problem,
/// for the tests of one problem.
pub(crate) fn render_default(prompt: &SystemPrompt) -> Result<String, RenderError> {
    render_prompt(&prompt.assemble(&AssembleContext::default())).map_err(only)
}

/// The one problem of a failed render; fails the test if there are more.
pub(crate) fn only(errors: RenderErrors) -> RenderError {
    assert_eq!(errors.len(), 1, "expected one problem, got:\n{errors}");
    errors.first().clone()
}

/// The name and the first owner that `err` reports, which must be a
/// [`RegistryError::Duplicate`] of `kind`; fails the test otherwise.
#[track_caller]
pub(crate) fn duplicate(err: &RegistryError, kind: NameKind) -> (&str, &Owner) {
    match err {
        RegistryError::Duplicate {
            kind: found,
            name,
            existing,
            ..
        } if *found == kind => (name, existing),
        _ => panic!("expected a duplicate {kind:?}, got {err:?}"),
    }
}

/// Asserts that `message` contains every one of `needles`.
#[track_caller]
pub(crate) fn assert_mentions(message: &str, needles: &[&str]) {
    for needle in needles {
        assert!(
            message.contains(needle),
            "{needle:?} missing from {message}"
        );
    }
}

/// Long enough for a loaded two-core machine; a deadlocked run never ends.
const DEADLINE: Duration = Duration::from_secs(120);

/// Runs `work` on its own thread and waits for it at most [`DEADLINE`], so
/// a deadlock fails the test instead of stalling the run; a panic inside
/// `work` is re-raised here.
pub(crate) fn within_deadline<T: Send + 'static>(
    what: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (done, finished) = mpsc::channel();
    let worker = thread::spawn(move || {
        let _ = done.send(work());
    });
    match finished.recv_timeout(DEADLINE) {
        Ok(value) => {
            worker.join().expect("the worker sent its result");
            value
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the worker either sends or panics"),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what} did not finish within {DEADLINE:?}: deadlock")
        }
    }
}
