//! Compaction: the loop's pre-step seam keeps a request inside its
//! agent's [context budget](crate::ContextBudget), rewriting only the
//! history — never the system prompt or the tools, so the prefix a
//! provider caches survives it.
//!
//! Before a step's request is sent, [`ContextBudget::assess`] says
//! whether it reaches the budget's threshold (counting tokens only when
//! it could). When it does, the loop compacts towards the budget's
//! [target](crate::ContextBudget::target), cheapest first:
//!
//! 1. **Elision.** Old tool results, oldest first, become a marker with
//!    the tool's name and size and the result's first lines
//!    ([`elided_result`]); the call stays. The results of the latest step
//!    — which the model has not read yet — are kept.
//! 2. **Summary.** If that is not enough, the oldest whole turns are
//!    summarized by the model itself: a request whose system prompt is
//!    the section `compaction:instruction` ([`COMPACTION_SECTION`],
//!    declared below with `#[prompt_section]`) and whose one message is
//!    the transcript of those turns. The summary then stands for them, at
//!    the conversation's start ([`SUMMARY_HEADER`]); the latest turns,
//!    the one in flight always among them, are kept as they are. A
//!    runtime-context snapshot the summary replaced is re-emitted after
//!    it.
//!
//! The outcome is one [`Event::Compacted`] appended to the session's log:
//! the summary, which events it replaced, which results it elided, the
//! tokens before and after. Nothing is deleted — the log keeps every
//! event, and [`Session::messages`] applies the compactions to it — so a
//! store that records events in order keeps the full history and reloads
//! what the model read. Front ends see the event as a
//! [`LoopEvent::Recorded`](crate::LoopEvent::Recorded), and
//! [`CompactionReport`] words it.
//!
//! For a session store: `Event::Compacted` is serialized like every
//! event (`{"type":"compacted","trigger":…,"summary":…,"replaced":…,
//! "elided":[…],…}`); `replaced` and `elided` are positions in the log, so
//! the store records events in order, never drops the ones a compaction
//! stands for, and reloads with [`Session::with_history`]: the reloaded
//! session's [`messages`](Session::messages) are what the model read. A
//! replay to an editor maps the event to the same line the live session
//! showed ([`CompactionReport`]).
//!
//! When the system prompt and the tools alone reach the threshold (a
//! window smaller than the fixed prompt, or a tiny `compact_at`), no
//! compaction can get under it: the loop then sends the request as it is,
//! records once an [`Event::Compacted`] that changed nothing, whose
//! [`CompactionReport`] says what to set, and does not try again — no
//! summary request that cannot reach the budget is paid for on every
//! turn — until the prompt or the tools change. `dsh check` refuses such a
//! window before a session starts.
//!
//! [`AgentLoop::compact`] does the same on request (`/compact`), summarizing
//! every turn. If the summary request fails, nothing is recorded: the turn
//! (or the request) fails with [`TurnError::Compaction`], naming the
//! budget and the sizes, and the session is as it was.
//!
//! # The instruction is a section of its own
//!
//! The compaction request is told one thing, owned by this crate: section
//! `compaction:instruction`, a complete section whose provider has text
//! only in an assembly made with [`compaction_context`]. Everywhere else
//! it is empty, so it is not active and leaves every agent's prompt alone;
//! in the compaction request it is the whole system prompt, rendered by
//! `render_prompt` like any other — there is no second composition path.
//! `dsh prompt --format explain` assembles with the same context to show
//! what the compaction request is told.

use std::fmt;
use std::sync::Arc;

use dsh_system_prompt::{AssembleContext, ToolSchema, prompt_section, render_prompt};
use tokio_util::sync::CancellationToken;

use crate::budget::{Assessment, KnownSize};
use crate::history::{View, positioned_messages};
use crate::{
    Agent, AgentLoop, CompactionTrigger, ContextBudget, Event, Image, Message, ModelError,
    ModelRequest, ModelResponse, Session, TurnError,
};

