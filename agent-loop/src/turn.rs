//! `AgentLoop`: the step loop.

use std::any::Any;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use dsh_system_prompt::template::quoted_list;
use dsh_system_prompt::{
    AssembleContext, PromptAssembly, SystemPrompt, render_context, render_prompt,
};
use dsh_tools::{
    ToolCallContext, ToolError, ToolProgress, ToolRegistry, ToolResult, panic_message,
};
use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use crate::notes::ResultNotes;
use crate::observer::Observers;
use crate::{
    Agent, AgentContextExt, Approval, Event, FinishReason, Image, LoopEvent, LoopObserver, Message,
    ModelAdapter, ModelError, ModelRequest, ModelResponse, NOT_RUN, Piece, Session, SessionFacts,
    SessionId, TextSink, ToolApproval, ToolCall, TurnEndReason, TurnError,
};

type CallContextHook = Arc<dyn Fn(&SessionFacts, &ToolCall, &mut ToolCallContext) + Send + Sync>;

/// What observers see before each step ([`LoopEvent::Step`]): exactly
/// what the step is about to send — the rendered prompt, the assembly it
/// came from, the messages. It is the input a compaction policy would
/// measure.
#[derive(Debug)]
#[non_exhaustive]
pub struct StepPrompt<'a> {
    /// The agent whose step it is.
    pub agent: &'a Agent,
    /// The session's id and working directory.
    pub session: &'a SessionFacts,
    /// The step's number within its turn, from 1.
    pub step: u32,
    /// The step's final assembly.
    pub assembly: &'a PromptAssembly,
    /// The system prompt: `render_prompt(assembly)`, byte for byte. Empty
    /// means no system message is sent.
    pub system: &'a str,
    /// The conversation the request carries.
    pub messages: &'a [Message],
}

/// What observers see of each answer ([`LoopEvent::Response`]): the
/// model's whole answer to one step's request, with the
/// [`usage`](ModelResponse::usage) the API reported — the step's cost,
/// and how much of its prompt a cache served.
#[derive(Debug)]
#[non_exhaustive]
pub struct StepResponse<'a> {
    /// The agent whose step it is.
    pub agent: &'a Agent,
    /// The session's id and working directory.
    pub session: &'a SessionFacts,
    /// The step's number within its turn, from 1; the same as the
    /// [`StepPrompt`] of the request this answers.
    pub step: u32,
    /// The request the answer is to.
    pub request: &'a ModelRequest,
    /// The answer, before the loop records it and runs its tool calls.
    pub response: &'a ModelResponse,
}

impl StepResponse<'_> {
    /// The tokens of the context once the answer is in it: the request's
    /// and the answer's, as the API reported them
    /// ([`usage`](ModelResponse::usage)), or else counted with the
    /// agent's [`ContextBudget`](crate::ContextBudget) — what an editor's
    /// context meter shows against the agent's window.
    pub fn context_tokens(&self) -> u64 {
        if let Some(usage) = self.response.usage {
            return usage.prompt_tokens.saturating_add(usage.completion_tokens);
        }
        let budget = self.agent.budget();
        let request = self.request;
        let system = request.system.as_deref().unwrap_or("");
        // The thoughts are left out: the APIs drop them from the context
        // of later turns, and a usage, when there is one, counts them.
        let answer = Message::Assistant {
            text: self.response.text.clone(),
            tool_calls: self.response.tool_calls.clone(),
            thoughts: Vec::new(),
        };
        budget
            .count_request(system, &request.tools, &request.messages)
            .saturating_add(budget.count_message(&answer))
    }
}

/// How a completed turn went.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TurnSummary {
    /// The model's final answer: the text of its last message, which
    /// called no tools.
    pub answer: String,
    /// How many steps the turn took.
    pub steps: u32,
    /// Why the model stopped its final answer: cut short at its output
    /// limit, or refused, the turn ends all the same.
    pub finish: FinishReason,
}

