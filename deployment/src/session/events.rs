//! What a session shows a person: one closed enum, [`SessionEvent`],
//! that every front end renders, and the [`Narrator`] that makes it from
//! what the loop does — live, and again from a recorded history.
//!
//! The enum is closed on purpose: a variant added here fails to compile
//! in a front end that does not render it. Everything a front end needs
//! is in the event as data — a call's title, kind and places, a command's
//! output and how it ended, the plan a todo list is, the region of a
//! changed file — so no front end reads a tool's text.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_agent_loop::{CompactionReport, Event, Image, StepResponse, ToolCall};
use dsh_session_store::{RecordedChange, RecordedQuestion, SessionWriter, Store};
use dsh_tools::{CommandExit, FileChange, ToolCallContext, ToolKind, ToolRegistry};
use parking_lot::Mutex;
use serde::Serialize;

use super::steering::Steering;
use crate::Problem;

/// The id of a message of a session — the person's, or one answer of the
/// model with its thoughts: `<session>/<n>`, where `n` is the place in
/// the session's log of the event that starts it (the person's message;
/// the step whose answer it is). A live turn and a replay of it give the
/// same ids.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct MessageId(pub String);

impl MessageId {
    fn at(session: &dsh_agent_loop::SessionId, position: usize) -> Self {
        Self(format!("{session}/{position}"))
    }
}

/// Something a session shows a person. It serializes as a JSON object
/// tagged by `type` (`{"type": "text", "text": "Hi", "message": "s1/3"}`), what a front end
/// that speaks JSON sends on as it is.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SessionEvent {
    /// The person's message, as a replay shows it (a live turn does not
    /// echo what the person just sent).
    UserText {
        /// The text.
        text: String,
        /// Its message's id ([`MessageId`]).
        message: MessageId,
    },
    /// An image the person attached, as a replay shows it.
    UserImage {
        /// The image.
        image: Image,
    },
    /// A step asks the model; its answer is awaited.
    Asking,
    /// A piece of the answer as the model writes it (a replayed answer:
    /// the whole of it).
    Text {
        /// The text.
        text: String,
        /// The answer's id: every piece of one answer has the same, the
        /// next answer another ([`MessageId`]).
        message: MessageId,
    },
    /// A piece of what the model thinks before it answers.
    Thought {
        /// The text.
        text: String,
        /// The answer's id, as its text's.
        message: MessageId,
    },
    /// The model's answer of a step is complete (its text has been
    /// shown piece by piece).
    Answered,
    /// The model called a tool: shown before the call may run.
    CallMade(CallView),
    /// A call may run, and runs now.
    CallRunning {
        /// The call.
        call_id: String,
    },
    /// What a running call says it is doing.
    CallProgress {
        /// The call.
        call_id: String,
        /// Its tool.
        tool: String,
        /// What it said.
        text: String,
    },
    /// Text a running call's command wrote, as it wrote it (whole
    /// characters).
    CallOutput {
        /// The call.
        call_id: String,
        /// Its tool.
        tool: String,
        /// The text since the last report.
        text: String,
    },
    /// A call changed a file: the region a person is shown, as the
    /// session records it.
    FileChanged {
        /// The call.
        call_id: String,
        /// The changed region, before and after.
        change: RecordedChange,
    },
    /// A call ended.
    CallEnded(CallEnd),
    /// The session's plan, as its todo list now is.
    Plan {
        /// Its entries, in order.
        entries: Vec<PlanEntry>,
    },
    /// The context the last answer leaves, of the agent's window.
    Usage {
        /// Tokens in the context.
        used: u64,
        /// The agent's context window.
        window: u64,
    },
    /// The session's title, once a prompt gives it one.
    Title {
        /// The text.
        text: String,
    },
    /// A line of dsh's own in the session (not the model's): a rule that
    /// applied, what a command answered.
    Notice {
        /// The text.
        text: String,
    },
    /// The conversation was compacted.
    Compacted {
        /// Its id in the session (as a message's, [`MessageId`]): a live
        /// compaction and its replay give the same.
        id: MessageId,
        /// What it did, in a line.
        report: String,
        /// The summary that now stands for the earlier turns, if it took
        /// one.
        summary: Option<String>,
    },
    /// What a person typed ran nothing, and why: an unknown command, a
    /// server's prompt that cannot be got, a choice there is not.
    Refused {
        /// The text.
        text: String,
    },
    /// The session's steering changed (its mode, model or effort).
    Steered {
        /// The steering now.
        steering: Steering,
    },
    /// A server's question is shown as a call of its own (a sampling
    /// request), before the person is asked about it; it ends with
    /// [`SessionEvent::QuestionEnded`]. A loaded session shows it again,
    /// within the call that its server served.
    QuestionShown {
        /// The question's call (`sampling-…`).
        call_id: String,
        /// Its title: the server that asks.
        title: String,
        /// What it sends the model (escaped, cut).
        text: String,
        /// Its input: the server, the system prompt, the most tokens.
        input: serde_json::Value,
    },
    /// A question's own call ended (a sampling request shown as a call):
    /// `answered` when the model answered it.
    QuestionEnded {
        /// The question's call.
        call_id: String,
        /// Whether the model answered.
        answered: bool,
    },
    /// The turn is over.
    TurnEnded,
    /// Something went wrong that the session survives (the store failed
    /// to record a choice or a change): a warning for the person.
    Problem {
        /// The problem.
        #[serde(serialize_with = "message_of")]
        problem: Problem,
    },
}