/// The name of the section the compaction request is told.
pub const COMPACTION_SECTION: &str = "compaction:instruction";

/// What the compaction request's model is told: how to summarize.
pub const COMPACTION_INSTRUCTION: &str = "\
You are compacting the conversation of a coding agent with its user so that \
it fits the model's context window. The user's message is a transcript of \
the oldest part of the conversation. Write the summary the agent will read \
in its place and continue from: the user's goals and requests (in their own \
words where the wording matters); decisions made, and why; what was done \
(files read and changed, commands run, and their outcomes); what was learned \
that is still needed; errors met and how they were resolved; and what is \
left to do. Keep file paths, names, numbers and exact error messages; leave \
out what was superseded. Write only the summary, with no preamble.";

/// The marker a compaction request's [`AssembleContext`] carries: the
/// instruction section has text only there.
#[derive(Clone, Copy, Debug, Default)]
pub struct CompactionRequest;

/// The context to assemble a compaction request's prompt with: the global
/// layer, and the [`CompactionRequest`] marker. `render_prompt` of that
/// assembly is what the summary request is told.
pub fn compaction_context() -> AssembleContext {
    AssembleContext::new().with(CompactionRequest)
}

/// Section `compaction:instruction`: complete (the whole prompt) in a
/// compaction request, empty — and so not active — in every other.
#[prompt_section(name = "compaction:instruction", order = 0, complete)]
fn compaction_instruction(cx: &AssembleContext) -> String {
    if cx.get::<CompactionRequest>().is_some() {
        COMPACTION_INSTRUCTION.to_owned()
    } else {
        String::new()
    }
}

pub use crate::history::{ELIDED_BYTES, ELIDED_LINES, SUMMARY_HEADER, elided_result};

/// The request a step is about to send, but its messages: what compaction
/// keeps as it is, and the runtime context it may re-emit.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fixed<'a> {
    /// The rendered system prompt.
    pub(crate) system: &'a str,
    /// The tools.
    pub(crate) tools: &'a [Arc<ToolSchema>],
    /// The rendered runtime context.
    pub(crate) context: &'a str,
}

/// What a compaction did, in the words every front end uses: one line.
///
/// ```
/// use dsh_agent_loop::{CompactionReport, CompactionTrigger, Event};
///
/// let event = Event::Compacted {
///     trigger: CompactionTrigger::Budget,
///     before_tokens: 12_000,
///     after_tokens: 3_000,
///     window: Some(16_000),
///     elided: vec![3, 7],
///     summary: Some("…".into()),
///     replaced: 20,
/// };
/// let report = CompactionReport::of(&event).ok_or("a compaction")?;
/// assert_eq!(
///     report.to_string(),
///     "compacted the conversation: 12000 → 3000 tokens of a 16000-token window \
///      (2 tool results elided, earlier turns summarized)"
/// );
/// # Ok::<(), &str>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactionReport {
    /// Why.
    pub trigger: CompactionTrigger,
    /// The request's tokens before.
    pub before_tokens: u64,
    /// The request's tokens after.
    pub after_tokens: u64,
    /// The context window, if known.
    pub window: Option<u64>,
    /// How many tool results were elided.
    pub elided: usize,
    /// Whether turns were summarized.
    pub summarized: bool,
    /// Whether the compaction could not start: the system prompt and the
    /// tools alone reach the budget (a budget compaction that elided and
    /// summarized nothing is recorded only then), so the request was sent
    /// as it was, and the loop does not try again for that prompt.
    pub unreachable: bool,
}

impl CompactionReport {
    /// The report of a [`Compacted`](Event::Compacted) event; `None` for
    /// any other.
    pub fn of(event: &Event) -> Option<Self> {
        let Event::Compacted {
            trigger,
            before_tokens,
            after_tokens,
            window,
            elided,
            summary,
            ..
        } = event
        else {
            return None;
        };
        Some(Self {
            trigger: *trigger,
            before_tokens: *before_tokens,
            after_tokens: *after_tokens,
            window: *window,
            elided: elided.len(),
            summarized: summary.is_some(),
            unreachable: *trigger == CompactionTrigger::Budget
                && elided.is_empty()
                && summary.is_none(),
        })
    }
}

