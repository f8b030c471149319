//! A turn's events as `session/update` notifications: the answer's text as
//! it streams (and what the model thinks before it, as
//! `agent_thought_chunk`s), each tool call from `pending` through `in_progress` to
//! `completed` or `failed` (with its kind and locations, and the files it
//! changed as diffs), and the todo list as the session's plan.
//!
//! A call whose tool streams what its command writes (`bash`) is shown
//! live: as a terminal when the client advertised
//! `_meta.terminal_output` in its capabilities (Zed's convention, as
//! claude-agent-acp and codex-acp send it: `_meta.terminal_info` and a
//! `terminal` content on the `tool_call`, `_meta.terminal_output` chunks on
//! `tool_call_update`s, `_meta.terminal_exit` with the final status), or
//! else as the output so far, in the call's content, at most
//! [`LIVE_TAIL_BYTES`] of it.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    self, ContentChunk, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionNotification, SessionUpdate, ToolCallContent, ToolCallLocation, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields,
};
use dsh_agent_loop::{
    CompactionReport, Event, Image, LoopEvent, LoopObserver, SessionId, StepResponse, ToolCall,
};
use dsh_session_store::{RecordedChange, SessionWriter, Store};
use dsh_tool_todo::{TodoStatus, TodoWriteArgs};
use dsh_tools::{
    CommandExit, CommandOutput, CommandReport, FileChange, ToolCallContext, ToolKind, ToolRegistry,
};
use parking_lot::Mutex;
use serde_json::json;

/// How much of a running command's output the content of its call shows
/// when the client has no terminal: the last bytes, whole characters.
pub(super) const LIVE_TAIL_BYTES: usize = 16 * 1024;

/// The unchanged lines a file's diff shows around what changed.
const DIFF_CONTEXT_LINES: usize = 3;

/// What a call's content says above the output when earlier output was
/// left out.
const EARLIER_OUTPUT: &str = "[earlier output not shown]\n";

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
    /// Whether running commands are shown as terminals (the client's
    /// `_meta.terminal_output`).
    terminal: bool,
    /// Without terminals: each running call's output so far, its tail.
    output: Mutex<HashMap<String, String>>,
    /// Where the session's title is read once a prompt gives it one, until
    /// it is sent: the store, which makes it of the first prompt.
    title: Mutex<Option<Store>>,
    /// Where the files the calls change are recorded as shown, for a load
    /// to show them again: the session's writer, when it is recorded.
    changes: Mutex<Option<Arc<SessionWriter>>>,
    /// On a replay: the files each call changed, as recorded, by call.
    recorded_changes: Mutex<BTreeMap<String, Vec<RecordedChange>>>,
}

/// What the client is sent of the loop: every event, the streamed text
/// and thoughts, each answer's context usage and each call's progress (of
/// this session only).
impl LoopObserver for Updates {
    fn observe(&self, event: LoopEvent<'_>) {
        match event {
            LoopEvent::Recorded { session, event } => self.event(session, event),
            LoopEvent::Text { session, piece } => self.text(session, piece),
            LoopEvent::Thought { session, piece } => self.thought(session, piece),
            LoopEvent::Response(response) => self.answered(response),
            LoopEvent::Progress {
                session,
                call,
                text,
            } => self.progress(session, call, text),
            LoopEvent::Step(_) => {}
        }
    }
}

