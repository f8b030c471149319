//! The person of an ACP session is at an editor: the session's events as
//! `session/update` notifications, its questions as
//! `session/request_permission` and `elicitation/create`, and the
//! editor's files lent to its tools ([`SessionFiles`]).
//!
//! A call whose tool streams what its command writes (`bash`) is shown
//! live: as a terminal when the client advertised
//! `_meta.terminal_output` in its capabilities (Zed's convention, as
//! claude-agent-acp and codex-acp send it: `_meta.terminal_info` and a
//! `terminal` content on the `tool_call`, `_meta.terminal_output` chunks on
//! `tool_call_update`s, `_meta.terminal_exit` with the final status), or
//! else as the output so far, in the call's content, at most
//! [`LIVE_TAIL_BYTES`] of it.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    self, ContentBlock, ContentChunk, Diff, FileSystemCapabilities, Plan, PlanEntry,
    PlanEntryPriority, PlanEntryStatus, SessionNotification, SessionUpdate, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use dsh_agent_loop::{ToolCall, async_trait};
use dsh_deployment::host::Host;
use dsh_deployment::policy::sampling::sampling_input;
use dsh_deployment::session::{
    Answer, CallEnd, CallView, Person, Question, SessionEvent, Steering,
};
use dsh_session_store::RecordedChange;
use dsh_tool_mcp::{ElicitAnswer, Elicitation, Elicits};
use dsh_tool_todo::TodoStatus;
use dsh_tools::{ToolCallContext, ToolKind};
use parking_lot::Mutex;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::elicit;
use super::fs::SessionFiles;

/// How much of a running command's output the content of its call shows
/// when the client has no terminal: the last bytes, whole characters.
pub(super) const LIVE_TAIL_BYTES: usize = 16 * 1024;

/// What a call's content says above the output when earlier output was
/// left out.
const EARLIER_OUTPUT: &str = "[earlier output not shown]\n";

const ALLOW: &str = "allow";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT: &str = "reject";
const REJECT_ALWAYS: &str = "reject_always";

/// The person of one ACP session, at the editor.
#[derive(Debug)]
pub(super) struct EditorPerson {
    cx: ConnectionTo<Client>,
    /// Whether running commands are shown as terminals (the client's
    /// `_meta.terminal_output`).
    terminal: bool,
    /// Whether dsh's own lines are `notice`s (the client's
    /// `session.notices`), else `[…]` text.
    notices: bool,
    /// Whether compactions are `compaction_update`s (the client's
    /// `session.compaction`).
    compaction: bool,
    /// What the editor's `initialize` said it elicits.
    elicits: Elicits,
    /// The editor's file-system capabilities.
    fs: FileSystemCapabilities,
    /// The session, once it is open ([`bind`](Self::bind)): its id, and
    /// the editor's files and boundary, lent to every call.
    bound: OnceLock<(schema::SessionId, SessionFiles)>,
    /// The host, whose choices the config options announce.
    host: Arc<Host>,
    shown: Mutex<Shown>,
}

/// What the editor was shown of the calls in flight.
#[derive(Debug, Default)]
struct Shown {
    /// The calls whose command streams its output.
    streaming: HashSet<String>,
    /// The diffs of the files each call changed, shown with its result.
    diffs: HashMap<String, Vec<ToolCallContent>>,
    /// Without terminals: each running call's output so far, its tail.
    output: HashMap<String, String>,
}

impl EditorPerson {
    pub(super) fn new(
        cx: ConnectionTo<Client>,
        (terminal, (notices, compaction), elicits): (bool, (bool, bool), Elicits),
        fs: FileSystemCapabilities,
        host: Arc<Host>,
    ) -> Self {
        Self {
            cx,
            terminal,
            notices,
            compaction,
            elicits,
            fs,
            bound: OnceLock::new(),
            host,
            shown: Mutex::new(Shown::default()),
        }
    }

    /// The session is open as `id`: what it shows goes there from now on.
    pub(super) fn bind(&self, id: schema::SessionId) {
        let files = SessionFiles::new(&self.fs, id.clone(), self.cx.clone());
        let _ = self.bound.set((id, files));
    }

    /// The session's id, once it is open.
    fn id(&self) -> Option<&schema::SessionId> {
        self.bound.get().map(|(id, _)| id)
    }

    fn send(&self, update: SessionUpdate) {
        // Nothing is shown before the session is open: it has no id yet.
        let Some(id) = self.id() else {
            return;
        };
        let notification = SessionNotification::new(id.clone(), update);
        // The connection is gone only when the client is: nothing to tell.
        let _ = self.cx.send_notification(notification);
    }

    fn update(&self, call_id: &str, fields: ToolCallUpdateFields) {
        let update = ToolCallUpdate::new(call_id.to_owned(), fields);
        self.send(SessionUpdate::ToolCallUpdate(update));
    }