impl fmt::Display for CompactionReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.unreachable {
            write!(
                f,
                "cannot compact the conversation under its budget: the system prompt and tools \
                 alone reach the point where it compacts"
            )?;
            if let Some(window) = self.window {
                write!(f, " in the {window}-token window")?;
            }
            return write!(
                f,
                " ({} tokens in all); the request is sent as it is and compaction is not tried \
                 again: set a larger `context_window` or `compact_at` in the adapter's table, or \
                 give the agent fewer tools (`dsh check` names the numbers)",
                self.before_tokens
            );
        }
        write!(
            f,
            "compacted the conversation: {} → {} tokens",
            self.before_tokens, self.after_tokens
        )?;
        if let Some(window) = self.window {
            write!(f, " of a {window}-token window")?;
        }
        let mut what = Vec::new();
        if self.elided > 0 {
            let plural = if self.elided == 1 { "" } else { "s" };
            what.push(format!("{} tool result{plural} elided", self.elided));
        }
        if self.summarized {
            what.push("earlier turns summarized".to_owned());
        }
        if self.trigger == CompactionTrigger::Request {
            what.push("on request".to_owned());
        }
        if !what.is_empty() {
            write!(f, " ({})", what.join(", "))?;
        }
        Ok(())
    }
}

/// Records what the API said the request took, so the next step's
/// [`assess`](ContextBudget::assess) counts only what is new.
pub(crate) fn note_usage(session: &mut Session, request: &ModelRequest, answer: &ModelResponse) {
    if let Some(usage) = answer.usage {
        session.known_size = Some(KnownSize {
            tokens: usage.prompt_tokens,
            messages: request.messages.len(),
            prefix: prefix_print(request.system.as_deref().unwrap_or(""), &request.tools),
        });
    }
}

fn prefix_print(system: &str, tools: &[Arc<ToolSchema>]) -> (usize, usize) {
    (system.len(), tools.len())
}

impl AgentLoop {
    /// The pre-step seam: compacts the session when the step's request
    /// reaches the agent's budget. `true` when it did (the messages must
    /// be taken again).
    pub(crate) async fn compact_for_budget(
        &self,
        step: u32,
        agent: &Agent,
        session: &mut Session,
        fixed: Fixed<'_>,
        messages: &[Message],
        cancel: &CancellationToken,
    ) -> Result<bool, TurnError> {
        let budget = agent.budget();
        let known = session.known_size;
        match budget.assess(known, fixed.system, fixed.tools, messages) {
            Assessment::Over { tokens } => {
                if self.prefix_over_budget(agent, session, fixed, tokens) {
                    return Ok(false);
                }
                let compacted = self
                    .compact_with(
                        step,
                        CompactionTrigger::Budget,
                        agent,
                        session,
                        fixed,
                        cancel,
                    )
                    .await?;
                Ok(compacted.is_some())
            }
            Assessment::Below { tokens } => {
                session.known_size = Some(KnownSize {
                    tokens,
                    messages: messages.len(),
                    prefix: prefix_print(fixed.system, fixed.tools),
                });
                Ok(false)
            }
            _ => Ok(false),
        }
    }

    /// Whether the system prompt and tools of `fixed` alone reach the
    /// agent's threshold, so that no compaction can bring a request of
    /// `tokens` under it: then the request is sent as it is, and the first
    /// time for this prefix, an [`Event::Compacted`] that changed nothing
    /// is recorded, whose [`CompactionReport`] says what to do. A summary
    /// request that cannot reach the budget is never sent, on this turn or
    /// any later one, until the prefix changes.
    fn prefix_over_budget(
        &self,
        agent: &Agent,
        session: &mut Session,
        fixed: Fixed<'_>,
        tokens: u64,
    ) -> bool {
        let print = prefix_print(fixed.system, fixed.tools);
        if session.over_budget_prefix == Some(print) {
            return true;
        }
        let budget = agent.budget();
        let Some(threshold) = budget.threshold() else {
            return false;
        };
        if budget.count_prefix(fixed.system, fixed.tools) < threshold {
            return false;
        }
        session.over_budget_prefix = Some(print);
        let event = Event::Compacted {
            trigger: CompactionTrigger::Budget,
            before_tokens: tokens,
            after_tokens: tokens,
            window: budget.window(),
            elided: Vec::new(),
            summary: None,
            replaced: 0,
        };
        self.record(session, event);
        true
    }