impl Updates {
    pub(super) fn new(
        session: SessionId,
        acp_session: schema::SessionId,
        tools: ToolRegistry,
        cwd: Option<&Path>,
        terminal: bool,
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
                terminal,
                output: Mutex::new(HashMap::new()),
                title: Mutex::new(None),
                changes: Mutex::new(None),
                recorded_changes: Mutex::new(BTreeMap::new()),
            }),
        }
    }

    /// Sends the session's title, as `session_info_update`, once `store`
    /// has one for it: after the user's message that gives it.
    pub(super) fn title_from(&self, store: Store) {
        *self.inner.title.lock() = Some(store);
    }

    /// The session's title, if it is awaited and the store has it now;
    /// awaited still while the store has none (an empty prompt gives none).
    fn titled(&self) {
        let mut awaited = self.inner.title.lock();
        let Some(store) = awaited.as_ref() else {
            return;
        };
        // A store that fails here says so when it records: no title then.
        match store.info(self.inner.session.as_str()) {
            Ok(info) if info.title.is_empty() => return,
            Ok(info) => self.send(SessionUpdate::SessionInfoUpdate(
                schema::SessionInfoUpdate::new().title(info.title),
            )),
            Err(_) => {}
        }
        *awaited = None;
    }

    /// Records the files the calls change, as shown, with `writer`.
    pub(super) fn record_changes(&self, writer: Arc<SessionWriter>) {
        *self.inner.changes.lock() = Some(writer);
    }

    /// The files each call changed, as recorded, for the
    /// [`replay`](Self::replay).
    pub(super) fn replay_changes(&self, changes: BTreeMap<String, Vec<RecordedChange>>) {
        *self.inner.recorded_changes.lock() = changes;
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

    /// A piece of what the model thinks before it answers, as
    /// `agent_thought_chunk` (an editor shows it collapsed).
    pub(super) fn thought(&self, session: &SessionId, piece: &str) {
        if self.is_for(session) && !piece.is_empty() {
            self.send(SessionUpdate::AgentThoughtChunk(ContentChunk::new(
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
                let mut shown_call = schema::ToolCall::new(call.id.clone(), shown.title)
                    .kind(shown.kind)
                    .status(ToolCallStatus::Pending)
                    .locations(shown.locations)
                    .raw_input(shown.input);
                if self.is_terminal(&call.name) {
                    let cwd = self.inner.cwd.as_ref().map(|cwd| cwd.display().to_string());
                    let info = json!({ "terminal_id": call.id, "cwd": cwd });
                    shown_call = shown_call
                        .content(vec![terminal_content(&call.id)])
                        .meta(meta("terminal_info", info));
                }
                self.send(SessionUpdate::ToolCall(shown_call));
            }
            Event::ToolResult {
                call_id,
                name,
                text,
                is_error,
                images,
            } => {
                self.finished(call_id, name, text, *is_error, images);
                let call = self.inner.calls.lock().remove(call_id);
                if let Some(plan) = call.filter(|_| !is_error).and_then(|call| plan_of(&call)) {
                    self.send(SessionUpdate::Plan(plan));
                }
            }
            Event::UserMessage { .. } => self.titled(),
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
    /// not echo), each answer's thoughts and text, each call `pending`, then
    /// `in_progress` when it ran, then its final status and content, and
    /// the plans, and the title after the prompt that gave it (when
    /// [`title_from`](Self::title_from) the store). The differences: an
    /// answer (or a thought) streamed in pieces is replayed as one chunk,
    /// and the usage
    /// after each response is not (the store keeps none).
    pub(super) fn replay(&self, events: &[Event]) {
        let session = self.inner.session.clone();
        for event in events {
            match event {
                Event::UserMessage { text } => self.send(SessionUpdate::UserMessageChunk(
                    ContentChunk::new(schema::ContentBlock::from(text.as_str())),
                )),
                Event::UserImage { image } => self.send(SessionUpdate::UserMessageChunk(
                    ContentChunk::new(schema::ContentBlock::Image(schema::ImageContent::new(
                        image.data.clone(),
                        image.mime_type.clone(),
                    ))),
                )),
                Event::AssistantMessage { text, thoughts } => {
                    // As live: the thoughts stream before the text.
                    for thought in thoughts {
                        self.thought(&session, thought.text());
                    }
                    self.text(&session, text);
                }
                Event::ToolResult { call_id, .. } => {
                    // Calls the approval refused, of a tool the agent
                    // lacked, or that the turn's end cut off, never ran,
                    // and were never `in_progress`.
                    let call = self.inner.calls.lock().get(call_id).cloned();
                    if let Some(call) = call.filter(|_| !event.never_ran()) {
                        self.started(&call);
                        let changes = self.inner.recorded_changes.lock().remove(call_id);
                        for change in changes.iter().flatten() {
                            self.show_change(call_id, change);
                        }
                        self.replay_output(&call, event);
                    }
                    self.event(&session, event);
                }
                event => self.event(&session, event),
            }
            if matches!(event, Event::UserMessage { .. }) {
                // As live: the title after the prompt that gave it.
                self.titled();
            }
        }
    }

    /// The context a model response of the session leaves, against the
    /// agent's window: a `usage_update` after each response.
    pub(super) fn answered(&self, response: &StepResponse<'_>) {
        if self.is_for(&response.session.id) {
            let window = response.agent.budget().window();
            self.usage(response.context_tokens(), window);
        }
    }

    /// A `usage_update`: `used` tokens of the context `window`. None when
    /// the window is unknown: the editor's meter needs a size, and a
    /// guessed one would mislead.
    pub(super) fn usage(&self, used: u64, window: Option<u64>) {
        if let Some(size) = window {
            self.send(SessionUpdate::UsageUpdate(schema::UsageUpdate::new(
                used, size,
            )));
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

    /// A call of this session changed a file: the diff of the changed
    /// region, and where the change starts, so the editor can show and
    /// follow it; recorded as shown, when the session is, so a load shows
    /// it again.
    pub(super) fn changed(&self, call_id: &str, change: &FileChange) {
        let shown = region_of(change);
        if let Some(writer) = self.inner.changes.lock().as_ref()
            && let Err(error) = writer.record_change(call_id, &shown)
        {
            // stdout is the protocol's.
            let problem = dsh_deployment::Problem::new(format!(
                "the change of `{}` by call `{call_id}` was not recorded, and a load \
                 will not show it: {error}",
                shown.path.display()
            ))
            .warning();
            crate::diagnostics::Reporter::for_stderr().report(&[problem]);
        }
        self.show_change(call_id, &shown);
    }

    /// Shows a change of a file by call `call_id`, after the ones it made
    /// before: the diffs so far, and where this one starts.
    fn show_change(&self, call_id: &str, change: &RecordedChange) {
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
        let location = ToolCallLocation::new(change.path.clone()).line(change.line);
        let fields = ToolCallUpdateFields::new()
            .content(content)
            .locations(vec![location]);
        self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call_id.to_owned(),
            fields,
        )));
    }

    /// A call of this session ended: its final status and content. The
    /// content replaces what the call showed: the diffs stay, before the
    /// result's text; a terminal stays, with how its command ended.
    fn finished(&self, call_id: &str, name: &str, text: &str, is_error: bool, images: &[Image]) {
        let status = if is_error {
            ToolCallStatus::Failed
        } else {
            ToolCallStatus::Completed
        };
        self.inner.output.lock().remove(call_id);
        let mut content = self.inner.diffs.lock().remove(call_id).unwrap_or_default();
        let terminal = self.is_terminal(name);
        if terminal {
            content.insert(0, terminal_content(call_id));
        }
        // A terminal shows a command's output, marker included; a call
        // that failed to run says why in text.
        if !terminal || is_error {
            content.push(ToolCallContent::from(text));
        }
        // The images the tool returned, after its text, as the model
        // reads them.
        content.extend(images.iter().map(|image| {
            ToolCallContent::from(schema::ContentBlock::Image(schema::ImageContent::new(
                image.data.clone(),
                image.mime_type.clone(),
            )))
        }));
        let fields = ToolCallUpdateFields::new().status(status).content(content);
        let mut update = ToolCallUpdate::new(call_id.to_owned(), fields);
        if terminal {
            let exit = if is_error {
                CommandExit::default()
            } else {
                dsh_tool_bash::split_result(text).1
            };
            let exit = json!({
                "terminal_id": call_id,
                "exit_code": exit.code,
                "signal": exit.signal,
            });
            update = update.meta(meta("terminal_exit", exit));
        }
        self.send(SessionUpdate::ToolCallUpdate(update));
    }

    /// Attaches where a call of this session whose tool streams reports
    /// what its command writes.
    pub(super) fn attach_output(
        &self,
        session: &SessionId,
        call: &ToolCall,
        cx: &mut ToolCallContext,
    ) {
        if !self.is_for(session) || !self.streams(&call.name) {
            return;
        }
        let (updates, call_id) = (self.clone(), call.id.clone());
        cx.extensions.insert(CommandOutput::new(move |report| {
            if let CommandReport::Output(text) = report {
                updates.command_output(&call_id, text);
            }
        }));
    }

    /// Text a running call's command wrote: a chunk of its terminal, or
    /// its output so far in its content.
    fn command_output(&self, call_id: &str, text: &str) {
        let update = if self.inner.terminal {
            let chunk = json!({ "terminal_id": call_id, "data": text });
            ToolCallUpdate::new(call_id.to_owned(), ToolCallUpdateFields::new())
                .meta(meta("terminal_output", chunk))
        } else {
            let so_far = {
                let mut output = self.inner.output.lock();
                let so_far = output.entry(call_id.to_owned()).or_default();
                so_far.push_str(text);
                keep_tail(so_far, LIVE_TAIL_BYTES);
                so_far.clone()
            };
            let content = vec![ToolCallContent::from(so_far)];
            ToolCallUpdate::new(
                call_id.to_owned(),
                ToolCallUpdateFields::new().content(content),
            )
        };
        self.send(SessionUpdate::ToolCallUpdate(update));
    }

    /// A recorded call that streamed its output, as it showed live: the
    /// output the result kept, in one piece.
    fn replay_output(&self, call: &ToolCall, result: &Event) {
        if let Event::ToolResult {
            text,
            is_error: false,
            ..
        } = result
            && self.streams(&call.name)
        {
            let (output, _) = dsh_tool_bash::split_result(text);
            if !output.is_empty() {
                self.command_output(&call.id, output);
            }
        }
    }

    /// Whether calls of tool `name` stream what their command writes.
    fn streams(&self, name: &str) -> bool {
        (self.inner.tools.get(name)).is_some_and(|tool| tool.streams_output())
    }

    /// Whether calls of tool `name` are shown as terminals.
    fn is_terminal(&self, name: &str) -> bool {
        self.inner.terminal && self.streams(name)
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

/// The region of a change an editor is shown: the lines that differ, with
/// up to [`DIFF_CONTEXT_LINES`] unchanged lines around them, before and
/// after; a new file whole. A region, not the whole file, since it is
/// recorded with the session for a load to show again.
fn region_of(change: &FileChange) -> RecordedChange {
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
    let start = same_start.saturating_sub(DIFF_CONTEXT_LINES);
    let end = |lines: &[&str]| (lines.len() - same_end + DIFF_CONTEXT_LINES).min(lines.len());
    RecordedChange::new(
        path,
        Some(old[start..end(&old)].concat()),
        new[start..end(&new)].concat(),
        line,
    )
}

/// A call's terminal, named by the call's id, as content.
fn terminal_content(call_id: &str) -> ToolCallContent {
    ToolCallContent::Terminal(schema::Terminal::new(call_id.to_owned()))
}

/// `_meta` with one key.
fn meta(key: &str, value: serde_json::Value) -> schema::Meta {
    let mut meta = schema::Meta::new();
    meta.insert(key.to_owned(), value);
    meta
}

/// Cuts `text` to its last `max` bytes or fewer (whole characters), said
/// by a line above them.
fn keep_tail(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let mut cut = text.len() - (max - EARLIER_OUTPUT.len());
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    text.replace_range(..cut, EARLIER_OUTPUT);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The region (before, after) shown of a change of `old` to `new`.
    fn region(old: Option<&str>, new: &str) -> (Option<String>, String) {
        let change = FileChange {
            path: PathBuf::from("/p/a.txt"),
            old_text: old.map(str::to_owned),
            new_text: new.to_owned(),
            first_changed_line: 1,
        };
        let shown = region_of(&change);
        (shown.old_text, shown.new_text)
    }

    fn numbered(lines: std::ops::RangeInclusive<u32>) -> String {
        lines.map(|n| format!("{n}\n")).collect()
    }

    #[test]
    fn a_region_is_the_changed_lines_with_three_around_them() {
        let old = numbered(1..=12);
        // A line replaced in the middle.
        let new = old.replace("6\n", "six\n");
        assert_eq!(
            region(Some(&old), &new),
            (Some(numbered(3..=9)), "3\n4\n5\nsix\n7\n8\n9\n".to_owned())
        );
        // Lines removed at the end, none after them to show.
        assert_eq!(
            region(Some(&old), &numbered(1..=10)),
            (Some(numbered(8..=12)), numbered(8..=10))
        );
        // A line added at the start, none before it.
        let added = format!("0\n{old}");
        assert_eq!(
            region(Some(&old), &added),
            (Some(numbered(1..=3)), format!("0\n{}", numbered(1..=3)))
        );
        // A last line without its newline, changed.
        assert_eq!(
            region(Some("a\nb"), "a\nc"),
            (Some("a\nb".to_owned()), "a\nc".to_owned())
        );
        // A new file, whole.
        assert_eq!(region(None, &old), (None, old.clone()));
    }
}