/// Runs agents' turns: per step, assemble the prompt for the agent, render
/// it, ask the model, run the tools it calls; until it calls none.
///
/// Cheap to clone and shared by every agent of a process: one prompt
/// registry, one tool registry, one model adapter. Each turn works on its
/// own [`Session`], so turns of different agents run concurrently and each
/// assembles only its own facts.
///
/// Every failure is contained in the turn it happens in — a prompt that
/// does not render (no request is sent), an adapter error, a panic inside a
/// prompt provider, the adapter, a tool or an observer of a step or an
/// answer, the step limit, a cancellation: the turn ends with a
/// [`TurnEnd`](Event::TurnEnd) that says why, and the agent serves the
/// next turn.
#[derive(Clone)]
pub struct AgentLoop {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    prompt: SystemPrompt,
    tools: ToolRegistry,
    adapter: Arc<dyn ModelAdapter>,
    max_steps: u32,
    cancel_grace: Duration,
    observers: Observers,
    approval: Option<Arc<dyn ToolApproval>>,
    call_context: Option<CallContextHook>,
    notes: Option<Arc<dyn ResultNotes>>,
}

impl fmt::Debug for AgentLoop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentLoop")
            .field("prompt", &self.inner.prompt)
            .field("tools", &self.inner.tools.names())
            .field("max_steps", &self.inner.max_steps)
            .field("cancel_grace", &self.inner.cancel_grace)
            .finish_non_exhaustive()
    }
}

impl AgentLoop {
    /// The step limit of a turn unless [`with_max_steps`](Self::with_max_steps)
    /// sets another.
    pub const DEFAULT_MAX_STEPS: u32 = 50;

    /// How long a cancelled tool call may take to clean up (to kill its
    /// processes, say) before the loop stops waiting for it.
    pub const DEFAULT_CANCEL_GRACE: Duration = Duration::from_secs(2);

    /// A loop over `prompt`, running tools of `tools` and asking `adapter`.
    ///
    /// The tool registry must be [installed](ToolRegistry::install) into
    /// `prompt`: only tools of a step's final assembly may run.
    pub fn new(prompt: SystemPrompt, tools: ToolRegistry, adapter: Arc<dyn ModelAdapter>) -> Self {
        Self {
            inner: Arc::new(Inner {
                prompt,
                tools,
                adapter,
                max_steps: Self::DEFAULT_MAX_STEPS,
                cancel_grace: Self::DEFAULT_CANCEL_GRACE,
                observers: Observers::default(),
                approval: None,
                call_context: None,
                notes: None,
            }),
        }
    }

    /// Sets the step limit of a turn (at least 1).
    pub fn with_max_steps(mut self, max_steps: u32) -> Self {
        Arc::make_mut(&mut self.inner).max_steps = max_steps.max(1);
        self
    }

    /// Sets how long a cancelled tool call may take to clean up.
    pub fn with_cancel_grace(mut self, grace: Duration) -> Self {
        Arc::make_mut(&mut self.inner).cancel_grace = grace;
        self
    }

    /// Shows `observer` everything the loop does, as it happens: each
    /// [`LoopEvent`] of every session it runs. Observers add up: each sees
    /// every event after the ones installed before it, so a host's
    /// observer (the trace) and a front end's display both see
    /// everything.
    ///
    /// The loop shows, in a step: the prompt about to be sent
    /// ([`Step`](LoopEvent::Step)), the answer's thoughts and text as they
    /// stream ([`Thought`](LoopEvent::Thought), [`Text`](LoopEvent::Text)),
    /// the whole answer ([`Response`](LoopEvent::Response)), what a running
    /// tool call reports ([`Progress`](LoopEvent::Progress)), and each event
    /// once it is appended to the session's log
    /// ([`Recorded`](LoopEvent::Recorded)). A panic inside an observer of a
    /// `Step` or a `Response` fails that turn (the observers after it do
    /// not see that one).
    pub fn observed_by(mut self, observer: Arc<dyn LoopObserver>) -> Self {
        let inner = Arc::make_mut(&mut self.inner);
        inner.observers = inner.observers.and(observer);
        self
    }