    /// Compacts `session` on request (`/compact`), between turns: elides
    /// every tool result but the latest step's and summarizes every turn.
    /// `None` when there was nothing to compact. The outcome is recorded
    /// as an [`Event::Compacted`], which the loop's observers see
    /// ([`LoopEvent::Recorded`](crate::LoopEvent::Recorded)); on failure
    /// nothing is recorded.
    pub async fn compact(
        &self,
        agent: &Agent,
        session: &mut Session,
        cancel: &CancellationToken,
    ) -> Result<Option<CompactionReport>, TurnError> {
        let assembly = self.assemble(agent, session);
        let render_error = |source| TurnError::Render { step: 0, source };
        let system = render_prompt(&assembly).map_err(render_error)?;
        let context = dsh_system_prompt::render_context(&assembly).map_err(render_error)?;
        let fixed = Fixed {
            system: &system,
            tools: &assembly.tools,
            context: &context,
        };
        self.compact_with(0, CompactionTrigger::Request, agent, session, fixed, cancel)
            .await
    }

    /// Compacts towards the budget's target (towards nothing, on
    /// request): elision, then a summary if needed; records the outcome,
    /// then re-emits the runtime context if the summary replaced it.
    async fn compact_with(
        &self,
        step: u32,
        trigger: CompactionTrigger,
        agent: &Agent,
        session: &mut Session,
        fixed: Fixed<'_>,
        cancel: &CancellationToken,
    ) -> Result<Option<CompactionReport>, TurnError> {
        let budget = *agent.budget();
        let plan = Plan::make(&budget, trigger, session.events(), fixed);
        let Some(plan) = plan else {
            return Ok(None);
        };
        let summary = match plan.cut {
            Some(cut) => Some(
                self.summarize(step, agent, &budget, session.events(), &plan, cut, cancel)
                    .await?,
            ),
            None => None,
        };
        let mut event = Event::Compacted {
            trigger,
            before_tokens: plan.before,
            after_tokens: 0,
            window: budget.window(),
            elided: plan.elided,
            summary,
            replaced: plan.cut.unwrap_or(0),
        };
        // The size after: the log as it will read, and the context if the
        // summary took it.
        // A probe that records nothing: the event is recorded once, below.
        let mut probe = session.unrecorded();
        probe.push(event.clone());
        let reemit = probe.context().unwrap_or_default() != fixed.context;
        if reemit {
            probe.push(Event::Context {
                text: fixed.context.to_owned(),
            });
        }
        let after_messages = probe.messages();
        let after =
            budget.count_prefix(fixed.system, fixed.tools) + budget.count_messages(&after_messages);
        if let Event::Compacted { after_tokens, .. } = &mut event {
            *after_tokens = after;
        }
        let report = CompactionReport::of(&event);
        self.record(session, event);
        if reemit {
            self.record(
                session,
                Event::Context {
                    text: fixed.context.to_owned(),
                },
            );
        }
        session.known_size = Some(KnownSize {
            tokens: after,
            messages: after_messages.len(),
            prefix: prefix_print(fixed.system, fixed.tools),
        });
        Ok(report)
    }