/// A tool call as a person sees it.
#[derive(Debug, Clone, Serialize)]
pub struct CallView {
    /// The call's id.
    pub id: String,
    /// Its tool.
    pub tool: String,
    /// The tool's title for it (`ls -la`, `src/lib.rs`).
    pub title: String,
    /// What kind of thing it does.
    pub kind: ToolKind,
    /// The places it is about, absolute, with a line where known.
    pub locations: Vec<(PathBuf, Option<u32>)>,
    /// The model's arguments (a string when they are no JSON).
    pub input: serde_json::Value,
    /// Whether it runs a command whose output is reported live.
    pub streams: bool,
    /// The session's working directory, where its command runs.
    pub cwd: Option<PathBuf>,
}

/// How a call ended.
#[derive(Debug, Clone, Serialize)]
pub struct CallEnd {
    /// The call.
    pub call_id: String,
    /// Its tool.
    pub tool: String,
    /// The result's text, as the model reads it.
    pub text: String,
    /// Whether the call failed.
    pub is_error: bool,
    /// Whether it never ran (refused, cut off, unknown tool).
    pub never_ran: bool,
    /// The images the tool returned.
    pub images: Vec<Image>,
    /// A command's output and exit, for a call whose tool streams it.
    pub command: Option<CommandEnd>,
}

/// What a command a call ran wrote, and how it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CommandEnd {
    /// Its output, without the exit marker.
    pub output: String,
    /// How it ended.
    pub exit: CommandExit,
}

impl CallEnd {
    /// The result in brief: its first line, how many more lines, and its
    /// last line when that is a marker such as `[exit code: 1]`.
    pub fn brief(&self) -> ResultBrief<'_> {
        let lines: Vec<&str> = self.text.lines().collect();
        let first = lines.first().copied().unwrap_or("");
        let last = lines.last().map(|last| last.trim()).unwrap_or("");
        let marker =
            (lines.len() > 1 && last.starts_with('[') && last.ends_with(']')).then_some(last);
        let more = lines
            .len()
            .saturating_sub(1 + usize::from(marker.is_some()));
        ResultBrief {
            first,
            more,
            marker,
        }
    }

    /// A result of images and no text, in words, for a front end that
    /// shows no image (`1 image: image/png, 70 bytes`); `None` when it has
    /// text or no image.
    pub fn images_only(&self) -> Option<String> {
        if !self.text.trim().is_empty() || self.images.is_empty() {
            return None;
        }
        let each: Vec<String> = (self.images.iter())
            .map(|image| format!("{}, {} bytes", image.mime_type, image.decoded_len()))
            .collect();
        let count = self.images.len();
        let noun = if count == 1 { "image" } else { "images" };
        Some(format!("{count} {noun}: {}", each.join("; ")))
    }
}

/// A result in brief ([`CallEnd::brief`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultBrief<'a> {
    /// The first line (empty when there is no output).
    pub first: &'a str,
    /// How many lines follow it, the marker left out.
    pub more: usize,
    /// The last line, when it is a marker (`[exit code: 1]`).
    pub marker: Option<&'a str>,
}