    /// A line of dsh's own in the session (not the model's): a `notice`
    /// where the editor shows them, else text in brackets.
    fn say(&self, line: &str, severity: schema::NoticeSeverity) {
        if self.notices {
            self.send(SessionUpdate::Notice(schema::Notice::new(severity, line)));
        } else {
            self.send(message(format!("[{line}]\n\n")));
        }
    }

    /// A compaction: a `compaction_update`, done, with its summary, where
    /// the editor shows them (`session.compaction`); else a line.
    fn compacted(&self, id: String, report: &str, summary: Option<String>) {
        if !self.compaction {
            return self.say(report, schema::NoticeSeverity::Info);
        }
        let summary: Vec<ContentBlock> = summary.into_iter().map(ContentBlock::from).collect();
        let update =
            schema::CompactionUpdate::new(id, schema::CompactionStatus::Completed).summary(summary);
        self.send(SessionUpdate::CompactionUpdate(update));
    }

    /// A server's question shown as a call, pending: announced before it
    /// is asked, so a permission request names a call the editor knows
    /// (and a load shows it again the same way).
    fn question_shown(&self, id: String, title: String, text: String, input: serde_json::Value) {
        let content = vec![ToolCallContent::from(ContentBlock::from(text))];
        let call = schema::ToolCall::new(id, title)
            .kind(schema::ToolKind::Other)
            .status(ToolCallStatus::Pending)
            .content(content)
            .raw_input(input);
        self.send(SessionUpdate::ToolCall(call));
    }

    /// A call the model made, pending.
    fn made(&self, view: &CallView) {
        let mut call = schema::ToolCall::new(view.id.clone(), view.title.clone())
            .name(view.tool.clone())
            .kind(acp_kind(view.kind))
            .status(ToolCallStatus::Pending)
            .locations(locations(view))
            .raw_input(view.input.clone());
        if view.streams {
            self.shown.lock().streaming.insert(view.id.clone());
        }
        if self.terminal && view.streams {
            let cwd = view.cwd.as_ref().map(|cwd| cwd.display().to_string());
            let info = json!({ "terminal_id": view.id, "cwd": cwd });
            call =
                (call.content(vec![terminal_content(&view.id)])).meta(meta("terminal_info", info));
        }
        self.send(SessionUpdate::ToolCall(call));
    }

    /// Text a running call's command wrote: a chunk of its terminal, or
    /// its output so far in its content.
    fn output(&self, call_id: &str, text: &str) {
        if self.terminal {
            let chunk = json!({ "terminal_id": call_id, "data": text });
            let update = ToolCallUpdate::new(call_id.to_owned(), ToolCallUpdateFields::new())
                .meta(meta("terminal_output", chunk));
            return self.send(SessionUpdate::ToolCallUpdate(update));
        }
        let so_far = {
            let mut shown = self.shown.lock();
            let so_far = shown.output.entry(call_id.to_owned()).or_default();
            so_far.push_str(text);
            keep_tail(so_far, LIVE_TAIL_BYTES);
            so_far.clone()
        };
        self.update(
            call_id,
            ToolCallUpdateFields::new().content(vec![so_far.into()]),
        );
    }

    /// A file a call changed: the diffs so far, and where this one starts.
    fn changed(&self, call_id: &str, change: &RecordedChange) {
        let diff = ToolCallContent::from(
            Diff::new(change.path.clone(), change.new_text.clone())
                .old_text(change.old_text.clone()),
        );
        let content = {
            let mut shown = self.shown.lock();
            let diffs = shown.diffs.entry(call_id.to_owned()).or_default();
            diffs.push(diff);
            diffs.clone()
        };
        let location = ToolCallLocation::new(change.path.clone()).line(change.line);
        let fields = (ToolCallUpdateFields::new().content(content)).locations(vec![location]);
        self.update(call_id, fields);
    }

    /// A call ended: its final status and content. The content replaces
    /// what the call showed: the diffs stay, before the result's text; a
    /// terminal stays, with how its command ended.
    fn ended(&self, end: &CallEnd) {
        let status = match end.is_error {
            true => ToolCallStatus::Failed,
            false => ToolCallStatus::Completed,
        };
        let (mut content, streams) = {
            let mut shown = self.shown.lock();
            shown.output.remove(&end.call_id);
            let diffs = shown.diffs.remove(&end.call_id).unwrap_or_default();
            (diffs, shown.streaming.remove(&end.call_id))
        };
        let terminal = self.terminal && streams;
        if terminal {
            content.insert(0, terminal_content(&end.call_id));
        }
        // A terminal shows a command's output, marker included; a call
        // that failed to run says why in text.
        if !terminal || end.is_error {
            content.push(ToolCallContent::from(end.text.as_str()));
        }
        // The images the tool returned, after its text, as the model
        // reads them.
        content.extend(end.images.iter().map(|image| {
            ToolCallContent::from(ContentBlock::Image(schema::ImageContent::new(
                image.data.clone(),
                image.mime_type.clone(),
            )))
        }));
        let fields = ToolCallUpdateFields::new().status(status).content(content);
        let mut update = ToolCallUpdate::new(end.call_id.clone(), fields);
        if terminal {
            let exit = end.command.clone().unwrap_or_default().exit;
            let exit = json!({
                "terminal_id": end.call_id,
                "exit_code": exit.code,
                "signal": exit.signal,
            });
            update = update.meta(meta("terminal_exit", exit));
        }
        self.send(SessionUpdate::ToolCallUpdate(update));
    }

