//! `SystemPrompt`: the registry every contributor registers into.
//!
//! One concern a module: this one is the registry's API (registering,
//! installing statics, reading names); `state` is the immutable state and
//! its copy on write; `notify` publishes a change and tells the change
//! listeners (veto, rollback, reentrancy); `handle` is the RAII
//! `Registration`; `assemble` turns one state into an assembly.

mod assemble;
mod contribution;
mod handle;
mod notify;
mod state;

use std::fmt;
use std::ops::ControlFlow;
use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwap;
use parking_lot::Mutex;

use dsh_prompt_template::is_section_name;

use crate::{
    AssembleContext, BoxError, NameKind, Owner, PartKind, PromptAssembly, PromptSection,
    RegistryError, Scope, ScopeId, Text, ToolOrder, ToolSchema,
};
use state::{Named, State, push_named, section_entry};

pub use contribution::Contribution;
pub use handle::Registration;
pub use notify::{ChangeAction, ChangeEvent};

type VariableProvider = Arc<dyn Fn(&AssembleContext) -> Option<Text> + Send + Sync>;
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
/// Registrations go into the global layer, or, through the handle
/// [`in_scope`](Self::in_scope) returns, into one scope (an agent, a
/// preset), where they shadow the same name of outer layers for the
/// assemblies of that scope only.
///
/// ```
/// use dsh_system_prompt::{AssembleContext, PromptSection, SystemPrompt, render_prompt};
///
/// let prompt = SystemPrompt::empty();
/// let cwd = prompt.variable("cwd", |_| Some("/work".into()))?;
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
    /// The layer this handle registers into; `None` is the global one.
    layer: Option<ScopeId>,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Id(u64);