/// One entry of a session's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanEntry {
    /// What is to be done.
    pub content: String,
    /// How far it is.
    pub status: dsh_tool_todo::TodoStatus,
}

/// A problem as its message.
fn message_of<S: serde::Serializer>(problem: &Problem, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(problem.message())
}

/// The unchanged lines a file's shown region keeps around what changed.
const REGION_CONTEXT_LINES: usize = 3;

/// Turns what the loop does in one session into [`SessionEvent`]s: live,
/// from the loop's events, and on a load, from the recorded history by
/// the same functions, so a replayed call has the live one's view.
#[derive(Clone)]
pub(crate) struct Narrator {
    inner: Arc<Inner>,
}

struct Inner {
    session: dsh_agent_loop::SessionId,
    tools: ToolRegistry,
    cwd: Option<PathBuf>,
    show: Arc<dyn Fn(SessionEvent) + Send + Sync>,
    /// The calls of the turn by id, for what their results need of them.
    calls: Mutex<HashMap<String, ToolCall>>,
    /// Where the title is read once a prompt gives it one.
    title: Mutex<Option<Store>>,
    /// Where the files the calls change are recorded as shown.
    changes: Option<Arc<SessionWriter>>,
    /// On a replay: the files each call changed, as recorded, by call.
    recorded_changes: Mutex<BTreeMap<String, Vec<RecordedChange>>>,
    /// On a replay: the questions each call's server put to the person,
    /// as recorded, by call.
    recorded_questions: Mutex<BTreeMap<String, Vec<RecordedQuestion>>>,
    /// How many events the session's log holds, and the id of the answer
    /// being written: what the pieces of an answer are told by.
    log: Mutex<(usize, MessageId)>,
}

impl std::fmt::Debug for Narrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Narrator")
            .field("session", &self.inner.session)
            .finish_non_exhaustive()
    }
}

impl Narrator {
    /// The narrator of `session` (with its working directory `cwd`),
    /// whose calls are of `tools`, showing through `show`; the files its
    /// calls change are recorded by `changes`, and its title read from
    /// `title` once a prompt gives it one.
    pub(crate) fn new(
        (session, history): (dsh_agent_loop::SessionId, usize),
        (tools, cwd): (ToolRegistry, Option<&Path>),
        (changes, title): (Option<Arc<SessionWriter>>, Option<Store>),
        show: Arc<dyn Fn(SessionEvent) + Send + Sync>,
    ) -> Self {
        let session_id = session.clone();
        Self {
            inner: Arc::new(Inner {
                session,
                tools,
                cwd: cwd.map(Path::to_path_buf),
                show,
                calls: Mutex::new(HashMap::new()),
                title: Mutex::new(title),
                changes,
                recorded_changes: Mutex::new(BTreeMap::new()),
                recorded_questions: Mutex::new(BTreeMap::new()),
                log: Mutex::new((history, MessageId::at(&session_id, history))),
            }),
        }
    }

    /// An event the session's loop appended to its log: counted, so the
    /// pieces of an answer get the id of the step they belong to; then
    /// shown ([`logged`](Self::logged)).
    pub(crate) fn recorded(&self, event: &Event) {
        let position = {
            let mut log = self.inner.log.lock();
            if matches!(event, Event::StepStart { .. }) {
                log.1 = MessageId::at(&self.inner.session, log.0);
            }
            log.0 += 1;
            log.0 - 1
        };
        self.logged(position, event);
    }

    /// The id of the answer being written.
    fn answer(&self) -> MessageId {
        self.inner.log.lock().1.clone()
    }

    /// Shows `event`.
    pub(crate) fn show(&self, event: SessionEvent) {
        (self.inner.show)(event);
    }

    /// Whether `session` is this narrator's (an in-process child's events
    /// are not the person's).
    pub(crate) fn is_for(&self, session: &dsh_agent_loop::SessionId) -> bool {
        *session == self.inner.session
    }