    /// Asks `approval` right before each tool call runs; a call it denies
    /// does not run, and the model reads the reason as its result.
    pub fn with_approval(mut self, approval: Arc<dyn ToolApproval>) -> Self {
        Arc::make_mut(&mut self.inner).approval = Some(approval);
        self
    }

    /// Runs `hook` on the context of each tool call, right before the
    /// tool runs: a front end attaches what its tools may use there (an
    /// editor's view of the files, where changes are shown), with the
    /// session and the call to decide by. It runs inline, so keep it quick
    /// and free of panics.
    pub fn on_tool_call_context(
        mut self,
        hook: impl Fn(&SessionFacts, &ToolCall, &mut ToolCallContext) + Send + Sync + 'static,
    ) -> Self {
        Arc::make_mut(&mut self.inner).call_context = Some(Arc::new(hook));
        self
    }

    /// Asks `notes` after each call that ran what the model should read
    /// after its result ([`ResultNotes`]); each note is recorded as an
    /// [`Event::Note`] right after the result.
    pub fn with_result_notes(mut self, notes: Arc<dyn ResultNotes>) -> Self {
        Arc::make_mut(&mut self.inner).notes = Some(notes);
        self
    }

    /// The prompt registry.
    pub fn prompt(&self) -> &SystemPrompt {
        &self.inner.prompt
    }

    /// The tool registry.
    pub fn tools(&self) -> &ToolRegistry {
        &self.inner.tools
    }

    /// The model adapter.
    pub fn adapter(&self) -> &Arc<dyn ModelAdapter> {
        &self.inner.adapter
    }

    /// The step limit of a turn.
    pub fn max_steps(&self) -> u32 {
        self.inner.max_steps
    }

    /// The context a step of `agent` in `session` assembles with: the
    /// agent (with its tool set) and the session's facts.
    pub fn context(agent: &Agent, session: &Session) -> AssembleContext {
        AssembleContext::new()
            .with_agent(agent.clone())
            .with_session(session)
    }

    /// The assembly a step of `agent` in `session` would send now;
    /// `render_prompt` of it is the system prompt that step would send.
    pub fn assemble(&self, agent: &Agent, session: &Session) -> PromptAssembly {
        self.inner.prompt.assemble(&Self::context(agent, session))
    }

    /// The tokens of the context `agent` has in `session` now, counted with
    /// its [`ContextBudget`](crate::ContextBudget): the system prompt and
    /// the tools a step would send, and the conversation as the model reads
    /// it. `None` when the prompt does not render. What a front end shows
    /// of a session whose store did not keep the API's counts.
    pub fn context_tokens(&self, agent: &Agent, session: &Session) -> Option<u64> {
        let assembly = self.assemble(agent, session);
        let system = render_prompt(&assembly).ok()?;
        let budget = agent.budget();
        Some(budget.count_request(&system, &assembly.tools, &session.messages()))
    }

    /// Runs one turn: appends `input` as the user's message, then steps
    /// until the model answers without calling tools.
    ///
    /// Every turn ends with a [`TurnEnd`](Event::TurnEnd) in the session's
    /// log, whatever happens; an `Err` is that turn's failure only, and the
    /// agent and session serve the next turn. Cancelling `cancel` ends the
    /// turn with [`TurnError::Cancelled`].
    pub async fn run_turn(
        &self,
        agent: &Agent,
        session: &mut Session,
        input: impl Into<String>,
        cancel: &CancellationToken,
    ) -> Result<TurnSummary, TurnError> {
        self.run_turn_with(agent, session, (input.into(), Vec::new()), cancel)
            .await
    }

    /// [`run_turn`](Self::run_turn) with images the user attached to
    /// `input`: `(text, images)`, each image recorded as an
    /// [`Event::UserImage`] after the message, and sent as an image part
    /// of the user's turn where the adapter's API takes one.
    pub async fn run_turn_with(
        &self,
        agent: &Agent,
        session: &mut Session,
        (text, images): (String, Vec<Image>),
        cancel: &CancellationToken,
    ) -> Result<TurnSummary, TurnError> {
        let turn_start = session.events().len();
        self.record(session, Event::UserMessage { text });
        for image in images {
            self.record(session, Event::UserImage { image });
        }
        let result = self.steps(agent, session, turn_start, cancel).await;
        let (reason, error) = match &result {
            Ok(_) => (TurnEndReason::Completed, None),
            Err(error) => (error.reason(), Some(error.to_string())),
        };
        self.record(session, Event::TurnEnd { reason, error });
        result
    }