    /// Asks the model for the summary of the events before `cut`.
    #[allow(clippy::too_many_arguments, reason = "one private call site")]
    async fn summarize(
        &self,
        step: u32,
        agent: &Agent,
        budget: &ContextBudget,
        events: &[Event],
        plan: &Plan,
        cut: usize,
        cancel: &CancellationToken,
    ) -> Result<String, TurnError> {
        let failed = |source| TurnError::Compaction {
            tokens: plan.before,
            budget: *budget,
            source: Box::new(source),
        };
        let assembly = self.prompt().assemble(&compaction_context());
        let system = render_prompt(&assembly)
            .map_err(|source| failed(TurnError::Render { step, source }))?;
        let request = ModelRequest {
            model: agent.model().to_owned(),
            system: Some(system),
            tools: Vec::new(),
            messages: vec![Message::User {
                text: transcript(events, &plan.elided, cut),
            }],
            // Not the session's cache: this prefix is the instruction's,
            // and sharing the key would only crowd the session's own.
            session: None,
            effort: agent.options().effort.clone(),
            max_tokens: None,
        };
        let answer = match self.ask(step, &request, &|_| {}, cancel).await {
            Ok(answer) => answer,
            Err(TurnError::Cancelled) => return Err(TurnError::Cancelled),
            Err(error) => return Err(failed(error)),
        };
        let summary = answer.text.trim();
        if summary.is_empty() {
            let empty = "the model answered the summary request with no text";
            return Err(failed(TurnError::Model {
                step,
                source: ModelError::Other(empty.into()),
            }));
        }
        Ok(summary.to_owned())
    }
}

/// What a compaction will do, decided before anything is asked or
/// recorded.
struct Plan {
    /// The request's tokens before.
    before: u64,
    /// The tool results to elide, by position.
    elided: Vec<usize>,
    /// With a summary: the position before which the log is summarized.
    cut: Option<usize>,
}

impl Plan {
    /// Elides until the estimate reaches the target, then picks the
    /// fewest oldest turns to summarize that bring it there (all but the
    /// latest turn at most; every turn on request). `None`: nothing to do.
    fn make(
        budget: &ContextBudget,
        trigger: CompactionTrigger,
        events: &[Event],
        fixed: Fixed<'_>,
    ) -> Option<Self> {
        let view = View::of(events);
        let entries = positioned_messages(events, &view);
        let counts: Vec<u64> = entries
            .iter()
            .map(|(_, message)| budget.count_message(message))
            .collect();
        let before = budget.count_prefix(fixed.system, fixed.tools) + counts.iter().sum::<u64>();
        let target = match trigger {
            CompactionTrigger::Request => 0,
            _ => budget.target().unwrap_or(0),
        };

        // Elision: the latest step's results are the model's to read.
        let latest_step = events
            .iter()
            .rposition(|event| matches!(event, Event::AssistantMessage { .. }))
            .unwrap_or(events.len());
        let mut total = before;
        let mut elided = Vec::new();
        for ((position, message), &count) in entries.iter().zip(&counts) {
            if total <= target {
                break;
            }
            let (Some(position), Some(marker)) = (position, elision_of(message)) else {
                continue;
            };
            if *position >= latest_step || view.is_elided(*position) {
                continue;
            }
            let marker = budget.count_message(&Message::User { text: marker });
            total = total - count + marker.min(count);
            elided.push(*position);
        }

        // Summary: cut at a turn's start, keeping the latest turn (on
        // request: after the last event, keeping none).
        let turns: Vec<usize> = (view.start..events.len())
            .filter(|&at| matches!(events[at], Event::UserMessage { .. }))
            .collect();
        let cut = if total <= target {
            None
        } else if trigger == CompactionTrigger::Request {
            (!turns.is_empty()).then_some(events.len())
        } else {
            // Each later turn start is a cut: summarizing what is before
            // it must take a whole turn at least, and the latest turn stays.
            let allowance = target / 5;
            let cuts = turns.get(1..).unwrap_or_default();
            cuts.iter()
                .copied()
                .find(|&cut| {
                    let summarized: u64 = entries
                        .iter()
                        .zip(&counts)
                        .filter(|((position, _), _)| position.is_none_or(|at| at < cut))
                        .map(|(_, count)| count)
                        .sum();
                    total.saturating_sub(summarized) + allowance <= target
                })
                .or_else(|| cuts.last().copied())
        };
        if elided.is_empty() && cut.is_none() {
            return None;
        }
        Some(Self {
            before,
            elided,
            cut,
        })
    }
}