    /// An event appended to the session's log at `position`.
    pub(crate) fn logged(&self, position: usize, event: &Event) {
        match event {
            Event::StepStart { .. } => self.show(SessionEvent::Asking),
            Event::AssistantMessage { .. } => self.show(SessionEvent::Answered),
            Event::ToolCall { call } => {
                (self.inner.calls.lock()).insert(call.id.clone(), call.clone());
                self.show(SessionEvent::CallMade(self.view(call)));
            }
            Event::ToolResult { .. } => self.ended(event),
            Event::UserMessage { .. } => self.titled(),
            Event::TurnEnd { .. } => self.show(SessionEvent::TurnEnded),
            Event::Note { about, .. } => self.show(SessionEvent::Notice {
                text: about.clone(),
            }),
            Event::Compacted { summary, .. } => {
                if let Some(report) = CompactionReport::of(event) {
                    self.show(SessionEvent::Compacted {
                        id: MessageId::at(&self.inner.session, position),
                        report: report.to_string(),
                        summary: summary.clone(),
                    });
                }
            }
            _ => {}
        }
    }

    /// A call ended: how, and the plan a `todo_write` call leaves.
    fn ended(&self, event: &Event) {
        let Event::ToolResult {
            call_id,
            name,
            text,
            is_error,
            images,
        } = event
        else {
            return;
        };
        let streams = self.streams(name);
        let command = (streams && !is_error).then(|| {
            let (output, exit) = dsh_tool_bash::split_result(text);
            CommandEnd {
                output: output.to_owned(),
                exit,
            }
        });
        self.show(SessionEvent::CallEnded(CallEnd {
            call_id: call_id.clone(),
            tool: name.clone(),
            text: text.clone(),
            is_error: *is_error,
            never_ran: event.never_ran(),
            images: images.clone(),
            command,
        }));
        let call = self.inner.calls.lock().remove(call_id);
        if let Some(plan) = call.filter(|_| !is_error).and_then(|call| plan_of(&call)) {
            self.show(SessionEvent::Plan { entries: plan });
        }
    }

    /// The title, if the store has one now; awaited still while it has
    /// none (an empty prompt gives none).
    fn titled(&self) {
        let mut awaited = self.inner.title.lock();
        let Some(store) = awaited.as_ref() else {
            return;
        };
        // A store that fails here says so when it records: no title then.
        match store.info(self.inner.session.as_str()) {
            Ok(info) if info.title.is_empty() => return,
            Ok(info) => self.show(SessionEvent::Title { text: info.title }),
            Err(_) => {}
        }
        *awaited = None;
    }

    /// A piece of the answer.
    pub(crate) fn text(&self, piece: &str) {
        if !piece.is_empty() {
            self.show(SessionEvent::Text {
                text: piece.to_owned(),
                message: self.answer(),
            });
        }
    }

    /// A piece of what the model thinks.
    pub(crate) fn thought(&self, piece: &str) {
        if !piece.is_empty() {
            self.show(SessionEvent::Thought {
                text: piece.to_owned(),
                message: self.answer(),
            });
        }
    }

    /// What a running call says it is doing.
    pub(crate) fn progress(&self, call: &ToolCall, text: &str) {
        self.show(SessionEvent::CallProgress {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            text: text.to_owned(),
        });
    }

    /// The context a model response leaves, against the agent's window
    /// (none when the window is unknown: a guessed size would mislead).
    pub(crate) fn answered(&self, response: &StepResponse<'_>) {
        if let Some(window) = response.agent.budget().window() {
            let used = response.context_tokens();
            self.show(SessionEvent::Usage { used, window });
        }
    }

    /// A call of this session changed a file: the region shown, recorded
    /// as shown when the session is, so that a load shows it again.
    pub(crate) fn changed(&self, call_id: &str, change: &FileChange) {
        let shown = region_of(change);
        if let Some(writer) = &self.inner.changes
            && let Err(error) = writer.record_change(call_id, &shown)
        {
            self.show(SessionEvent::Problem {
                problem: Problem::new(format!(
                    "the change of `{}` by call `{call_id}` was not recorded, and a load \
                     will not show it: {error}",
                    shown.path.display()
                ))
                .warning(),
            });
        }
        self.show(SessionEvent::FileChanged {
            call_id: call_id.to_owned(),
            change: shown,
        });
    }

    /// Attaches to the context of `call` where it reports the files it
    /// changes and what its command writes, as this session's events.
    pub(crate) fn attach(&self, call: &ToolCall, cx: &mut ToolCallContext) {
        let (narrator, call_id) = (self.clone(), call.id.clone());
        cx.extensions
            .insert(dsh_tools::FileChanges::new(move |change| {
                narrator.changed(&call_id, change);
            }));
        if self.streams(&call.name) {
            let (narrator, call_id, tool) = (self.clone(), call.id.clone(), call.name.clone());
            cx.extensions
                .insert(dsh_tools::CommandOutput::new(move |report| {
                    if let dsh_tools::CommandReport::Output(text) = report {
                        narrator.show(SessionEvent::CallOutput {
                            call_id: call_id.clone(),
                            tool: tool.clone(),
                            text: text.to_owned(),
                        });
                    }
                }));
        }
    }