    /// `session/request_permission`, its outcome as an answer.
    async fn permission(
        &self,
        call: ToolCallUpdate,
        options: Vec<schema::PermissionOption>,
    ) -> Answer {
        let Some(id) = self.id() else {
            return Answer::Unanswerable("the session is not open yet".to_owned());
        };
        let request = schema::RequestPermissionRequest::new(id.clone(), call, options);
        match self.cx.send_request(request).block_task().await {
            Ok(response) => match response.outcome {
                schema::RequestPermissionOutcome::Selected(selected) => {
                    match &*selected.option_id.0 {
                        ALLOW => Answer::Once,
                        ALLOW_ALWAYS => Answer::Always,
                        REJECT_ALWAYS => Answer::Never,
                        _ => Answer::No,
                    }
                }
                _ => Answer::Withdrawn,
            },
            Err(error) => {
                Answer::Unanswerable(format!("the editor could not be asked: {}", error.message))
            }
        }
    }

    fn steered(&self, steering: &Steering) {
        let options = super::steering::config_options(&self.host, steering);
        self.send(SessionUpdate::ConfigOptionUpdate(
            schema::ConfigOptionUpdate::new(options),
        ));
        self.send(SessionUpdate::CurrentModeUpdate(
            schema::CurrentModeUpdate::new(steering.mode.id),
        ));
    }
}

#[async_trait]
impl Person for EditorPerson {
    fn show(&self, event: SessionEvent) {
        match event {
            SessionEvent::UserText { text, message } => self.send(SessionUpdate::UserMessageChunk(
                ContentChunk::new(ContentBlock::from(text))
                    .message_id(schema::MessageId::new(message.0)),
            )),
            SessionEvent::UserImage { image } => {
                self.send(SessionUpdate::UserMessageChunk(ContentChunk::new(
                    ContentBlock::Image(schema::ImageContent::new(image.data, image.mime_type)),
                )))
            }
            SessionEvent::Text { text, message } => self.send(SessionUpdate::AgentMessageChunk(
                ContentChunk::new(ContentBlock::from(text))
                    .message_id(schema::MessageId::new(message.0)),
            )),
            SessionEvent::Thought { text, message } => self.send(SessionUpdate::AgentThoughtChunk(
                ContentChunk::new(ContentBlock::from(text))
                    .message_id(schema::MessageId::new(message.0)),
            )),
            SessionEvent::CallMade(view) => self.made(&view),
            SessionEvent::CallRunning { call_id } => {
                self.update(
                    &call_id,
                    ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
                );
            }
            SessionEvent::CallProgress { call_id, text, .. } => {
                self.update(
                    &call_id,
                    ToolCallUpdateFields::new().content(vec![text.into()]),
                );
            }
            SessionEvent::CallOutput { call_id, text, .. } => self.output(&call_id, &text),
            SessionEvent::FileChanged { call_id, change } => self.changed(&call_id, &change),
            SessionEvent::CallEnded(end) => self.ended(&end),
            SessionEvent::Plan { entries } => self.send(SessionUpdate::Plan(plan(entries))),
            SessionEvent::Usage { used, window } => {
                self.send(SessionUpdate::UsageUpdate(schema::UsageUpdate::new(
                    used, window,
                )));
            }
            SessionEvent::Title { text } => self.send(SessionUpdate::SessionInfoUpdate(
                schema::SessionInfoUpdate::new().title(text),
            )),
            SessionEvent::Notice { text } => self.say(&text, schema::NoticeSeverity::Info),
            SessionEvent::Compacted {
                id,
                report,
                summary,
            } => self.compacted(id.0, &report, summary),
            SessionEvent::Refused { text } => self.say(&text, schema::NoticeSeverity::Warning),
            SessionEvent::Steered { steering } => self.steered(&steering),
            SessionEvent::QuestionShown {
                call_id,
                title,
                text,
                input,
            } => self.question_shown(call_id, title, text, input),
            SessionEvent::QuestionEnded { call_id, answered } => {
                let status = match answered {
                    true => ToolCallStatus::Completed,
                    false => ToolCallStatus::Failed,
                };
                self.update(&call_id, ToolCallUpdateFields::new().status(status));
            }
            // stdout is the protocol's: dsh's own problems go to stderr.
            SessionEvent::Problem { problem } => {
                crate::diagnostics::Reporter::for_stderr().report(&[problem]);
            }
            SessionEvent::Asking | SessionEvent::Answered | SessionEvent::TurnEnded => {}
        }
    }

