//! `SystemPrompt`: the registry every contributor registers into.

use std::cell::RefCell;
use std::fmt;
use std::ops::ControlFlow;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use arc_swap::ArcSwap;
use dsh_prompt_template::{Template, is_section_name, is_variable_name};
use parking_lot::Mutex;

use crate::assembly::Compiled;
use crate::assembly::VariableLayout;
use crate::render::plan::RenderPlan;
use crate::section::{SectionText, TextProvider};
use crate::{
    AssembleContext, AssembledSection, BoxError, Extensions, Owner, PromptAssembly, PromptSection,
    RegistryError, Sections, Text, ToolSchema, Variables,
};

type VariableProvider = Arc<dyn Fn(&AssembleContext) -> Option<String> + Send + Sync>;
type ToolProvider = Arc<dyn Fn(&AssembleContext) -> Vec<Arc<ToolSchema>> + Send + Sync>;
type AssembleListener =
    Arc<dyn Fn(&AssembleContext, &mut PromptAssembly) -> ControlFlow<()> + Send + Sync>;
type ChangeListener = Arc<dyn Fn(&ChangeEvent) -> Result<(), BoxError> + Send + Sync>;

/// The system-prompt registry: sections, variables, tool providers and
/// listeners, shared by every agent of a process.
///
/// `SystemPrompt` is `Send + Sync` and cheap to clone (clones share one
/// registry). Reads never wait for writes: an assembly works on one
/// consistent snapshot of the registry, whatever registers concurrently.
///
/// Every registration returns a [`Registration`]; dropping it unregisters
/// exactly that contribution.
///
/// ```
/// use dsh_system_prompt::{AssembleContext, PromptSection, SystemPrompt, render_prompt};
///
/// let prompt = SystemPrompt::empty();
/// let cwd = prompt.variable("cwd", |_| Some("/work".to_owned()))?;
/// let section = prompt.section(PromptSection::new("workspace", 10, "You work in <<cwd>>."))?;
/// assert_eq!(render_prompt(&prompt.assemble(&AssembleContext::default()))?, "You work in /work.");
///
/// drop(section);
/// assert_eq!(render_prompt(&prompt.assemble(&AssembleContext::default()))?, "");
/// # drop(cwd);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct SystemPrompt {
    inner: Arc<Inner>,
}

struct Inner {
    state: ArcSwap<State>,
    /// Serializes writers; readers never take it.
    write: Mutex<()>,
    next_id: AtomicU64,
    /// Unregistrations requested from inside a change listener, applied
    /// once that listener's notification is over.
    /// Each entry names the thread that deferred it: only that thread
    /// applies it, right after its own notification, so a drop is never
    /// applied late by another thread.
    deferred: Mutex<Vec<(std::thread::ThreadId, Id)>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Id(u64);

/// One consistent registry state. Replaced whole on every change, so an
/// assembly never sees half of a registration.
#[derive(Clone, Default)]
struct State {
    /// Sorted by `(order, name)`.
    sections: Vec<SectionEntry>,
    /// Sorted by name.
    variables: Vec<VariableEntry>,
    tools: Vec<(Id, ToolProvider)>,
    assemble_listeners: Vec<(Id, AssembleListener)>,
    change_listeners: Vec<(Id, ChangeListener)>,
    /// Derived: the sections as an assembly holds them, shared by every
    /// assembly until one changes them.
    assembled: Arc<Vec<AssembledSection>>,
    /// Derived: which entries of `assembled` need their text provided.
    provided: Vec<(usize, TextProvider)>,
    /// Derived: the variable names and owners, shared by every assembly.
    layout: Arc<VariableLayout>,
    /// Derived, at the first assembly: `assembled` compiled for rendering.
    plan: OnceLock<Compiled>,
}

#[derive(Clone)]
struct SectionEntry {
    id: Id,
    section: AssembledSection,
    provider: Option<TextProvider>,
}

#[derive(Clone)]
struct VariableEntry {
    id: Id,
    name: Text,
    owner: Option<Owner>,
    provider: VariableProvider,
}

impl State {
    /// Recomputes the derived fields after a change.
    fn derive(&mut self) {
        self.sections.sort_by(|a, b| {
            (a.section.order(), a.section.name()).cmp(&(b.section.order(), b.section.name()))
        });
        self.variables.sort_by(|a, b| a.name.cmp(&b.name));
        self.assembled = Arc::new(
            self.sections
                .iter()
                .map(|entry| entry.section.clone())
                .collect(),
        );
        self.provided = self
            .sections
            .iter()
            .enumerate()
            .filter_map(|(at, entry)| Some((at, entry.provider.clone()?)))
            .collect();
        self.plan = OnceLock::new();
        self.layout = Arc::new(VariableLayout::new(
            self.variables
                .iter()
                .map(|entry| (entry.name.clone(), entry.owner.clone())),
        ));
    }