    /// Whether calls of tool `name` stream what their command writes.
    fn streams(&self, name: &str) -> bool {
        (self.inner.tools.get(name)).is_some_and(|tool| tool.streams_output())
    }

    /// How a person sees `call`: its tool's title, kind and places (an
    /// MCP tool resolved, the session's own servers' too), its arguments.
    pub(crate) fn view(&self, call: &ToolCall) -> CallView {
        let input = serde_json::from_str(&call.arguments)
            .unwrap_or_else(|_| serde_json::Value::String(call.arguments.clone()));
        let cx = ToolCallContext::new(self.inner.session.as_str());
        let (title, kind, locations) = match self.inner.tools.resolve(&call.name, &cx) {
            Some(tool) => (tool.title(&input), tool.kind(), tool.locations(&input)),
            None => (call.name.clone(), ToolKind::Other, Vec::new()),
        };
        // A front end opens absolute paths.
        let locations = (locations.into_iter())
            .map(|location| {
                let path = match &self.inner.cwd {
                    Some(cwd) => cwd.join(&location.path),
                    None => location.path,
                };
                (path, location.line)
            })
            .collect();
        CallView {
            id: call.id.clone(),
            tool: call.name.clone(),
            title,
            kind,
            locations,
            input,
            streams: self.streams(&call.name),
            cwd: self.inner.cwd.clone(),
        }
    }

    /// A recorded history as the events its turns showed live, by the
    /// same mapping: the person's messages (which a live turn does not
    /// echo), each answer's thoughts and text, each call made, running
    /// when it ran (with the files it changed, as recorded, and its
    /// command's output in one piece), and ended; the plans, and the
    /// title after the prompt that gave it. The differences: an answer
    /// streamed in pieces is one piece, no usage follows a response (the
    /// store keeps none), and a call's questions (its server's sampling
    /// requests, shown as calls) follow the files it changed.
    pub(crate) fn replay(&self, events: &[Event], recorded: RecordedShown) {
        let RecordedShown {
            changes,
            questions,
            title,
        } = recorded;
        *self.inner.recorded_changes.lock() = changes;
        *self.inner.recorded_questions.lock() = questions;
        *self.inner.title.lock() = title;
        for (position, event) in events.iter().enumerate() {
            match event {
                Event::UserMessage { text } => {
                    self.show(SessionEvent::UserText {
                        text: text.clone(),
                        message: MessageId::at(&self.inner.session, position),
                    });
                    self.titled();
                }
                Event::UserImage { image } => self.show(SessionEvent::UserImage {
                    image: image.clone(),
                }),
                Event::AssistantMessage { text, thoughts } => {
                    // As live: the thoughts stream before the text.
                    for thought in thoughts {
                        self.thought(thought.text());
                    }
                    self.text(text);
                    self.show(SessionEvent::Answered);
                }
                Event::ToolResult { call_id, .. } => {
                    self.replay_run(call_id, event);
                    self.logged(position, event);
                }
                Event::StepStart { .. } => {
                    self.inner.log.lock().1 = MessageId::at(&self.inner.session, position);
                }
                Event::TurnEnd { .. } => {}
                event => self.logged(position, event),
            }
        }
    }

    /// What a recorded call showed while it ran: running, its changes,
    /// its command's output. Calls the approval refused, of a tool the
    /// agent lacked, or that the turn's end cut off, never ran.
    fn replay_run(&self, call_id: &str, result: &Event) {
        let call = self.inner.calls.lock().get(call_id).cloned();
        let Some(call) = call.filter(|_| !result.never_ran()) else {
            return;
        };
        self.show(SessionEvent::CallRunning {
            call_id: call.id.clone(),
        });
        let changes = self.inner.recorded_changes.lock().remove(call_id);
        for change in changes.into_iter().flatten() {
            self.show(SessionEvent::FileChanged {
                call_id: call.id.clone(),
                change,
            });
        }
        let questions = self.inner.recorded_questions.lock().remove(call_id);
        for question in questions.into_iter().flatten() {
            self.show(SessionEvent::QuestionShown {
                call_id: question.id.clone(),
                title: question.title,
                text: question.text,
                input: question.input,
            });
            self.show(SessionEvent::QuestionEnded {
                call_id: question.id,
                answered: question.answered,
            });
        }
        if let Event::ToolResult {
            text,
            is_error: false,
            ..
        } = result
            && self.streams(&call.name)
        {
            let (output, _) = dsh_tool_bash::split_result(text);
            if !output.is_empty() {
                self.show(SessionEvent::CallOutput {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    text: output.to_owned(),
                });
            }
        }
    }
}

