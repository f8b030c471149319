//! A turn's events as `session/update` notifications: the answer's text as
//! it streams, each tool call from `pending` through `in_progress` to
//! `completed` or `failed` (with its kind and locations, and the files it
//! changed as diffs), and the todo list as the session's plan.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    self, ContentChunk, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionNotification, SessionUpdate, ToolCallContent, ToolCallLocation, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields,
};
use dsh_agent_loop::{CompactionReport, Event, SessionId, ToolCall};
use dsh_tool_todo::{TodoStatus, TodoWriteArgs};
use dsh_tools::{FileChange, ToolKind, ToolRegistry};
use parking_lot::Mutex;

/// Sends the updates of one ACP session's turn. Events of other loop
/// sessions (an in-process child's) are not the client's: they are left
/// out.
#[derive(Clone, Debug)]
pub(super) struct Updates {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The loop's session this ACP session is.
    session: SessionId,
    acp_session: schema::SessionId,
    tools: ToolRegistry,
    /// The session's working directory, which relative paths of calls
    /// are relative to.
    cwd: Option<PathBuf>,
    cx: ConnectionTo<Client>,
    /// The calls of the turn by id, for what their results need of them.
    calls: Mutex<HashMap<String, ToolCall>>,
    /// The diffs of the files each call changed, shown with its result.
    diffs: Mutex<HashMap<String, Vec<ToolCallContent>>>,
}

impl Updates {
    pub(super) fn new(
        session: SessionId,
        acp_session: schema::SessionId,
        tools: ToolRegistry,
        cwd: Option<&Path>,
        cx: ConnectionTo<Client>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                session,
                acp_session,
                tools,
                cwd: cwd.map(Path::to_path_buf),
                cx,
                calls: Mutex::new(HashMap::new()),
                diffs: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Whether `session` is the one these updates are for.
    pub(super) fn is_for(&self, session: &SessionId) -> bool {
        *session == self.inner.session
    }

    /// A piece of the answer's text.
    pub(super) fn text(&self, session: &SessionId, piece: &str) {
        if self.is_for(session) && !piece.is_empty() {
            self.send(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                schema::ContentBlock::from(piece),
            )));
        }
    }

    /// An event of the session's log.
    pub(super) fn event(&self, session: &SessionId, event: &Event) {
        if !self.is_for(session) {
            return;
        }
        match event {
            Event::ToolCall { call } => {
                self.inner
                    .calls
                    .lock()
                    .insert(call.id.clone(), call.clone());
                let shown = self.describe(call);
                self.send(SessionUpdate::ToolCall(
                    schema::ToolCall::new(call.id.clone(), shown.title)
                        .kind(shown.kind)
                        .status(ToolCallStatus::Pending)
                        .locations(shown.locations)
                        .raw_input(shown.input),
                ));
            }
            Event::ToolResult {
                call_id,
                text,
                is_error,
                ..
            } => {
                let status = if *is_error {
                    ToolCallStatus::Failed
                } else {
                    ToolCallStatus::Completed
                };
                // The content replaces what the call showed: the diffs
                // stay, before the result's text.
                let mut content = self.inner.diffs.lock().remove(call_id).unwrap_or_default();
                content.push(ToolCallContent::from(text.as_str()));
                let fields = ToolCallUpdateFields::new().status(status).content(content);
                self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    call_id.clone(),
                    fields,
                )));
                let call = self.inner.calls.lock().remove(call_id);
                if let Some(plan) = call.filter(|_| !is_error).and_then(|call| plan_of(&call)) {
                    self.send(SessionUpdate::Plan(plan));
                }
            }
            Event::Compacted { .. } => {
                if let Some(report) = CompactionReport::of(event) {
                    self.say(&report.to_string());
                }
            }
            _ => {}
        }
    }

    /// A recorded session's history as the updates its turns sent live,
    /// by the same mapping: the user's messages (which a live turn does
    /// not echo), each answer's text, each call `pending`, then
    /// `in_progress` when it ran, then its final status and content, and
    /// the plans. The one difference: an answer streamed in pieces is
    /// replayed as one chunk.
    pub(super) fn replay(&self, events: &[Event]) {
        let session = self.inner.session.clone();
        for event in events {
            match event {
                Event::UserMessage { text } => self.send(SessionUpdate::UserMessageChunk(
                    ContentChunk::new(schema::ContentBlock::from(text.as_str())),
                )),
                Event::AssistantMessage { text } => self.text(&session, text),
                Event::ToolResult { call_id, .. } => {
                    // Calls the approval refused, of a tool the agent
                    // lacked, or that the turn's end cut off, never ran,
                    // and were never `in_progress`.
                    let call = self.inner.calls.lock().get(call_id).cloned();
                    if let Some(call) = call.filter(|_| !event.never_ran()) {
                        self.started(&call);
                    }
                    self.event(&session, event);
                }
                event => self.event(&session, event),
            }
        }
    }

    /// A line of dsh's own in the session (not the model's): a message
    /// of its own.
    pub(super) fn say(&self, line: &str) {
        self.send(SessionUpdate::AgentMessageChunk(ContentChunk::new(
            schema::ContentBlock::from(format!("[{line}]\n\n")),
        )));
    }

    /// What a running call of this session reports it is doing.
    pub(super) fn progress(&self, session: &SessionId, call: &ToolCall, text: &str) {
        if self.is_for(session) {
            let fields = ToolCallUpdateFields::new().content(vec![ToolCallContent::from(text)]);
            self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                call.id.clone(),
                fields,
            )));
        }
    }

    /// A call of this session changed a file: the diff, and where the
    /// change starts, so the editor can show and follow it.
    pub(super) fn changed(&self, call_id: &str, change: &FileChange) {
        let diff = ToolCallContent::from(
            Diff::new(change.path.clone(), change.new_text.clone())
                .old_text(change.old_text.clone()),
        );
        let content = {
            let mut diffs = self.inner.diffs.lock();
            let diffs = diffs.entry(call_id.to_owned()).or_default();
            diffs.push(diff);
            diffs.clone()
        };
        let location = ToolCallLocation::new(change.path.clone()).line(change.first_changed_line);
        let fields = ToolCallUpdateFields::new()
            .content(content)
            .locations(vec![location]);
        self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call_id.to_owned(),
            fields,
        )));
    }

    /// A call of this session starts running.
    pub(super) fn started(&self, call: &ToolCall) {
        let fields = ToolCallUpdateFields::new().status(ToolCallStatus::InProgress);
        self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call.id.clone(),
            fields,
        )));
    }

    /// What the client shows of a call.
    pub(super) fn describe(&self, call: &ToolCall) -> Shown {
        let input = serde_json::from_str(&call.arguments)
            .unwrap_or_else(|_| serde_json::Value::String(call.arguments.clone()));
        // An MCP tool is resolved, not registered: the session's own
        // servers' too.
        let cx = dsh_tools::ToolCallContext::new(self.inner.session.as_str());
        let (title, kind, locations) = match self.inner.tools.resolve(&call.name, &cx) {
            Some(tool) => (tool.title(&input), tool.kind(), tool.locations(&input)),
            None => (call.name.clone(), ToolKind::Other, Vec::new()),
        };
        // The editor opens absolute paths.
        let locations = locations
            .into_iter()
            .map(|location| {
                let path = match &self.inner.cwd {
                    Some(cwd) => cwd.join(&location.path),
                    None => location.path,
                };
                ToolCallLocation::new(path).line(location.line)
            })
            .collect();
        Shown {
            title,
            kind: acp_kind(kind),
            locations,
            input,
        }
    }

    fn send(&self, update: SessionUpdate) {
        let notification = SessionNotification::new(self.inner.acp_session.clone(), update);
        // The connection is gone only when the client is: nothing to tell.
        let _ = self.inner.cx.send_notification(notification);
    }
}