    fn remove(&mut self, id: Id) -> Option<Contribution> {
        if let Some(at) = self.sections.iter().position(|entry| entry.id == id) {
            let entry = self.sections.remove(at);
            return Some(Contribution::Section {
                name: entry.section.name().to_string(),
            });
        }
        if let Some(at) = self.variables.iter().position(|entry| entry.id == id) {
            let entry = self.variables.remove(at);
            return Some(Contribution::Variable {
                name: entry.name.to_string(),
            });
        }
        if let Some(at) = self.tools.iter().position(|(entry, _)| *entry == id) {
            self.tools.remove(at);
            return Some(Contribution::Tools);
        }
        if let Some(at) = self
            .assemble_listeners
            .iter()
            .position(|(entry, _)| *entry == id)
        {
            self.assemble_listeners.remove(at);
            return Some(Contribution::AssembleListener);
        }
        if let Some(at) = self
            .change_listeners
            .iter()
            .position(|(entry, _)| *entry == id)
        {
            self.change_listeners.remove(at);
            return Some(Contribution::ChangeListener);
        }
        None
    }

    fn check_section(&self, section: &PromptSection) -> Result<(), RegistryError> {
        if !is_section_name(&section.name) {
            return Err(RegistryError::InvalidSectionName {
                name: section.name.to_string(),
            });
        }
        match self
            .sections
            .iter()
            .find(|entry| *entry.section.name() == section.name)
        {
            Some(existing) => Err(RegistryError::DuplicateSection {
                name: section.name.to_string(),
                existing: existing.section.owner().clone(),
            }),
            None => Ok(()),
        }
    }

    fn check_variable(&self, name: &str) -> Result<(), RegistryError> {
        if !is_variable_name(name) {
            return Err(RegistryError::InvalidVariableName {
                name: name.to_owned(),
            });
        }
        match self.variables.iter().find(|entry| entry.name == name) {
            Some(existing) => Err(RegistryError::DuplicateVariable {
                name: name.to_owned(),
                existing: existing.owner.clone(),
            }),
            None => Ok(()),
        }
    }
}

/// Turns a section to register into its entry, parsing fixed text once.
fn section_entry(
    id: Id,
    section: PromptSection,
    owner: Owner,
) -> Result<SectionEntry, RegistryError> {
    let PromptSection {
        name,
        order,
        text,
        tool,
        ..
    } = section;
    let (text, template, provider) = match text {
        SectionText::Fixed(text) => {
            let template = Template::parse(&text).map_err(|errors| RegistryError::Template {
                section: name.to_string(),
                owner: owner.clone(),
                errors,
            })?;
            (text, Some(Arc::new(template)), None)
        }
        SectionText::Provided(provider) => (Text::default(), None, Some(provider)),
    };
    let section = AssembledSection::from_parts(name, order, owner, tool, text, template);
    Ok(SectionEntry {
        id,
        section,
        provider,
    })
}

/// Every provider's tools, in registration order. The first provider's
/// `Vec` is kept as it is: collecting through `flat_map` would allocate a
/// new vector and grow it step by step, on every assembly.
fn collect_tools(providers: &[(Id, ToolProvider)], cx: &AssembleContext) -> Vec<Arc<ToolSchema>> {
    let mut providers = providers.iter();
    let Some((_, first)) = providers.next() else {
        return Vec::new();
    };
    let mut tools = first(cx);
    for (_, provider) in providers {
        tools.extend(provider(cx));
    }
    tools
}

/// What a change event is about.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Contribution {
    /// A section.
    Section {
        /// Its name.
        name: String,
    },
    /// A variable.
    Variable {
        /// Its name.
        name: String,
    },
    /// A tool provider.
    Tools,
    /// A waterfall listener.
    AssembleListener,
    /// A change listener.
    ChangeListener,
}