impl SystemPrompt {
    /// A registry with every static contribution (`#[prompt_section]`,
    /// `#[prompt_variable]`) of the linked crates installed.
    ///
    /// Fails when two crates declare the same section or variable name (the
    /// error names both declarations), or when a static text is malformed.
    pub fn new() -> Result<Self, RegistryError> {
        let prompt = Self::empty();
        prompt.install_static(
            crate::statics::sections(),
            crate::statics::contexts(),
            crate::statics::variables(),
        )?;
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
            layer: None,
        }
    }

    /// A handle to the same registry whose registrations go into the layer
    /// `scope`: there, each shadows the section, context, variable, tool
    /// provider, waterfall listener or tool order of the same name from
    /// outer layers, for the assemblies whose
    /// [`Scope`](crate::Scope) chain holds `scope`, and dropping its
    /// [`Registration`] brings the outer one back. A name is unique within
    /// a layer, as in the global one.
    ///
    /// ```
    /// use dsh_system_prompt::{AssembleContext, PromptSection, Scope, ScopeId, SystemPrompt, render_prompt};
    ///
    /// let prompt = SystemPrompt::empty();
    /// let _habit = prompt.section(PromptSection::new("tool:bash", 105, "Run commands freely."))?;
    /// let reviewer = ScopeId::agent("reviewer");
    /// let strict = prompt
    ///     .in_scope(reviewer.clone())
    ///     .section(PromptSection::new("tool:bash", 105, "Run read-only commands only."))?;
    ///
    /// let cx = AssembleContext::new().with_scope(Scope::new([reviewer]));
    /// assert_eq!(render_prompt(&prompt.assemble(&cx))?, "Run read-only commands only.");
    /// assert_eq!(render_prompt(&prompt.assemble(&AssembleContext::default()))?, "Run commands freely.");
    /// drop(strict);
    /// assert_eq!(render_prompt(&prompt.assemble(&cx))?, "Run commands freely.");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn in_scope(&self, scope: ScopeId) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            layer: Some(scope),
        }
    }

    /// The layer this handle registers into; `None` is the global one.
    pub fn layer(&self) -> Option<&ScopeId> {
        self.layer.as_ref()
    }

    fn next_id(&self) -> Id {
        Id(self.inner.next_id.fetch_add(1, Ordering::Relaxed))
    }

    fn handle(&self, id: Id) -> Registration {
        self.handle_of(Box::new([id]))
    }

    fn handle_of(&self, ids: Box<[Id]>) -> Registration {
        Registration {
            registry: Arc::downgrade(&self.inner),
            ids,
        }
    }

    /// Registers `value` as `name` into this handle's layer, at the end of
    /// the list `list` picks out of the state: how tool providers,
    /// waterfall listeners and tool orders are kept, in registration order
    /// (`State::remove` takes them out again by id).
    /// Its owner is the code at `location`.
    fn register_named<T>(
        &self,
        (kind, contribution): (NameKind, Contribution),
        name: Text,
        location: &'static Location<'static>,
        value: T,
        list: impl FnOnce(&mut State) -> &mut Vec<Named<T>>,
    ) -> Result<Registration, RegistryError> {
        let id = self.next_id();
        let entry = Named {
            id,
            layer: self.layer.clone(),
            owner: Owner::at(location, name.clone()),
            name,
            value,
        };
        self.register(contribution, |state| push_named(list(state), entry, kind))?;
        Ok(self.handle(id))
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
        self.part(PartKind::Section, section, Location::caller())
    }

    /// Registers many sections as one change of the registry: each is
    /// checked and offered to the change listeners in turn, as
    /// [`section`](Self::section) would one by one, but the registry's
    /// state is copied once for all of them, not once a section (10,000
    /// sections registered one by one were 10,000 copies of a growing
    /// state). A section refused is left out, its error returned with its
    /// index in `sections`; the others are registered, and the one
    /// [`Registration`] keeps them (dropping it unregisters them together).
    ///
    /// ```
    /// use dsh_system_prompt::{PromptSection, SystemPrompt};
    ///
    /// let prompt = SystemPrompt::empty();
    /// let (_kept, refused) = prompt.sections([
    ///     PromptSection::new("a", 10, "A."),
    ///     PromptSection::new("a", 20, "Again."),
    ///     PromptSection::new("b", 30, "B."),
    /// ]);
    /// assert_eq!(refused.len(), 1);
    /// assert_eq!(refused[0].0, 1);
    /// let global = dsh_system_prompt::Scope::global();
    /// let origins = dsh_system_prompt::inspect::section_origins(&prompt, &global);
    /// assert_eq!(origins.len(), 2);
    /// ```
    #[track_caller]
    pub fn sections(
        &self,
        sections: impl IntoIterator<Item = PromptSection>,
    ) -> (Registration, Vec<(usize, RegistryError)>) {
        let location = Location::caller();
        let layer = self.layer.clone();
        let parts: Vec<(Id, Owner, PromptSection)> = (sections.into_iter())
            .map(|part| {
                let owner =
                    (part.owner.clone()).unwrap_or_else(|| Owner::at(location, part.name.clone()));
                (self.next_id(), owner, part)
            })
            .collect();
        let kind = PartKind::Section;
        let (registered, refused) = self.register_each(
            parts,
            |(_, _, part)| Contribution::Section {
                name: part.name.to_string(),
            },
            |state, (id, owner, part)| {
                if !is_section_name(&part.name) || state.has_part(kind, &part.name, &layer) {
                    state.check_part(kind, &part, &layer)?;
                }
                section_entry(id, kind, part, owner, layer.clone())
            },
        );
        (self.handle_of(registered.into()), refused)
    }

    /// Registers a runtime context: a part declared like a section (name,
    /// order, fixed or provided text, optional tool binding; the same
    /// `<<name>>` grammar and errors), which is **not** part of the system
    /// prompt. [`render_context`](crate::render_context) renders an
    /// assembly's contexts, and the agent loop sends that snapshot as a
    /// message at the conversation's tail when it changes — so what
    /// changes from step to step (a todo list, the file open in an editor)
    /// leaves the system prompt, and the provider's prompt cache, alone.
    ///
    /// Context names are unique among contexts (a section may share one).
    /// Fails like [`section`](Self::section).
    #[track_caller]
    pub fn context(&self, context: PromptSection) -> Result<Registration, RegistryError> {
        self.part(PartKind::Context, context, Location::caller())
    }

    /// Registers a section or a context, owned by its own owner or else by
    /// the code at `location`.
    fn part(
        &self,
        kind: PartKind,
        part: PromptSection,
        location: &'static Location<'static>,
    ) -> Result<Registration, RegistryError> {
        let owner = part
            .owner
            .clone()
            .unwrap_or_else(|| Owner::at(location, part.name.clone()));
        let id = self.next_id();
        let name = part.name.to_string();
        let contribution = match kind {
            PartKind::Section => Contribution::Section { name },
            PartKind::Context => Contribution::Context { name },
        };
        let layer = self.layer.clone();
        self.register(contribution, |state| {
            state.check_part(kind, &part, &layer)?;
            let entry = section_entry(id, kind, part, owner, layer)?;
            state.parts_mut(kind).push(entry);
            Ok(())
        })?;
        Ok(self.handle(id))
    }

    /// Registers a variable, referenced from section text as `<<name>>`.
    /// The provider is asked at each assembly and returns the value;
    /// `None` means "no value for this assembly", and rendering a reference
    /// to it is then an error. A value is a [`Text`]: `"…".into()` or
    /// `string.into()`; a known value kept as `Text` is shared, not copied,
    /// at every assembly. Neither form needs a type annotation:
    ///
    /// ```
    /// use dsh_system_prompt::SystemPrompt;
    ///
    /// let prompt = SystemPrompt::empty();
    /// let _cwd = prompt.variable("cwd", |_| None)?;
    /// let _model = prompt.variable("model", |_| Some("m".into()))?;
    /// let _user = prompt.variable("user", |_| Some(format!("{}-{}", "dev", 1).into()))?;
    /// # Ok::<(), dsh_system_prompt::RegistryError>(())
    /// ```
    #[track_caller]
    pub fn variable(
        &self,
        name: impl Into<Text>,
        provider: impl Fn(&AssembleContext) -> Option<Text> + Send + Sync + 'static,
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
        provider: impl Fn(&AssembleContext) -> Option<Text> + Send + Sync + 'static,
    ) -> Result<Registration, RegistryError> {
        let name = name.into();
        let id = self.next_id();
        let provider: VariableProvider = Arc::new(provider);
        let contribution = Contribution::Variable {
            name: name.to_string(),
        };
        let layer = self.layer.clone();
        self.register(contribution, |state| {
            state.check_variable(&name, &layer)?;
            state.variables.push(Named {
                id,
                layer,
                name,
                owner,
                value: provider,
            });
            Ok(())
        })?;
        Ok(self.handle(id))
    }

    /// Registers a tool provider named `name`, asked for its tools at
    /// each assembly. Providers are asked in registration order; the tools
    /// are then placed by the nearest [`tool_order`](Self::tool_order), or
    /// sorted by name. A scoped provider of the same name replaces this
    /// one (which is then not asked) for its scope.
    #[track_caller]
    pub fn tools(
        &self,
        name: impl Into<Text>,
        provider: impl Fn(&AssembleContext) -> Vec<Arc<ToolSchema>> + Send + Sync + 'static,
    ) -> Result<Registration, RegistryError> {
        let name = name.into();
        let contribution = Contribution::Tools {
            name: name.to_string(),
        };
        let provider: ToolProvider = Arc::new(provider);
        let kind = (NameKind::ToolProvider, contribution);
        self.register_named(kind, name, Location::caller(), provider, |state| {
            &mut state.tools
        })
    }

    /// Registers a waterfall listener named `name`. At each assembly,
    /// listeners run in registration order, each with the caller's context
    /// and the assembly as earlier listeners left it; each may change,
    /// extend or replace it, and `ControlFlow::Break` skips the listeners
    /// after it. A scoped listener fires only for its scope, in place of a
    /// listener of the same name from outer layers.
    #[track_caller]
    pub fn on_assemble(
        &self,
        name: impl Into<Text>,
        listener: impl Fn(&AssembleContext, &mut PromptAssembly) -> ControlFlow<()>
        + Send
        + Sync
        + 'static,
    ) -> Result<Registration, RegistryError> {
        let name = name.into();
        let contribution = Contribution::AssembleListener {
            name: name.to_string(),
        };
        let listener: AssembleListener = Arc::new(listener);
        let kind = (NameKind::WaterfallListener, contribution);
        self.register_named(kind, name, Location::caller(), listener, |state| {
            &mut state.assemble_listeners
        })
    }

    /// Sets the order of the tools of this handle's layer (see
    /// [`ToolOrder`]); the nearest layer's order wins, and without any,
    /// tools are sorted by name. One a layer.
    #[track_caller]
    pub fn tool_order(&self, order: ToolOrder) -> Result<Registration, RegistryError> {
        let id = self.next_id();
        let name = Text::from_static("tool_order");
        let entry = Named {
            id,
            layer: self.layer.clone(),
            owner: Owner::at(Location::caller(), name.clone()),
            name,
            value: Arc::new(order),
        };
        self.register(Contribution::ToolOrder, |state| {
            let orders = &mut state.tool_orders;
            if let Some(existing) = orders.iter().find(|own| own.layer == entry.layer) {
                return Err(RegistryError::ToolOrderTwice {
                    layer: entry.layer,
                    existing: Box::new(existing.owner.clone()),
                });
            }
            orders.push(entry);
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
        let listener: ChangeListener = Arc::new(listener);
        let id = self.next_id();
        self.register(Contribution::ChangeListener, |state| {
            state.change_listeners.push((id, listener));
            Ok(())
        })?;
        Ok(self.handle(id))
    }

    /// Installs static contributions in one change, checking that names are
    /// unique across crates.
    pub(crate) fn install_static(
        &self,
        sections: Vec<crate::statics::StaticSectionEntry>,
        contexts: Vec<crate::statics::StaticSectionEntry>,
        variables: Vec<crate::statics::StaticVariableEntry>,
    ) -> Result<(), RegistryError> {
        use crate::statics::check_unique;
        check_unique(
            NameKind::Section,
            sections.iter().map(|s| (&s.name, &s.owner)),
        )?;
        check_unique(
            NameKind::Context,
            contexts.iter().map(|s| (&s.name, &s.owner)),
        )?;
        check_unique(
            NameKind::Variable,
            variables.iter().map(|v| (v.name, &v.owner)),
        )?;
        let _writer = self.inner.write.lock();
        let current = self.inner.state.load_full();
        let mut next = State::clone(&current);
        // The statics are already known to be distinct among themselves:
        // check each only against what was registered before, so installing
        // n statics stays O(n log n), not O(n²).
        for (kind, parts) in [(PartKind::Section, sections), (PartKind::Context, contexts)] {
            for part in parts {
                let prompt_section = part.prompt_section();
                current.check_part(kind, &prompt_section, &None)?;
                let entry = section_entry(self.next_id(), kind, prompt_section, part.owner, None)?;
                next.parts_mut(kind).push(entry);
            }
        }
        for variable in variables {
            current.check_variable(variable.name, &None)?;
            let provider = variable.provider;
            next.variables.push(Named {
                id: self.next_id(),
                layer: None,
                name: Text::from_static(variable.name),
                owner: variable.owner,
                value: Arc::new(move |cx| provider(cx).map(Text::from)),
            });
        }
        next.derive();
        self.inner.state.store(Arc::new(next));
        Ok(())
    }

    /// The names of the global layer's sections, in render order.
    pub fn section_names(&self) -> Vec<Text> {
        let state = self.inner.state.load();
        state
            .global
            .sections
            .list
            .iter()
            .map(|section| section.name().clone())
            .collect()
    }

    /// The owner of the global layer's section named `name`.
    pub fn section_owner(&self, name: &str) -> Option<Owner> {
        let state = self.inner.state.load();
        let section = state
            .global
            .sections
            .list
            .iter()
            .find(|section| *section.name() == name)?;
        Some(section.owner().clone())
    }

    /// Where each section of the assemblies of `scope` comes from: see
    /// [`inspect::section_origins`](crate::inspect::section_origins).
    pub(crate) fn section_origins(&self, scope: &Scope) -> Vec<crate::section::SectionOrigin> {
        self.inner.state.load().section_origins(scope)
    }

    /// The names of the global layer's variables, sorted.
    pub fn variable_names(&self) -> Vec<Text> {
        let state = self.inner.state.load();
        state.global.layout.names().cloned().collect()
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