/// What the client shows of a call: the tool's title for it, its kind,
/// its locations, and the model's arguments.
#[derive(Debug)]
pub(super) struct Shown {
    pub(super) title: String,
    pub(super) kind: schema::ToolKind,
    /// The places the call is about, absolute.
    pub(super) locations: Vec<ToolCallLocation>,
    pub(super) input: serde_json::Value,
}

/// The plan a successful `todo_write` call leaves: its list, as the todo
/// crate defines it.
fn plan_of(call: &ToolCall) -> Option<Plan> {
    if call.name != dsh_tool_todo::TOOL_NAME {
        return None;
    }
    let args: TodoWriteArgs = serde_json::from_str(&call.arguments).ok()?;
    let entries = args
        .todos
        .into_iter()
        .map(|item| {
            let status = match item.status {
                TodoStatus::Pending => PlanEntryStatus::Pending,
                TodoStatus::InProgress => PlanEntryStatus::InProgress,
                TodoStatus::Completed => PlanEntryStatus::Completed,
            };
            PlanEntry::new(item.content, PlanEntryPriority::Medium, status)
        })
        .collect();
    Some(Plan::new(entries))
}

/// A tool's kind as ACP names it.
fn acp_kind(kind: ToolKind) -> schema::ToolKind {
    match kind {
        ToolKind::Read => schema::ToolKind::Read,
        ToolKind::Edit => schema::ToolKind::Edit,
        ToolKind::Delete => schema::ToolKind::Delete,
        ToolKind::Move => schema::ToolKind::Move,
        ToolKind::Search => schema::ToolKind::Search,
        ToolKind::Execute => schema::ToolKind::Execute,
        ToolKind::Think => schema::ToolKind::Think,
        ToolKind::Fetch => schema::ToolKind::Fetch,
        _ => schema::ToolKind::Other,
    }
}