    /// The steps of one turn: each prepares its request, asks the model,
    /// records the answer and runs the tools it calls, until an answer
    /// calls none.
    async fn steps(
        &self,
        agent: &Agent,
        session: &mut Session,
        turn_start: usize,
        cancel: &CancellationToken,
    ) -> Result<TurnSummary, TurnError> {
        let facts = SessionFacts::of(session);
        let mut calling: Option<CallingTurn> = None;
        for step in 1..=self.inner.max_steps {
            if cancel.is_cancelled() {
                return Err(TurnError::Cancelled);
            }
            self.record(session, Event::StepStart { step });
            let (assembly, request) = self
                .prepare_request(step, agent, session, &facts, cancel)
                .await?;
            let answer = self.ask_model(step, session.id(), &request, cancel).await?;
            crate::compaction::note_usage(session, &request, &answer);
            self.show_response(step, agent, &facts, (&request, &answer))?;
            self.record_answer(session, &answer);
            if answer.tool_calls.is_empty() {
                return Ok(TurnSummary {
                    answer: answer.text,
                    steps: step,
                    finish: answer.finish,
                });
            }
            // What a tool learns about this turn: the completed turns, not
            // this one. Built once per turn, shared by its calls.
            let calling = calling.get_or_insert_with(|| CallingTurn {
                agent_loop: self.clone(),
                agent: agent.clone(),
                session: facts.clone(),
                history: session.events()[..turn_start].into(),
            });
            self.run_calls(
                step,
                session,
                &assembly,
                &answer.tool_calls,
                calling,
                cancel,
            )
            .await?;
        }
        Err(TurnError::StepLimit {
            limit: self.inner.max_steps,
        })
    }

    /// Assembles and renders the step's prompt, shows it to the
    /// observers, and builds the request that carries exactly it.
    ///
    /// When the assembly's runtime context differs from the last snapshot
    /// the conversation carries, the new snapshot is appended to it first,
    /// at the tail: the system prompt stays byte for byte what it was.
    /// Then, when the request reaches the agent's budget, the conversation
    /// is compacted (the pre-step seam, `compaction.rs`), and the runtime
    /// context re-emitted if the summary replaced it.
    async fn prepare_request(
        &self,
        step: u32,
        agent: &Agent,
        session: &mut Session,
        facts: &SessionFacts,
        cancel: &CancellationToken,
    ) -> Result<(PromptAssembly, ModelRequest), TurnError> {
        let cx = Self::context(agent, session);
        let assembly = contain(step, "a prompt provider", || {
            self.inner.prompt.assemble(&cx)
        })?;
        // Every problem of both, so one failed step says all that is wrong.
        let (system, context) = match (render_prompt(&assembly), render_context(&assembly)) {
            (Ok(system), Ok(context)) => (system, context),
            (Err(mut source), context) => {
                source.extend(context.err().into_iter().flatten());
                return Err(TurnError::Render { step, source });
            }
            (Ok(_), Err(source)) => return Err(TurnError::Render { step, source }),
        };
        if session.context().unwrap_or_default() != context {
            self.record(
                session,
                Event::Context {
                    text: context.clone(),
                },
            );
        }
        let mut messages = session.messages();
        let fixed = crate::compaction::Fixed {
            system: &system,
            tools: &assembly.tools,
            context: &context,
        };
        let compacted = self
            .compact_for_budget(step, agent, session, fixed, &messages, cancel)
            .await?;
        if compacted {
            messages = session.messages();
        }
        let observers = &self.inner.observers;
        if !observers.is_empty() {
            let prompt = StepPrompt {
                agent,
                session: facts,
                step,
                assembly: &assembly,
                system: &system,
                messages: &messages,
            };
            contain(step, STEP_OBSERVER, || {
                observers.show(LoopEvent::Step(&prompt));
            })?;
        }
        let request = ModelRequest {
            model: agent.model().to_owned(),
            system: (!system.is_empty()).then_some(system),
            tools: assembly.tools.clone(),
            messages,
            session: Some(session.id().clone()),
            effort: agent.options().effort.clone(),
            max_tokens: None,
        };
        Ok((assembly, request))
    }