/// What a replay shows besides the events, as the store recorded it: the
/// files each call changed, the questions each call's server put to the
/// person, and where the title is read.
#[derive(Default)]
pub(crate) struct RecordedShown {
    pub(crate) changes: BTreeMap<String, Vec<RecordedChange>>,
    pub(crate) questions: BTreeMap<String, Vec<RecordedQuestion>>,
    pub(crate) title: Option<Store>,
}

/// The plan a successful `todo_write` call leaves: its list, as the todo
/// crate reads it.
fn plan_of(call: &ToolCall) -> Option<Vec<PlanEntry>> {
    if call.name != dsh_tool_todo::TOOL_NAME {
        return None;
    }
    let args: dsh_tool_todo::TodoWriteArgs = serde_json::from_str(&call.arguments).ok()?;
    let entries = (args.todos.into_iter())
        .map(|item| PlanEntry {
            content: item.content,
            status: item.status,
        })
        .collect();
    Some(entries)
}

/// The region of a change a person is shown: the lines that differ, with
/// up to [`REGION_CONTEXT_LINES`] unchanged lines around them, before and
/// after; a new file whole. A region, not the whole file, since it is
/// recorded with the session for a load to show again.
pub(crate) fn region_of(change: &FileChange) -> RecordedChange {
    let (path, line) = (change.path.clone(), change.first_changed_line);
    let Some(old) = &change.old_text else {
        return RecordedChange::new(path, None, change.new_text.clone(), line);
    };
    let old: Vec<&str> = old.split_inclusive('\n').collect();
    let new: Vec<&str> = change.new_text.split_inclusive('\n').collect();
    let same_start = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let same_end = (old.iter().rev().zip(new.iter().rev()))
        .take(old.len().min(new.len()) - same_start)
        .take_while(|(a, b)| a == b)
        .count();
    let start = same_start.saturating_sub(REGION_CONTEXT_LINES);
    let end = |lines: &[&str]| (lines.len() - same_end + REGION_CONTEXT_LINES).min(lines.len());
    RecordedChange::new(
        path,
        Some(old[start..end(&old)].concat()),
        new[start..end(&new)].concat(),
        line,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(text: &str) -> CallEnd {
        CallEnd {
            call_id: "c".to_owned(),
            tool: "bash".to_owned(),
            text: text.to_owned(),
            is_error: false,
            never_ran: false,
            images: Vec::new(),
            command: None,
        }
    }

    #[test]
    fn a_brief_is_the_first_line_the_count_and_the_marker() {
        let end = ended("a\nb\nc\n[exit code: 3]");
        assert_eq!(
            end.brief(),
            ResultBrief {
                first: "a",
                more: 2,
                marker: Some("[exit code: 3]")
            }
        );
        let one = ended("[exit code: 0]");
        assert_eq!(
            one.brief().marker,
            None,
            "a one-line result is its first line"
        );
        assert_eq!(ended("").brief().first, "");
    }

    #[test]
    fn a_region_is_the_changed_lines_with_three_around_them() {
        let numbered = |lines: std::ops::RangeInclusive<u32>| -> String {
            lines.map(|n| format!("{n}\n")).collect()
        };
        let old = numbered(1..=20);
        let new = old.replace("10\n", "ten\n");
        let region = region_of(&FileChange {
            path: PathBuf::from("/f"),
            old_text: Some(old),
            new_text: new,
            first_changed_line: 10,
        });
        assert_eq!(region.old_text.as_deref(), Some(numbered(7..=13).as_str()));
        assert_eq!(region.new_text, "7\n8\n9\nten\n11\n12\n13\n");
    }
}