    async fn ask(&self, question: Question<'_>, _cancel: &CancellationToken) -> Answer {
        let (id, fields, options) = match question {
            Question::Call {
                call,
                always,
                never,
            } => {
                use schema::PermissionOptionKind::{AllowAlways, RejectAlways};
                let mut options = allow_or_reject();
                let (always, never) = (always.to_owned(), never.to_owned());
                options.insert(
                    1,
                    schema::PermissionOption::new(ALLOW_ALWAYS, always, AllowAlways),
                );
                options.push(schema::PermissionOption::new(
                    REJECT_ALWAYS,
                    never,
                    RejectAlways,
                ));
                let fields = ToolCallUpdateFields::new()
                    .title(call.title.clone())
                    .kind(acp_kind(call.kind))
                    .status(ToolCallStatus::Pending)
                    .locations(locations(call))
                    .raw_input(call.input.clone());
                (call.id.as_str(), fields, options)
            }
            Question::Sampling {
                call_id,
                title,
                described,
                request,
            } => {
                // The call was announced ([`SessionEvent::QuestionShown`]).
                let content = vec![ToolCallContent::from(ContentBlock::from(described))];
                let fields = ToolCallUpdateFields::new()
                    .title(title.to_owned())
                    .kind(schema::ToolKind::Other)
                    .status(ToolCallStatus::Pending)
                    .content(content)
                    .raw_input(sampling_input(request));
                (call_id, fields, allow_or_reject())
            }
            Question::Outside {
                call_id,
                tool,
                path,
            } => {
                let fields = ToolCallUpdateFields::new()
                    .title(format!("{tool} {} (outside the workspace)", path.display()))
                    .kind(schema::ToolKind::Edit)
                    .locations(vec![ToolCallLocation::new(path)]);
                (call_id, fields, allow_or_reject())
            }
        };
        let call = ToolCallUpdate::new(id.to_owned(), fields);
        self.permission(call, options).await
    }

    fn elicits(&self) -> Elicits {
        self.elicits
    }

    async fn elicit(&self, elicitation: &Elicitation, _cancel: &CancellationToken) -> ElicitAnswer {
        match self.id() {
            Some(id) => elicit::ask_editor(&self.cx, id, elicitation).await,
            None => ElicitAnswer::Decline,
        }
    }

    fn lend(&self, _call: &ToolCall, cx: &mut ToolCallContext) {
        if let Some((_, files)) = self.bound.get() {
            files.lend(cx);
        }
    }
}

/// Allow or reject, this once.
fn allow_or_reject() -> Vec<schema::PermissionOption> {
    vec![
        schema::PermissionOption::new(ALLOW, "Allow", schema::PermissionOptionKind::AllowOnce),
        schema::PermissionOption::new(REJECT, "Reject", schema::PermissionOptionKind::RejectOnce),
    ]
}

/// An agent message with `text`.
fn message(text: impl Into<ContentBlock>) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(text.into()))
}

/// A call's places, as the editor opens them.
fn locations(view: &CallView) -> Vec<ToolCallLocation> {
    (view.locations.iter())
        .map(|(path, line)| ToolCallLocation::new(path.clone()).line(*line))
        .collect()
}

/// The session's plan, as ACP says it.
fn plan(entries: Vec<dsh_deployment::session::PlanEntry>) -> Plan {
    let entries = (entries.into_iter())
        .map(|entry| {
            let status = match entry.status {
                TodoStatus::Pending => PlanEntryStatus::Pending,
                TodoStatus::InProgress => PlanEntryStatus::InProgress,
                TodoStatus::Completed => PlanEntryStatus::Completed,
            };
            PlanEntry::new(entry.content, PlanEntryPriority::Medium, status)
        })
        .collect();
    Plan::new(entries)
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

/// A tool's kind as ACP says it.
pub(super) fn acp_kind(kind: ToolKind) -> schema::ToolKind {
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

    #[test]
    fn a_long_output_keeps_its_tail_in_whole_characters() {
        let mut text = "é".repeat(20);
        keep_tail(&mut text, EARLIER_OUTPUT.len() + 5);
        assert!(text.starts_with(EARLIER_OUTPUT), "{text}");
        assert!(text.len() <= EARLIER_OUTPUT.len() + 5, "{text}");
    }
}