    /// Sends the request; a cancellation, an adapter error or a panic of
    /// the adapter ends the turn.
    async fn ask_model(
        &self,
        step: u32,
        session: &SessionId,
        request: &ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, TurnError> {
        let on_text = |piece: Piece<'_>| {
            self.inner.observers.show(match piece {
                Piece::Text(piece) => LoopEvent::Text { session, piece },
                Piece::Thought(piece) => LoopEvent::Thought { session, piece },
            });
        };
        self.ask(step, request, &on_text, cancel).await
    }

    /// Sends one request to the adapter — the one place that does, for a
    /// step's request and a compaction's summary request alike; a
    /// cancellation, an adapter error or a panic of the adapter is the
    /// error.
    pub(crate) async fn ask(
        &self,
        step: u32,
        request: &ModelRequest,
        on_text: TextSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, TurnError> {
        let answer = self.inner.adapter.complete(request, on_text, cancel);
        let answer = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(TurnError::Cancelled),
            answer = AssertUnwindSafe(answer).catch_unwind() => answer,
        };
        match answer {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(ModelError::Cancelled)) => Err(TurnError::Cancelled),
            Ok(Err(source)) => Err(TurnError::Model { step, source }),
            Err(payload) => Err(panicked(step, "the model adapter", payload)),
        }
    }

    /// Shows the answer to the observers, if any.
    fn show_response(
        &self,
        step: u32,
        agent: &Agent,
        facts: &SessionFacts,
        (request, answer): (&ModelRequest, &ModelResponse),
    ) -> Result<(), TurnError> {
        let observers = &self.inner.observers;
        if observers.is_empty() {
            return Ok(());
        }
        let response = StepResponse {
            agent,
            session: facts,
            step,
            request,
            response: answer,
        };
        contain(step, RESPONSE_OBSERVER, || {
            observers.show(LoopEvent::Response(&response));
        })
    }

    /// Appends the model's answer and its tool calls to the log.
    fn record_answer(&self, session: &mut Session, answer: &ModelResponse) {
        self.record(
            session,
            Event::AssistantMessage {
                text: answer.text.clone(),
                thoughts: answer.thoughts.clone(),
            },
        );
        for call in &answer.tool_calls {
            self.record(session, Event::ToolCall { call: call.clone() });
        }
    }

    /// Runs the answer's tool calls in order and records each result. When
    /// one ends the turn, it and every call after it still get a result,
    /// so the transcript stays one a model accepts in the next turn.
    async fn run_calls(
        &self,
        step: u32,
        session: &mut Session,
        assembly: &PromptAssembly,
        calls: &[ToolCall],
        calling: &CallingTurn,
        cancel: &CancellationToken,
    ) -> Result<(), TurnError> {
        let mut calls = calls.iter();
        while let Some(call) = calls.next() {
            let ended = match self.call_tool(step, assembly, call, calling, cancel).await {
                Ok(result) => self.record_with_notes(step, session, call, result, calling),
                Err(error) => {
                    let text = match &error {
                        TurnError::Cancelled => "not finished: the turn was cancelled".to_owned(),
                        error => format!("not finished: the turn failed: {error}"),
                    };
                    self.record_result(session, call, failed(text));
                    Err(error)
                }
            };
            if let Err(error) = ended {
                for call in calls {
                    let text = format!("{NOT_RUN}the turn ended before this call");
                    self.record_result(session, call, failed(text));
                }
                return Err(error);
            }
        }
        Ok(())
    }

    /// Records `call`'s `result`, then the notes the host adds to it
    /// ([`ResultNotes`]); a panic of the host fails the turn, as an
    /// observer's does.
    fn record_with_notes(
        &self,
        step: u32,
        session: &mut Session,
        call: &ToolCall,
        result: ToolResult,
        calling: &CallingTurn,
    ) -> Result<(), TurnError> {
        let Some(notes) = self.inner.notes.clone() else {
            self.record_result(session, call, result);
            return Ok(());
        };
        let asked = contain(step, "the result notes", || {
            notes.notes(&calling.session, call, &result, session.events())
        });
        self.record_result(session, call, result);
        for note in asked? {
            let event = Event::Note {
                call_id: call.id.clone(),
                source: note.source,
                trigger: note.trigger,
                about: note.about,
                text: note.text,
            };
            self.record(session, event);
        }
        Ok(())
    }

    /// Runs one tool call. Only a tool of the step's final assembly may
    /// run; any other call is answered with an error the model can act on.
    async fn call_tool(
        &self,
        step: u32,
        assembly: &PromptAssembly,
        call: &ToolCall,
        calling: &CallingTurn,
        cancel: &CancellationToken,
    ) -> Result<ToolResult, TurnError> {
        if !assembly.has_tool(&call.name) {
            return Ok(failed(unavailable(assembly, &call.name)));
        }
        if cancel.is_cancelled() {
            return Err(TurnError::Cancelled);
        }
        if let Some(approval) = &self.inner.approval {
            let approve = approval.approve(call, &calling.session, cancel);
            let approved = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(TurnError::Cancelled),
                approved = AssertUnwindSafe(approve).catch_unwind() => approved,
            };
            match approved {
                Ok(Approval::Allow) => {}
                Ok(Approval::Deny { reason }) => {
                    return Ok(failed(format!("{NOT_RUN}{reason}")));
                }
                Err(payload) => return Err(panicked(step, "the tool approval", payload)),
            }
        }
        let mut cx = ToolCallContext::new(calling.session.id.as_str());
        cx.cwd = calling.session.cwd.clone();
        cx.call_id = call.id.clone();
        cx.cancel = cancel.child_token();
        cx.extensions.extend_from(calling.agent.facts());
        cx.extensions.extend_from(calling.agent.tool_facts());
        cx.extensions.insert(calling.clone());
        if let Some(progress) = self.progress_of(&calling.session.id, call) {
            cx.extensions.insert(progress);
        }
        if let Some(hook) = &self.inner.call_context {
            hook(&calling.session, call, &mut cx);
        }

        let run = AssertUnwindSafe(run_tool(&self.inner.tools, call, &cx)).catch_unwind();
        tokio::pin!(run);
        let outcome = tokio::select! {
            biased;
            outcome = &mut run => outcome,
            () = cancel.cancelled() => {
                // The tool sees its token fire too: give it a moment to
                // clean up (kill its processes) before dropping it.
                let _ = tokio::time::timeout(self.inner.cancel_grace, &mut run).await;
                return Err(TurnError::Cancelled);
            }
        };
        match outcome {
            // The registry stops a cancelled call itself; the turn is
            // cancelled whichever side noticed first.
            _ if cancel.is_cancelled() => Err(TurnError::Cancelled),
            Ok(Err(ToolPanic { tool, message })) => Err(TurnError::Panicked {
                step,
                what: format!("tool `{tool}`"),
                message,
            }),
            Ok(Ok(result)) => Ok(result),
            Err(payload) => Err(panicked(step, &format!("tool `{}`", call.name), payload)),
        }
    }

    /// Where what a running call reports goes: to the observers, as
    /// [`LoopEvent::Progress`]; `None` when there are none, so a tool
    /// knows no one shows its progress.
    fn progress_of(&self, session: &SessionId, call: &ToolCall) -> Option<ToolProgress> {
        if self.inner.observers.is_empty() {
            return None;
        }
        let observers = self.inner.observers.clone();
        let (session, call) = (session.clone(), call.clone());
        Some(ToolProgress::new(move |text| {
            observers.show(LoopEvent::Progress {
                session: &session,
                call: &call,
                text,
            });
        }))
    }

    fn record_result(&self, session: &mut Session, call: &ToolCall, result: ToolResult) {
        // Whatever the tool: an image the model API would refuse would
        // fail this request and every later one of the session.
        let (text, images) = Image::sendable(result.text, result.images);
        let event = Event::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            text,
            is_error: result.is_error,
            images,
        };
        self.record(session, event);
    }

    /// Appends `event` to the session (and its recorder), then shows it
    /// to the observers: what a front end shows is already recorded.
    pub(crate) fn record(&self, session: &mut Session, event: Event) {
        session.push(event);
        if let Some(event) = session.events().last() {
            self.inner.observers.show(LoopEvent::Recorded {
                session: session.id(),
                event,
            });
        }
    }
}