impl fmt::Display for Contribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Section { name } => write!(f, "section `{name}`"),
            Self::Variable { name } => write!(f, "variable `{name}`"),
            Self::Tools => f.write_str("a tool provider"),
            Self::AssembleListener => f.write_str("an assemble listener"),
            Self::ChangeListener => f.write_str("a change listener"),
        }
    }
}

/// Whether a contribution arrived or left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeAction {
    /// It was registered.
    Registered,
    /// It was unregistered.
    Unregistered,
}

/// A change of the registry, as change listeners see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeEvent {
    /// Registered or unregistered.
    pub action: ChangeAction,
    /// What changed.
    pub contribution: Contribution,
}

/// Keeps one contribution registered; dropping it unregisters exactly that
/// contribution (and emits a change event).
#[must_use = "dropping a Registration unregisters its contribution at once"]
pub struct Registration {
    registry: Weak<Inner>,
    id: Id,
}

impl Registration {
    /// Keeps the contribution for the registry's whole life.
    pub fn keep(self) {
        std::mem::forget(self);
    }
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("id", &self.id.0)
            .finish()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(inner) = self.registry.upgrade() {
            SystemPrompt { inner }.unregister(self.id);
        }
    }
}

thread_local! {
    /// The registries whose change listeners this thread is running.
    static NOTIFYING: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

impl SystemPrompt {
    /// A registry with every static contribution (`#[prompt_section]`,
    /// `#[prompt_variable]`) of the linked crates installed.
    ///
    /// Fails when two crates declare the same section or variable name (the
    /// error names both declarations), or when a static text is malformed.
    pub fn new() -> Result<Self, RegistryError> {
        let prompt = Self::empty();
        prompt.install_static(crate::statics::sections(), crate::statics::variables())?;
        Ok(prompt)
    }

    /// A registry with nothing in it, not even the static contributions.
    pub fn empty() -> Self {
        Self {
            inner: Arc::new(Inner {
                state: ArcSwap::from_pointee(State::default()),
                write: Mutex::new(()),
                next_id: AtomicU64::new(0),
                deferred: Mutex::new(Vec::new()),
            }),
        }
    }

    fn next_id(&self) -> Id {
        Id(self.inner.next_id.fetch_add(1, Ordering::Relaxed))
    }

    fn handle(&self, id: Id) -> Registration {
        Registration {
            registry: Arc::downgrade(&self.inner),
            id,
        }
    }

    fn key(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    /// Registers a section. Fails, leaving the registry unchanged, when the
    /// name is invalid or taken, when fixed text is malformed, or when a
    /// change listener refuses it.
    #[track_caller]
    pub fn section(&self, section: PromptSection) -> Result<Registration, RegistryError> {
        // `Location::caller()` must be read here: inside a closure it would
        // name this file, not the caller, since closures do not inherit
        // `#[track_caller]`.
        let location = Location::caller();
        let owner = section
            .owner
            .clone()
            .unwrap_or_else(|| Owner::at(location, section.name.clone()));
        let id = self.next_id();
        let contribution = Contribution::Section {
            name: section.name.to_string(),
        };
        self.register(contribution, |state| {
            state.check_section(&section)?;
            state.sections.push(section_entry(id, section, owner)?);
            Ok(())
        })?;
        Ok(self.handle(id))
    }

    /// Registers a variable, referenced from section text as `<<name>>`.
    /// The provider is asked at each assembly; `None` means "no value for
    /// this assembly", and rendering a reference to it is then an error.
    #[track_caller]
    pub fn variable(
        &self,
        name: impl Into<Text>,
        provider: impl Fn(&AssembleContext) -> Option<String> + Send + Sync + 'static,
    ) -> Result<Registration, RegistryError> {
        let name = name.into();
        let owner = Owner::at(Location::caller(), name.clone());
        self.variable_owned_by(name, owner, provider)
    }

    /// Registers a variable with its owner named.
    pub fn variable_owned_by(
        &self,
        name: impl Into<Text>,
        owner: Owner,
        provider: impl Fn(&AssembleContext) -> Option<String> + Send + Sync + 'static,
    ) -> Result<Registration, RegistryError> {
        let name = name.into();
        let id = self.next_id();
        let provider: VariableProvider = Arc::new(provider);
        let contribution = Contribution::Variable {
            name: name.to_string(),
        };
        self.register(contribution, |state| {
            state.check_variable(&name)?;
            state.variables.push(VariableEntry {
                id,
                name,
                owner: Some(owner),
                provider,
            });
            Ok(())
        })?;
        Ok(self.handle(id))
    }

    /// Registers a tool provider, asked for its tools at each assembly.
    pub fn tools(
        &self,
        provider: impl Fn(&AssembleContext) -> Vec<Arc<ToolSchema>> + Send + Sync + 'static,
    ) -> Result<Registration, RegistryError> {
        let id = self.next_id();
        let provider: ToolProvider = Arc::new(provider);
        self.register(Contribution::Tools, |state| {
            state.tools.push((id, provider));
            Ok(())
        })?;
        Ok(self.handle(id))
    }

    /// Registers a waterfall listener. At each assembly, listeners run in
    /// registration order, each with the caller's context and the assembly
    /// as earlier listeners left it; each may change, extend or replace it,
    /// and `ControlFlow::Break` skips the listeners after it.
    pub fn on_assemble(
        &self,
        listener: impl Fn(&AssembleContext, &mut PromptAssembly) -> ControlFlow<()>
        + Send
        + Sync
        + 'static,
    ) -> Result<Registration, RegistryError> {
        let id = self.next_id();
        let listener: AssembleListener = Arc::new(listener);
        self.register(Contribution::AssembleListener, |state| {
            state.assemble_listeners.push((id, listener));
            Ok(())
        })?;
        Ok(self.handle(id))
    }

    /// Registers a change listener, told of every later registration and
    /// unregistration. A listener that returns an error rolls the
    /// registration back, and the caller gets
    /// [`RegistryError::ChangeListener`]; the listeners that had already
    /// accepted it are told it is unregistered again. An unregistration
    /// cannot be refused, so errors then are ignored.
    ///
    /// A change listener may assemble, but must not register into the
    /// registry that notifies it (that fails with
    /// [`RegistryError::Reentrant`]); handles dropped inside it unregister
    /// once the notification is over.
    pub fn on_change(
        &self,
        listener: impl Fn(&ChangeEvent) -> Result<(), BoxError> + Send + Sync + 'static,
    ) -> Result<Registration, RegistryError> {
        let id = self.next_id();
        let listener: ChangeListener = Arc::new(listener);
        self.register(Contribution::ChangeListener, |state| {
            state.change_listeners.push((id, listener));
            Ok(())
        })?;
        Ok(self.handle(id))
    }

    /// Applies `change` to a copy of the state, lets the change listeners
    /// veto it, then publishes it: a refused change is never visible.
    fn register(
        &self,
        contribution: Contribution,
        change: impl FnOnce(&mut State) -> Result<(), RegistryError>,
    ) -> Result<(), RegistryError> {
        if self.is_notifying() {
            return Err(RegistryError::Reentrant {
                contribution: contribution.to_string(),
            });
        }
        let result = {
            let _writer = self.inner.write.lock();
            let current = self.inner.state.load_full();
            let mut next = State::clone(&current);
            change(&mut next)?;
            next.derive();
            let event = ChangeEvent {
                action: ChangeAction::Registered,
                contribution,
            };
            let result = self.notify(&current.change_listeners, &event);
            if result.is_ok() {
                self.inner.state.store(Arc::new(next));
            }
            result.map_err(|source| RegistryError::ChangeListener {
                contribution: event.contribution.to_string(),
                source,
            })
        };
        self.apply_deferred();
        result
    }

    fn unregister(&self, id: Id) {
        if self.is_notifying() {
            let thread = std::thread::current().id();
            self.inner.deferred.lock().push((thread, id));
            return;
        }
        {
            let _writer = self.inner.write.lock();
            let mut next = State::clone(&self.inner.state.load_full());
            let Some(contribution) = next.remove(id) else {
                return;
            };
            next.derive();
            let event = ChangeEvent {
                action: ChangeAction::Unregistered,
                contribution,
            };
            let listeners = next.change_listeners.clone();
            self.inner.state.store(Arc::new(next));
            // An unregistration cannot be refused: a listener's error has
            // nowhere to go, and the contribution is already gone.
            let _ = self.notify(&listeners, &event);
        }
        self.apply_deferred();
    }

    fn apply_deferred(&self) {
        let thread = std::thread::current().id();
        let deferred: Vec<Id> = {
            let mut deferred = self.inner.deferred.lock();
            let mine = deferred
                .iter()
                .filter(|(by, _)| *by == thread)
                .map(|(_, id)| *id)
                .collect();
            deferred.retain(|(by, _)| *by != thread);
            mine
        };
        for id in deferred {
            self.unregister(id);
        }
    }

    fn is_notifying(&self) -> bool {
        let key = self.key();
        NOTIFYING.with(|notifying| notifying.borrow().contains(&key))
    }

    fn notify(
        &self,
        listeners: &[(Id, ChangeListener)],
        event: &ChangeEvent,
    ) -> Result<(), BoxError> {
        if listeners.is_empty() {
            return Ok(());
        }
        struct Notifying(usize);
        impl Drop for Notifying {
            fn drop(&mut self) {
                NOTIFYING.with(|notifying| {
                    let mut notifying = notifying.borrow_mut();
                    if let Some(at) = notifying.iter().rposition(|key| *key == self.0) {
                        notifying.remove(at);
                    }
                });
            }
        }
        let key = self.key();
        NOTIFYING.with(|notifying| notifying.borrow_mut().push(key));
        let _notifying = Notifying(key);
        for (at, (_, listener)) in listeners.iter().enumerate() {
            if let Err(error) = listener(event) {
                // The listeners before this one accepted a change that will
                // now never happen: tell them it is undone, so a listener
                // that mirrors the registry never keeps a phantom entry.
                if event.action == ChangeAction::Registered {
                    let undo = ChangeEvent {
                        action: ChangeAction::Unregistered,
                        contribution: event.contribution.clone(),
                    };
                    for (_, earlier) in &listeners[..at] {
                        let _ = earlier(&undo);
                    }
                }
                return Err(error);
            }
        }
        Ok(())
    }

    /// Installs static contributions in one change, checking that names are
    /// unique across crates.
    pub(crate) fn install_static(
        &self,
        sections: Vec<crate::statics::StaticSectionEntry>,
        variables: Vec<crate::statics::StaticVariableEntry>,
    ) -> Result<(), RegistryError> {
        crate::statics::check_unique("section", sections.iter().map(|s| (&s.name, &s.owner)))?;
        crate::statics::check_unique("variable", variables.iter().map(|v| (v.name, &v.owner)))?;
        let _writer = self.inner.write.lock();
        let current = self.inner.state.load_full();
        let mut next = State::clone(&current);
        // The statics are already known to be distinct among themselves:
        // check each only against what was registered before, so installing
        // n statics stays O(n log n), not O(n²).
        for section in sections {
            let prompt_section = section.prompt_section();
            current.check_section(&prompt_section)?;
            next.sections.push(section_entry(
                self.next_id(),
                prompt_section,
                section.owner,
            )?);
        }
        for variable in variables {
            current.check_variable(variable.name)?;
            next.variables.push(VariableEntry {
                id: self.next_id(),
                name: Text::from_static(variable.name),
                owner: Some(variable.owner),
                provider: Arc::new(variable.provider),
            });
        }
        next.derive();
        self.inner.state.store(Arc::new(next));
        Ok(())
    }

    /// Assembles the prompt for one caller.
    ///
    /// Sections come in `(order, name)` order with their texts resolved
    /// against `cx` (not yet interpolated), every registered variable is
    /// resolved, tools are collected, then the waterfall listeners run. The
    /// result is an owned snapshot; [`render_prompt`](crate::render_prompt)
    /// turns it into text.
    pub fn assemble(&self, cx: &AssembleContext) -> PromptAssembly {
        let state = self.inner.state.load();
        let plan = state
            .plan
            .get_or_init(|| RenderPlan::compile(&state.assembled, &state.layout));
        let sections = if state.provided.is_empty() {
            Sections::compiled(Arc::clone(&state.assembled), Arc::clone(plan))
        } else {
            // Provided sections are not in the plan's fused runs: it renders
            // them from the sections it is given, with their new text. The
            // list is copied (each section a few reference counts: names,
            // owners and texts are `Text`), not the prose.
            let mut sections = Vec::clone(&state.assembled);
            for (at, provider) in &state.provided {
                sections[*at].set_text(provider(cx));
            }
            Sections::compiled(Arc::new(sections), Arc::clone(plan))
        };
        let values = state
            .variables
            .iter()
            .map(|entry| (entry.provider)(cx))
            .collect();
        let mut assembly = PromptAssembly {
            sections,
            variables: Variables::with_layout(Arc::clone(&state.layout), values),
            tools: collect_tools(&state.tools, cx),
            extensions: Extensions::new(),
        };
        for (_, listener) in &state.assemble_listeners {
            if listener(cx, &mut assembly).is_break() {
                break;
            }
        }
        assembly
    }

    /// The names of the registered sections, in render order.
    pub fn section_names(&self) -> Vec<Text> {
        let state = self.inner.state.load();
        state
            .sections
            .iter()
            .map(|entry| entry.section.name().clone())
            .collect()
    }

    /// The owner of the section named `name`.
    pub fn section_owner(&self, name: &str) -> Option<Owner> {
        let state = self.inner.state.load();
        let entry = state
            .sections
            .iter()
            .find(|entry| *entry.section.name() == name)?;
        Some(entry.section.owner().clone())
    }

    /// The names of the registered variables, sorted.
    pub fn variable_names(&self) -> Vec<Text> {
        let state = self.inner.state.load();
        state
            .variables
            .iter()
            .map(|entry| entry.name.clone())
            .collect()
    }
}

impl fmt::Debug for SystemPrompt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.load();
        f.debug_struct("SystemPrompt")
            .field(
                "sections",
                &state
                    .sections
                    .iter()
                    .map(|e| e.section.name())
                    .collect::<Vec<_>>(),
            )
            .field(
                "variables",
                &state.variables.iter().map(|e| &e.name).collect::<Vec<_>>(),
            )
            .field("tool_providers", &state.tools.len())
            .field("assemble_listeners", &state.assemble_listeners.len())
            .field("change_listeners", &state.change_listeners.len())
            .finish()
    }
}