/// The marker that would stand for `message`, a tool result, when
/// eliding it saves something: a shorter text, or images dropped (a
/// short text is worth eliding for its images).
fn elision_of(message: &Message) -> Option<String> {
    let Message::Tool {
        name, text, images, ..
    } = message
    else {
        return None;
    };
    let marker = elided_result(name, text);
    (marker.len() < text.len() || !images.is_empty()).then_some(marker)
}

/// The transcript of the events before `cut`, as the view after this
/// compaction's elisions shows them: what the summary request reads.
fn transcript(events: &[Event], elided: &[usize], cut: usize) -> String {
    let mut view = View::of(events);
    view.elided.extend_from_slice(elided);
    view.elided.sort_unstable();
    let mut out = String::from("<transcript>\n");
    for (position, message) in positioned_messages(events, &view) {
        if position.is_some_and(|at| at >= cut) {
            break;
        }
        match message {
            Message::User { text } => push_entry(&mut out, "user", &text),
            Message::UserImage { image } => push_entry(&mut out, "user", &image.described()),
            Message::Assistant {
                text, tool_calls, ..
            } => {
                if !text.is_empty() {
                    push_entry(&mut out, "assistant", &text);
                }
                for call in tool_calls {
                    let head = format!("assistant calls `{}`", call.name);
                    push_entry(&mut out, &head, &call.arguments);
                }
            }
            Message::Tool {
                name,
                text,
                is_error,
                images,
                ..
            } => {
                let head = if is_error {
                    format!("`{name}` failed")
                } else {
                    format!("`{name}` result")
                };
                push_entry(&mut out, &head, &Image::described_after(&text, &images));
            }
        }
    }
    out.push_str("</transcript>");
    out
}

fn push_entry(out: &mut String, head: &str, text: &str) {
    out.push('[');
    out.push_str(head);
    out.push_str("]\n");
    out.push_str(text);
    out.push_str("\n\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolCall;

    #[test]
    fn a_marker_keeps_the_first_lines_within_bytes() {
        let long = "x".repeat(1_000);
        let marker = elided_result("bash", &long);
        assert!(marker.contains("1000 bytes, 1 lines"), "{marker}");
        assert!(marker.len() < 600, "{}", marker.len());
        let many: String = (1..=20).map(|n| format!("line {n}\n")).collect();
        let marker = elided_result("read", &many);
        assert!(marker.ends_with("line 5"), "{marker}");
    }

    #[test]
    fn the_instruction_is_empty_but_in_a_compaction_request() {
        assert_eq!(compaction_instruction(&AssembleContext::default()), "");
        assert_eq!(
            compaction_instruction(&compaction_context()),
            COMPACTION_INSTRUCTION
        );
    }

    #[test]
    fn the_transcript_shows_calls_results_and_elisions() {
        let events = vec![
            Event::UserMessage { text: "hi".into() },
            Event::AssistantMessage {
                text: String::new(),
                thoughts: Vec::new(),
            },
            Event::ToolCall {
                call: ToolCall::new("c1", "read", "{\"file_path\":\"a\"}"),
            },
            Event::ToolResult {
                call_id: "c1".into(),
                name: "read".into(),
                text: "y".repeat(900),
                is_error: false,
                images: Vec::new(),
            },
            Event::UserMessage {
                text: "next".into(),
            },
        ];
        let text = transcript(&events, &[3], 4);
        assert!(text.contains("[user]\nhi"), "{text}");
        assert!(
            text.contains("[assistant calls `read`]\n{\"file_path\":\"a\"}"),
            "{text}"
        );
        assert!(
            text.contains("[`read` result]\n[elided by compaction"),
            "{text}"
        );
        assert!(!text.contains("next"), "{text}");
    }
}