/// What panicked, when an observer of a step's prompt did.
const STEP_OBSERVER: &str = "a loop observer of the step's prompt";

/// What panicked, when an observer of an answer did.
const RESPONSE_OBSERVER: &str = "a loop observer of the answer";

/// The result of a call that failed with `text`, which says why.
fn failed(text: String) -> ToolResult {
    ToolResult {
        text,
        is_error: true,
        images: Vec::new(),
    }
}

/// A tool panicked: the registry caught it, and the turn fails.
struct ToolPanic {
    tool: String,
    message: String,
}

/// Runs one call through the registry; `Err` when the tool panicked.
async fn run_tool(
    tools: &ToolRegistry,
    call: &ToolCall,
    cx: &ToolCallContext,
) -> Result<ToolResult, ToolPanic> {
    match tools.try_call(&call.name, &call.arguments, cx).await {
        Err(ToolError::Panicked { tool, message }) => Err(ToolPanic { tool, message }),
        outcome => Ok(ToolResult::from(outcome)),
    }
}

/// The answer to a call of a tool the agent may not use.
fn unavailable(assembly: &PromptAssembly, name: &str) -> String {
    let mut message = format!("{NOT_RUN}tool `{name}` is not available to this agent; ");
    if assembly.tools.is_empty() {
        message.push_str("it has no tools");
    } else {
        message.push_str("its tools are ");
        message.push_str(&quoted_list(assembly.tools.iter().map(|tool| &tool.name)));
    }
    message
}

/// Runs `f`; a panic inside it fails the turn instead of the process.
fn contain<T>(step: u32, what: &str, f: impl FnOnce() -> T) -> Result<T, TurnError> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|payload| panicked(step, what, payload))
}

fn panicked(step: u32, what: &str, payload: Box<dyn Any + Send>) -> TurnError {
    TurnError::Panicked {
        step,
        what: what.to_owned(),
        message: panic_message(payload.as_ref()),
    }
}

/// The turn that makes a tool call, as the loop attaches it to every
/// [`ToolCallContext`](dsh_tools::ToolCallContext)'s extensions.
///
/// Tools do not depend on the loop; the one that starts agents (the
/// subagent tool) reads this to run a child through the same loop, and to
/// seed a forked child with the parent's completed turns.
///
/// ```
/// use dsh_agent_loop::CallingTurn;
/// use dsh_tools::ToolCallContext;
///
/// fn parent(cx: &ToolCallContext) -> Option<&CallingTurn> {
///     cx.extensions.get::<CallingTurn>()
/// }
/// ```
#[derive(Clone, Debug)]
pub struct CallingTurn {
    pub(crate) agent_loop: AgentLoop,
    pub(crate) agent: Agent,
    pub(crate) session: SessionFacts,
    pub(crate) history: Arc<[Event]>,
}

impl CallingTurn {
    /// The loop running the turn.
    pub fn agent_loop(&self) -> &AgentLoop {
        &self.agent_loop
    }

    /// The agent whose turn it is.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// The session's id and working directory.
    pub fn session(&self) -> &SessionFacts {
        &self.session
    }

    /// The session's completed turns: its log before the turn in flight.
    /// The turn in flight is not part of it.
    pub fn completed_turns(&self) -> &[Event] {
        &self.history
    }
}
