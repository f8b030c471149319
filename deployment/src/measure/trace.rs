//! `Trace`: how much of each model request repeats the one before it, byte
//! for byte — the prefix a provider's prompt cache can serve — and where
//! that prefix broke when it did. `dsh run --trace FILE` writes it, and
//! every `dsh run` ends with its one-line [`Summary`].
//!
//! It is computed from what the loop shows its observers alone (the
//! trace is one, [`LoopObserver`]): `LoopEvent::Step` shows exactly what
//! a step sends (the assembly, the system prompt, the messages),
//! `LoopEvent::Response` the usage the API reported. Requests are
//! measured in the canonical serialization of [`crate::measure::canonical_request`]
//! (the system prompt, then the tools, then the messages); the loop and
//! the adapters know nothing of it.
//!
//! `--trace` writes one JSON object a line, one per request, once its
//! answer is in (a request that got none, once the session moves on or
//! ends):
//!
//! ```json
//! {"request":2,"session":"session-1","agent":"coder","step":2,"model":"gpt-5",
//!  "tokenizer":"o200k_base","system_prompt_sha256":"9f2c…","tools_sha256":"4a1b…",
//!  "bytes":7412,"tokens":1630,"shared_prefix_bytes":7120,"shared_prefix_tokens":1571,
//!  "prefix_broke_in":null,"changed_section":null,
//!  "api_prompt_tokens":1702,"api_cached_tokens":1536,"api_cache_creation_tokens":null}
//! ```
//!
//! - `request`: the request's number in this process, from 1, in the order
//!   they were sent; `step`: its step within its turn.
//! - `system_prompt_sha256`: SHA-256 of the system prompt (the same as
//!   `dsh prompt | sha256sum` prints for that agent); `tools_sha256`: of
//!   the tools' part of the canonical request.
//! - `bytes`, `tokens`: the whole canonical request. Tokens are counted
//!   part by part with the agent's tokenizer and added up, so a part that
//!   did not change keeps its count and a step counts only what is new.
//! - `shared_prefix_bytes`, `shared_prefix_tokens`: how much of it the
//!   previous request of the same session started with (0 for a session's
//!   first): the whole parts they share, then the common start of the
//!   first part that differs.
//! - `prefix_broke_in`: `null` when the previous request is all prefix of
//!   this one (or there is none); else where they first differ,
//!   `"system_prompt"`, `"tools"` or `"messages"`. `changed_section`: when
//!   that is the system prompt, the first section, in the prompt's order,
//!   whose text changed, or that was added or removed.
//! - `changed_tool`, `changed_tool_server`: when it broke in the tools,
//!   the first tool whose schema changed, or that was added or removed,
//!   and the MCP server whose tool it is (`null` for a tool of dsh's own):
//!   a server whose tool list changed (`notifications/tools/list_changed`)
//!   is named here.
//! - `api_prompt_tokens`, `api_cached_tokens`, `api_cache_creation_tokens`:
//!   what the API reported, beside the prediction — all the request's
//!   input tokens, those its prompt cache served (read), and those it
//!   wrote to its cache for the next request (OpenAI's
//!   `usage.prompt_tokens_details.cached_tokens`; Anthropic's
//!   `cache_read_input_tokens` and `cache_creation_input_tokens`, which
//!   its `input_tokens` leaves out and `api_prompt_tokens` adds back);
//!   `null` when it reported nothing (OpenAI never reports writes). The
//!   API's count also has the format's own tokens, so it is a little
//!   larger; for Claude models the prediction is an `o200k_base` estimate.
//! - `rules` (left out when none): the rules that fired since the
//!   session's last request, whose notes this request is the first to
//!   carry — each `{"rule", "file", "tokens"}`: the rule file, the file
//!   whose touch fired it (both from the project root), its note's tokens.
//! - A session resumed from the store (`dsh run --continue`/`--resume`)
//!   compares its first request with the prefix of the last request the
//!   session recorded (the store keeps it, [`RequestPrefix`]) followed by
//!   the history it resumes with, so when the deployment changed in
//!   between, that request says where its prefix broke.
//! - `compacted`: present on the first request after the loop compacted
//!   the session (`Event::Compacted`): `trigger` (`"budget"` or
//!   `"request"`), `before_tokens`, `after_tokens` (the loop's counts),
//!   `elided` (tool results) and `summarized`. Its `prefix_broke_in` is
//!   then `"messages"`: compaction rewrites only the history. The summary
//!   request itself is not a step's and has no line of its own
//!   (`--record-requests` keeps it).
//!
//! - A sampling request of an MCP server (`sampling/createMessage`,
//!   answered by the model after the person allowed it) is no step of a
//!   session: it has a line of its own, written when answered,
//!   `{"sampling_for":"<server>","session":…,"model":…,"api_prompt_tokens":…,
//!   "api_completion_tokens":…}`, and the summary counts it apart. A
//!   server that reached a sampling limit has a line when it first does
//!   for a call or a session: `{"sampling_refused_for":"<server>",
//!   "session":…,"why":…}`.
//! - A tool of an MCP server whose description, input schema or
//!   annotations changed mid-session has a line when the session first
//!   sees the change: `{"tool_changed":"<tool>","server":…,"session":…,
//!   "what":["annotations"]}`; it is asked about again as a new tool.
//!
//! Without `--trace`, tokens are not counted at all, and only the bytes
//! reach the summary.

use std::collections::HashMap;
use std::fmt;
use std::io::{LineWriter, Write as _};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use dsh_agent_loop::{
    CompactionReport, CompactionTrigger, Event, LoopEvent, LoopObserver, Message, StepPrompt,
    Tokenizer, TokenizerRule, Usage,
};
use dsh_session_store::RequestPrefix;
use dsh_system_prompt::ToolSchema;
use dsh_system_prompt::inspect::render_prompt_with_spans;
use parking_lot::Mutex;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::measure::canonical_request::{self, Part, PartKind};
use crate::problem::Problem;

/// Whether a trace counts tokens, and with which tokenizers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counting {
    /// Bytes only: no tokenizer runs.
    Bytes,
    /// Tokens too, each agent's by the deployment's rule
    /// ([`Deployment::tokenizers`](crate::file::Deployment::tokenizers)), as
    /// `explain` and the context budget count them.
    Tokens(TokenizerRule),
}

/// One request, as the trace sees it.
#[allow(missing_debug_implementations, reason = "holds a closure")]
pub(crate) struct TracedRequest<'a> {
    /// The session's id.
    pub session: &'a str,
    /// The agent's id.
    pub agent: &'a str,
    /// The step's number within its turn, from 1.
    pub step: u32,
    /// The model the request goes to.
    pub model: &'a str,
    /// The system prompt.
    pub system: &'a str,
    /// The system prompt's sections, in order, each with its byte range in
    /// `system`; called only when the system prompt is not the session's
    /// last one.
    pub sections: &'a dyn Fn() -> Vec<(String, Range<usize>)>,
    /// The tools' schemas, as sent.
    pub tools: &'a [Arc<ToolSchema>],
    /// The conversation, as sent.
    pub messages: &'a [Message],
}

/// One line of the trace file; its fields are the JSON's, documented
/// with the module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[allow(
    missing_docs,
    reason = "each field is documented in the module's list of the JSON fields"
)]
pub(crate) struct TraceLine {
    pub request: u64,
    pub session: String,
    pub agent: String,
    pub step: u32,
    pub model: String,
    pub tokenizer: Option<&'static str>,
    pub system_prompt_sha256: String,
    pub tools_sha256: String,
    pub bytes: usize,
    pub tokens: Option<usize>,
    pub shared_prefix_bytes: usize,
    pub shared_prefix_tokens: Option<usize>,
    pub prefix_broke_in: Option<PartKind>,
    pub changed_section: Option<String>,
    pub changed_tool: Option<String>,
    pub changed_tool_server: Option<String>,
    pub api_prompt_tokens: Option<u64>,
    pub api_cached_tokens: Option<u64>,
    pub api_cache_creation_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compacted: Option<Compacted>,
    /// The rules that fired since the session's last request, whose
    /// notes this request carries first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<RuleFired>,
}

/// A rule that fired, as the trace names it on the request that first
/// carries its note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleFired {
    /// The rule: its file from the project root.
    pub rule: String,
    /// The file whose touch fired it.
    pub file: String,
    /// Its note's tokens (`null` when not counting).
    pub tokens: Option<usize>,
}

/// A compaction, as the trace marks the request after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Compacted {
    trigger: CompactionTrigger,
    before_tokens: u64,
    after_tokens: u64,
    elided: usize,
    summarized: bool,
}

/// A session's trace and its summary; the loop's observer.
pub struct Trace {
    counting: Counting,
    /// The `--trace` file; `None` keeps the summary only.
    file: Option<Mutex<LineWriter<std::fs::File>>>,
    state: Mutex<State>,
    /// The MCP server of a tool, by its name, if it has one.
    tool_server: Option<ToolServer>,
    /// Keep a session's request prefix when it changes, by session.
    prefix_recorders: Mutex<HashMap<String, PrefixRecorder>>,
}

/// Names the MCP server of a tool.
pub(crate) type ToolServer = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Keeps the prefix of a session's request that differs from the
/// session's request before it.
pub(crate) type PrefixRecorder = Box<dyn Fn(&RequestPrefix) + Send + Sync>;

#[derive(Default)]
struct State {
    /// Each session's last request.
    last: HashMap<String, LastRequest>,
    /// Each session's request whose answer is not in yet.
    pending: HashMap<String, TraceLine>,
    /// Each session's compaction that its next request is to mark.
    compacted: HashMap<String, Compacted>,
    /// Each session's rules fired since its last request, with their
    /// notes' texts.
    fired: HashMap<String, Vec<(String, String, String)>>,
    summary: Summary,
    /// The first failure to write the file; reported at the end.
    write_error: Option<String>,
}

/// What the next request of a session is compared with.
struct LastRequest {
    parts: Vec<CountedPart>,
    /// The sections of `parts[0]`, the system prompt.
    sections: Vec<(String, Range<usize>)>,
    /// The tools' names, in the order of their parts.
    tools: Vec<String>,
}

pub(crate) struct CountedPart {
    pub(crate) part: Part,
    /// 0 when not counting.
    pub(crate) tokens: usize,
}

/// How much two requests share.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SharedPrefix {
    pub(crate) bytes: usize,
    pub(crate) tokens: usize,
    /// The index of the first part that differs, and its kind.
    pub(crate) broke_at: Option<(usize, PartKind)>,
}

impl Trace {
    /// A trace that writes to no file.
    pub fn summary_only(counting: Counting) -> Self {
        Self {
            counting,
            file: None,
            state: Mutex::new(State::default()),
            tool_server: None,
            prefix_recorders: Mutex::new(HashMap::new()),
        }
    }

    /// Hands each request prefix of `session` that differs from its last
    /// one to `recorder` (the store keeps it for a resumed session's
    /// trace), until [`forget`](Self::forget).
    pub(crate) fn record_prefixes(&self, session: &str, recorder: PrefixRecorder) {
        self.prefix_recorders
            .lock()
            .insert(session.to_owned(), recorder);
    }

    /// Stops recording the prefixes of `session` (it ended).
    pub fn forget(&self, session: &str) {
        self.prefix_recorders.lock().remove(session);
    }

    /// Makes a resumed session's first request compare with what its
    /// recorded last request sent: `prefix`, then the messages of the
    /// `history` it resumes with, less the answer to that request.
    pub fn resume(&self, session: &str, model: &str, prefix: &RequestPrefix, history: &[Message]) {
        let tokenizer = self.tokenizer(model);
        let history = match history {
            [earlier @ .., Message::Assistant { tool_calls, .. }] if tool_calls.is_empty() => {
                earlier
            }
            history => history,
        };
        let prompt = Part {
            kind: PartKind::SystemPrompt,
            text: prefix.system_prompt.clone(),
        };
        let tools = prefix.tools.iter().map(|(_, schema)| Part {
            kind: PartKind::Tool,
            text: schema.clone(),
        });
        let messages = history.iter().map(canonical_request::message_part);
        let parts = std::iter::once(prompt)
            .chain(tools)
            .chain(messages)
            .map(|part| CountedPart {
                tokens: tokenizer.map_or(0, |tokenizer| tokenizer.count(&part.text)),
                part,
            })
            .collect();
        self.state.lock().last.insert(
            session.to_owned(),
            LastRequest {
                parts,
                sections: prefix.sections.clone(),
                tools: prefix.tools.iter().map(|(name, _)| name.clone()).collect(),
            },
        );
    }

    /// The tokenizer a request to `model` is counted with, if counting.
    fn tokenizer(&self, model: &str) -> Option<Tokenizer> {
        match self.counting {
            Counting::Bytes => None,
            Counting::Tokens(rule) => Some(rule.for_model(model)),
        }
    }

    /// Names the MCP server of a changed tool with `tool_server`.
    pub(crate) fn with_tool_server(mut self, tool_server: ToolServer) -> Self {
        self.tool_server = Some(tool_server);
        self
    }

    /// A trace written to `path` (replacing it), counting tokens.
    pub(crate) fn to_file(path: &Path, tokenizers: TokenizerRule) -> Result<Self, Problem> {
        let file = std::fs::File::create(path).map_err(|error| {
            Problem::new(format!(
                "cannot create `{}` to write the trace: {error}",
                path.display()
            ))
            .help("pass `--trace` a path in a directory you can write")
        })?;
        Ok(Self {
            file: Some(Mutex::new(LineWriter::new(file))),
            ..Self::summary_only(Counting::Tokens(tokenizers))
        })
    }

    /// A step is about to send its prompt ([`LoopEvent::Step`]): measure
    /// it.
    pub(crate) fn before_step(&self, step: &StepPrompt<'_>) {
        let sections = || {
            // The loop has just rendered this assembly: it renders again.
            render_prompt_with_spans(step.assembly)
                .map(|prompt| {
                    prompt
                        .sections
                        .into_iter()
                        .map(|section| (section.name.to_string(), section.range))
                        .collect()
                })
                .unwrap_or_default()
        };
        self.observe(&TracedRequest {
            session: step.session.id.as_str(),
            agent: step.agent.id().as_str(),
            step: step.step,
            model: step.agent.model(),
            system: step.system,
            sections: &sections,
            tools: &step.assembly.tools,
            messages: step.messages,
        });
    }

    /// Measures a request against the session's last one; the line waits
    /// for the request's answer.
    pub(crate) fn observe(&self, request: &TracedRequest<'_>) -> TraceLine {
        let tokenizer = self.tokenizer(request.model);
        let mut guard = self.state.lock();
        let state = &mut *guard;
        if let Some(waiting) = state.pending.remove(request.session) {
            self.write(state, &waiting);
        }
        state.summary.requests += 1;
        let number = state.summary.requests;
        let last = state.last.get(request.session);
        let parts = counted_parts(request, last, tokenizer);
        let shared = last.map_or_else(SharedPrefix::default, |last| {
            shared_prefix(&last.parts, &parts, tokenizer)
        });
        let sections = match last {
            Some(last) if system_of(&last.parts) == system_of(&parts) => last.sections.clone(),
            _ => (request.sections)(),
        };
        let (changed_section, changed_tool) = what_changed(request, last, &sections, &shared);
        let changed_tool_server = changed_tool
            .as_deref()
            .zip(self.tool_server.as_ref())
            .and_then(|(tool, server_of)| server_of(tool));
        let compared = last.is_some();
        if last.is_none_or(|last| !prefix_of(&last.parts).eq(prefix_of(&parts))) {
            self.record_prefix(request, &parts, &sections);
        }
        let line = TraceLine {
            request: number,
            session: request.session.to_owned(),
            agent: request.agent.to_owned(),
            step: request.step,
            model: request.model.to_owned(),
            tokenizer: tokenizer.map(|tokenizer| tokenizer.encoding().name()),
            system_prompt_sha256: hex(&Sha256::digest(request.system.as_bytes())),
            tools_sha256: tools_sha256(&parts),
            bytes: parts.iter().map(|counted| counted.part.text.len()).sum(),
            tokens: tokenizer.map(|_| parts.iter().map(|counted| counted.tokens).sum()),
            shared_prefix_bytes: shared.bytes,
            shared_prefix_tokens: tokenizer.map(|_| shared.tokens),
            prefix_broke_in: shared.broke_at.map(|(_, kind)| kind),
            changed_section,
            changed_tool,
            changed_tool_server,
            api_prompt_tokens: None,
            api_cached_tokens: None,
            api_cache_creation_tokens: None,
            compacted: state.compacted.remove(request.session),
            rules: (state.fired.remove(request.session).into_iter().flatten())
                .map(|(rule, file, text)| RuleFired {
                    rule,
                    file,
                    tokens: tokenizer.map(|tokenizer| tokenizer.count(&text)),
                })
                .collect(),
        };
        if compared {
            state.summary.add(&line);
        }
        let tools = request.tools.iter().map(|tool| tool.name.clone()).collect();
        let last = LastRequest {
            parts,
            sections,
            tools,
        };
        state.last.insert(request.session.to_owned(), last);
        state
            .pending
            .insert(request.session.to_owned(), line.clone());
        line
    }

    /// Hands the request's prefix to its session's recorder, if it has
    /// one.
    fn record_prefix(
        &self,
        request: &TracedRequest<'_>,
        parts: &[CountedPart],
        sections: &[(String, Range<usize>)],
    ) {
        let recorders = self.prefix_recorders.lock();
        let Some(recorder) = recorders.get(request.session) else {
            return;
        };
        let prefix = RequestPrefix::new(
            request.system,
            sections.to_vec(),
            (request.tools.iter())
                .zip(prefix_of(parts).skip(1))
                .map(|(tool, part)| (tool.name.clone(), part.text.clone()))
                .collect(),
        );
        recorder(&prefix);
    }

    /// The loop compacted `session` (it recorded an `Event::Compacted`):
    /// the session's next request is marked.
    pub(crate) fn compacted(&self, session: &str, report: &CompactionReport) {
        let mark = Compacted {
            trigger: report.trigger,
            before_tokens: report.before_tokens,
            after_tokens: report.after_tokens,
            elided: report.elided,
            summarized: report.summarized,
        };
        self.state.lock().compacted.insert(session.to_owned(), mark);
    }

    /// The answer to the session's pending request is in
    /// ([`LoopEvent::Response`]), with the API's usage if it reported any.
    pub(crate) fn answered(&self, session: &str, step: u32, usage: Option<Usage>) {
        let mut state = self.state.lock();
        state.summary.answered += 1;
        let Some(mut line) = state.pending.remove(session) else {
            return;
        };
        if line.step == step {
            line.api_prompt_tokens = usage.map(|usage| usage.prompt_tokens);
            line.api_cached_tokens = usage.and_then(|usage| usage.cached_prompt_tokens);
            line.api_cache_creation_tokens =
                usage.and_then(|usage| usage.cache_creation_prompt_tokens);
            state.summary.add_usage(&line);
        }
        self.write(&mut state, &line);
    }

    /// Writes the lines still waiting for an answer and returns the
    /// summary; an error when the file could not be written.
    pub fn finish(&self) -> (Summary, Option<Problem>) {
        let mut state = self.state.lock();
        let mut waiting: Vec<TraceLine> = state.pending.drain().map(|(_, line)| line).collect();
        waiting.sort_by_key(|line| line.request);
        for line in &waiting {
            self.write(&mut state, line);
        }
        let problem = state
            .write_error
            .take()
            .map(|error| Problem::new(format!("the trace is incomplete: {error}")));
        (state.summary.clone(), problem)
    }

    fn write(&self, state: &mut State, line: &TraceLine) {
        self.write_line(state, line, &format!("request {}", line.request));
    }

    /// Writes `line` to the file, if there is one; a failure names it by
    /// `what` (`request 3`, `sampling request 1`).
    fn write_line(&self, state: &mut State, line: &impl Serialize, what: &str) {
        let Some(file) = &self.file else { return };
        if state.write_error.is_some() {
            return;
        }
        // A line of strings and numbers: serializing cannot fail.
        let json = serde_json::to_string(line).unwrap_or_default();
        let mut file = file.lock();
        if let Err(error) = writeln!(file, "{json}") {
            state.write_error = Some(format!("cannot write {what}: {error}"));
        }
    }

    /// The model answered MCP server `server`'s sampling request (for
    /// `session`, when known) as `model`, with the API's `usage`: counted
    /// in the summary, and written at once as a line of its own.
    pub fn sampled(&self, server: &str, session: Option<&str>, model: &str, usage: Option<Usage>) {
        let mut state = self.state.lock();
        state.summary.sampled += 1;
        let line = SampledLine {
            sampling_for: server,
            session,
            model,
            api_prompt_tokens: usage.map(|usage| usage.prompt_tokens),
            api_completion_tokens: usage.map(|usage| usage.completion_tokens),
        };
        let what = format!("sampling request {}", state.summary.sampled);
        self.write_line(&mut state, &line, &what);
    }
}

impl Trace {
    /// MCP server `server` reached a sampling limit (for `session`, when
    /// known): its further requests are refused, `why`. Written at once,
    /// a line of its own, once for each call or session that reached one.
    pub fn sampling_refused(&self, server: &str, session: Option<&str>, why: &str) {
        let mut state = self.state.lock();
        let line = SamplingRefusedLine {
            sampling_refused_for: server,
            session,
            why,
        };
        self.write_line(&mut state, &line, "a sampling refusal");
    }

    /// A tool of MCP server `server` changed mid-session (`what`: its
    /// description, input schema or annotations): it is asked about again
    /// as a new tool. Written at once, a line of its own.
    pub fn tool_changed(&self, session: &str, tool: &str, server: &str, what: &[&str]) {
        let mut state = self.state.lock();
        let line = ToolChangedLine {
            tool_changed: tool,
            server,
            session,
            what,
        };
        self.write_line(&mut state, &line, "a changed tool");
    }
}

/// The line of a sampling refusal.
#[derive(Serialize)]
struct SamplingRefusedLine<'a> {
    sampling_refused_for: &'a str,
    session: Option<&'a str>,
    why: &'a str,
}

/// The line of a tool that changed mid-session.
#[derive(Serialize)]
struct ToolChangedLine<'a> {
    tool_changed: &'a str,
    server: &'a str,
    session: &'a str,
    what: &'a [&'a str],
}

/// What the trace measures of a loop: every step's prompt, every answer's
/// usage, every compaction; nothing of what is shown as it streams.
impl LoopObserver for Trace {
    fn observe(&self, event: LoopEvent<'_>) {
        match event {
            LoopEvent::Step(step) => self.before_step(step),
            LoopEvent::Response(answer) => self.answered(
                answer.session.id.as_str(),
                answer.step,
                answer.response.usage,
            ),
            LoopEvent::Recorded { session, event } => {
                if let Some(report) = CompactionReport::of(event) {
                    self.compacted(session.as_str(), &report);
                }
                if let Event::Note {
                    source,
                    trigger,
                    text,
                    ..
                } = event
                {
                    let mut state = self.state.lock();
                    let fired = state.fired.entry(session.to_string()).or_default();
                    fired.push((source.clone(), trigger.clone(), text.clone()));
                }
            }
            LoopEvent::Text { .. } | LoopEvent::Thought { .. } | LoopEvent::Progress { .. } => {}
        }
    }
}

impl fmt::Debug for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trace")
            .field("counting", &self.counting)
            .field("file", &self.file.is_some())
            .finish_non_exhaustive()
    }
}

/// The request's canonical parts, each with its tokens: a part the
/// session's last request sent unchanged keeps its count.
fn counted_parts(
    request: &TracedRequest<'_>,
    last: Option<&LastRequest>,
    tokenizer: Option<Tokenizer>,
) -> Vec<CountedPart> {
    let parts = canonical_request::parts(request.system, request.tools, request.messages);
    (parts.into_iter().enumerate())
        .map(|(index, part)| {
            let tokens = match tokenizer {
                None => 0,
                Some(tokenizer) => last
                    .and_then(|last| last.parts.get(index))
                    .filter(|counted| counted.part == part)
                    .map_or_else(|| tokenizer.count(&part.text), |counted| counted.tokens),
            };
            CountedPart { part, tokens }
        })
        .collect()
}

/// Where the prefix broke, named: the first changed section when it
/// broke in the system prompt, the first changed tool when in the tools.
fn what_changed(
    request: &TracedRequest<'_>,
    last: Option<&LastRequest>,
    sections: &[(String, Range<usize>)],
    shared: &SharedPrefix,
) -> (Option<String>, Option<String>) {
    let Some(last) = last else {
        return (None, None);
    };
    match shared.broke_at {
        Some((_, PartKind::SystemPrompt)) => {
            let before = system_of(&last.parts).map_or("", |part| part.text.as_str());
            let section =
                first_changed_section((before, &last.sections), (request.system, sections));
            (section, None)
        }
        Some((index, PartKind::Tool)) => {
            // Part 0 is the system prompt; the tools follow it.
            let at = index.saturating_sub(1);
            let tool = (request.tools.get(at))
                .map(|tool| tool.name.clone())
                .or_else(|| last.tools.get(at).cloned());
            (None, tool)
        }
        _ => (None, None),
    }
}

/// SHA-256 of the tools' part of the canonical request.
fn tools_sha256(parts: &[CountedPart]) -> String {
    let mut hasher = Sha256::new();
    for counted in parts.iter().filter(|c| c.part.kind == PartKind::Tool) {
        hasher.update(counted.part.text.as_bytes());
    }
    hex(&hasher.finalize())
}

/// What `previous` and `current` share, part by part; the prefix tokens
/// are counted with `tokenizer`, if any. `dsh diff` measures where two
/// prefixes part with it too.
pub(crate) fn shared_prefix(
    previous: &[CountedPart],
    current: &[CountedPart],
    tokenizer: Option<Tokenizer>,
) -> SharedPrefix {
    let mut shared = SharedPrefix::default();
    for (index, now) in current.iter().enumerate() {
        let Some(before) = previous.get(index) else {
            // All of the previous request is a prefix of this one.
            return shared;
        };
        if before.part == now.part {
            shared.bytes += now.part.text.len();
            shared.tokens += now.tokens;
            continue;
        }
        let common = common_prefix_len(&before.part.text, &now.part.text);
        shared.bytes += common;
        shared.tokens += tokenizer.map_or(0, |tokenizer| tokenizer.count(&now.part.text[..common]));
        // A tool given up for a message breaks the cache in the tools:
        // the earlier kind is where the requests part.
        shared.broke_at = Some((index, before.part.kind.min(now.part.kind)));
        return shared;
    }
    if let Some(dropped) = previous.get(current.len()) {
        shared.broke_at = Some((current.len(), dropped.part.kind));
    }
    shared
}

/// The parts of a request a prompt cache can serve whatever the
/// conversation: the system prompt, then the tools.
fn prefix_of(parts: &[CountedPart]) -> impl Iterator<Item = &Part> + '_ {
    (parts.iter())
        .map(|counted| &counted.part)
        .take_while(|part| part.kind != PartKind::Message)
}

/// The system prompt's part of a request.
fn system_of(parts: &[CountedPart]) -> Option<&Part> {
    parts.first().map(|counted| &counted.part)
}

/// The length of the longest common prefix of `a` and `b`, at a character
/// boundary of both.
fn common_prefix_len(a: &str, b: &str) -> usize {
    let mut common = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while !b.is_char_boundary(common) {
        common -= 1;
    }
    common
}

/// The first section, in order, whose text changed between two system
/// prompts, or that one of them has and the other has not.
fn first_changed_section(
    (before_text, before): (&str, &[(String, Range<usize>)]),
    (now_text, now): (&str, &[(String, Range<usize>)]),
) -> Option<String> {
    for index in 0..before.len().max(now.len()) {
        match (before.get(index), now.get(index)) {
            (Some((old, old_range)), Some((new, new_range))) => {
                if old != new {
                    // `old` still renders later: `new` was added before
                    // it; else `old` is gone.
                    let moved = now.iter().any(|(name, _)| name == old);
                    return Some(if moved { new.clone() } else { old.clone() });
                }
                if before_text.get(old_range.clone()) != now_text.get(new_range.clone()) {
                    return Some(new.clone());
                }
            }
            (None, Some((added, _))) => return Some(added.clone()),
            (Some((removed, _)), None) => return Some(removed.clone()),
            (None, None) => break,
        }
    }
    None
}

/// `bytes` in lowercase hexadecimal (a digest as `sha256sum` prints it).
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(2 * bytes.len()), |mut out, byte| {
            let _ = write!(out, "{byte:02x}");
            out
        })
}

/// The line of a sampling request in `--trace`.
#[derive(Serialize)]
struct SampledLine<'a> {
    /// The MCP server that asked.
    sampling_for: &'a str,
    session: Option<&'a str>,
    model: &'a str,
    api_prompt_tokens: Option<u64>,
    api_completion_tokens: Option<u64>,
}

/// A session's requests in one line: how many, the mean share of each
/// request (after its session's first) that repeated the one before, and
/// where the cache first broke.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Requests sent.
    pub requests: u64,
    /// Requests whose answer came in.
    pub answered: u64,
    /// Sampling requests of MCP servers the model answered (not steps of
    /// a session: counted apart).
    pub sampled: u64,
    /// Requests with a previous one in their session.
    compared: u64,
    byte_shares: f64,
    /// `None` when tokens are not counted.
    token_shares: Option<f64>,
    first_break: Option<Break>,
    /// What the API said of its cache, over the requests it said it for.
    cache: Option<ApiCache>,
}

/// The API's prompt-cache counts added up, beside what dsh predicted for
/// the same requests.
#[derive(Debug, Clone, Default, PartialEq)]
struct ApiCache {
    prompt_tokens: u64,
    read: u64,
    /// `None` when the API never says what it wrote (OpenAI).
    written: Option<u64>,
    /// The shared prefixes dsh measured: tokens when counting, else bytes.
    predicted: usize,
    predicted_in_tokens: bool,
}

#[derive(Debug, Clone, PartialEq)]
struct Break {
    request: u64,
    kind: PartKind,
    section: Option<String>,
}

impl Summary {
    fn add(&mut self, line: &TraceLine) {
        self.compared += 1;
        self.byte_shares += share(line.shared_prefix_bytes, line.bytes);
        if let (Some(shared), Some(total)) = (line.shared_prefix_tokens, line.tokens) {
            *self.token_shares.get_or_insert(0.0) += share(shared, total);
        }
        if self.first_break.is_none()
            && let Some(kind) = line.prefix_broke_in
        {
            self.first_break = Some(Break {
                request: line.request,
                kind,
                section: line.changed_section.clone(),
            });
        }
    }

    /// Adds what the API said of its cache for `line`'s request, if it
    /// said anything of it.
    fn add_usage(&mut self, line: &TraceLine) {
        let (Some(prompt), Some(read)) = (line.api_prompt_tokens, line.api_cached_tokens) else {
            return;
        };
        let cache = self.cache.get_or_insert_default();
        cache.prompt_tokens += prompt;
        cache.read += read;
        if let Some(written) = line.api_cache_creation_tokens {
            *cache.written.get_or_insert(0) += written;
        }
        match line.shared_prefix_tokens {
            Some(tokens) => {
                cache.predicted += tokens;
                cache.predicted_in_tokens = true;
            }
            None => cache.predicted += line.shared_prefix_bytes,
        }
    }

    /// The mean share of bytes of the requests after their session's
    /// first that the request before had sent; `None` before a second.
    pub(crate) fn mean_cacheable_bytes(&self) -> Option<f64> {
        (self.compared > 0).then(|| self.byte_shares / self.compared as f64)
    }
}

fn share(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        1.0
    } else {
        part as f64 / whole as f64
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = if self.requests == 1 { "" } else { "s" };
        write!(f, "session: {} request{plural}", self.requests)?;
        let Some(bytes) = self.mean_cacheable_bytes() else {
            f.write_str(", none with a request before it to share a prefix with")?;
            return self.write_cache(f);
        };
        let compared = self.compared as f64;
        write!(f, ", mean cacheable prefix {:.1}% of bytes", 100.0 * bytes)?;
        if let Some(tokens) = self.token_shares {
            write!(f, " and {:.1}% of tokens", 100.0 * tokens / compared)?;
        }
        match &self.first_break {
            None => f.write_str(", the cache never broke")?,
            Some(Break {
                request,
                section: Some(section),
                ..
            }) => write!(
                f,
                ", first broken at request {request} by section `{section}` of the system prompt"
            )?,
            Some(Break { request, kind, .. }) => {
                let place = match kind {
                    PartKind::SystemPrompt => "the system prompt",
                    PartKind::Tool => "the tools",
                    PartKind::Message => "the messages",
                };
                write!(f, ", first broken at request {request} in {place}")?;
            }
        }
        self.write_cache(f)
    }
}

impl Summary {
    /// `; the API's cache read R of P prompt tokens and wrote W (dsh
    /// predicted a shared prefix of N tokens)`, when the API said.
    fn write_cache(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.sampled > 0 {
            let plural = if self.sampled == 1 { "" } else { "s" };
            write!(
                f,
                "; {} sampling request{plural} of MCP servers answered",
                self.sampled
            )?;
        }
        let Some(cache) = &self.cache else {
            return Ok(());
        };
        write!(
            f,
            "; the API's cache read {} of {} prompt tokens",
            cache.read, cache.prompt_tokens
        )?;
        if let Some(written) = cache.written {
            write!(f, " and wrote {written}")?;
        }
        let unit = if cache.predicted_in_tokens {
            "tokens"
        } else {
            "bytes"
        };
        write!(
            f,
            " (dsh predicted a shared prefix of {} {unit})",
            cache.predicted
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request of session `s` whose system prompt is `sections` joined
    /// by blank lines, with one tool and `messages` user messages.
    fn observe(trace: &Trace, sections: &[(&str, &str)], messages: usize) -> TraceLine {
        let mut system = String::new();
        let mut spans = Vec::new();
        for (name, text) in sections {
            if !system.is_empty() {
                system.push_str("\n\n");
            }
            spans.push((name.to_string(), system.len()..system.len() + text.len()));
            system.push_str(text);
        }
        let tools = [Arc::new(ToolSchema::new(
            "todo_write",
            "Replaces the session's task list.",
            serde_json::json!({"type": "object"}),
        ))];
        let messages: Vec<Message> = (0..messages)
            .map(|n| Message::User {
                text: format!("message {n}"),
            })
            .collect();
        trace.observe(&TracedRequest {
            session: "s",
            agent: "coder",
            step: 1,
            model: "gpt-5",
            system: &system,
            sections: &|| spans.clone(),
            tools: &tools,
            messages: &messages,
        })
    }

    /// The summary `trace` finishes with ends with `end`.
    #[track_caller]
    fn assert_summary_ends_with(trace: &Trace, end: &str) {
        let (summary, _) = trace.finish();
        assert!(summary.to_string().ends_with(end), "{summary}");
    }

    const PERSONA: (&str, &str) = ("agent:persona", "You are a coding agent.");
    const READ: (&str, &str) = ("tool:read", "Use read, not cat.");

    #[test]
    fn a_request_that_extends_the_last_shares_all_of_it() {
        let trace = Trace::summary_only(Counting::Tokens(TokenizerRule::by_model()));
        let first = observe(&trace, &[PERSONA, READ], 1);
        assert_eq!(
            (first.shared_prefix_bytes, first.prefix_broke_in),
            (0, None)
        );
        let second = observe(&trace, &[PERSONA, READ], 3);
        assert_eq!(second.shared_prefix_bytes, first.bytes);
        assert_eq!(second.shared_prefix_tokens, first.tokens);
        assert_eq!(second.prefix_broke_in, None);
        assert_eq!(second.system_prompt_sha256, first.system_prompt_sha256);
        assert_eq!(
            first.system_prompt_sha256,
            hex(&Sha256::digest(
                b"You are a coding agent.\n\nUse read, not cat."
            ))
        );
        assert!(second.bytes > first.bytes);
        let (summary, problem) = trace.finish();
        assert!(problem.is_none());
        assert_eq!(summary.requests, 2);
        assert_eq!(
            summary.mean_cacheable_bytes(),
            Some(first.bytes as f64 / second.bytes as f64)
        );
        assert!(
            summary.to_string().ends_with("the cache never broke"),
            "{summary}"
        );
    }

    #[test]
    fn a_prefix_broken_inside_the_system_prompt_names_the_section() {
        let trace = Trace::summary_only(Counting::Tokens(TokenizerRule::by_model()));
        let first = observe(&trace, &[PERSONA, READ, ("todo", "1. [ ] Parse")], 1);
        let second = observe(&trace, &[PERSONA, READ, ("todo", "1. [x] Parse")], 2);
        assert_eq!(second.prefix_broke_in, Some(PartKind::SystemPrompt));
        assert_eq!(second.changed_section.as_deref(), Some("todo"));
        assert_ne!(second.system_prompt_sha256, first.system_prompt_sha256);
        assert_eq!(second.tools_sha256, first.tools_sha256);
        // The persona, the read habit, their separators and `1. [`.
        let shared = "You are a coding agent.\n\nUse read, not cat.\n\n1. [";
        assert_eq!(second.shared_prefix_bytes, shared.len());
        assert_eq!(
            second.shared_prefix_tokens,
            Some(Tokenizer::for_model("gpt-5").count(shared))
        );
        assert_summary_ends_with(
            &trace,
            "first broken at request 2 by section `todo` of the system prompt",
        );
    }

    #[test]
    fn added_and_removed_sections_are_named() {
        let trace = Trace::summary_only(Counting::Bytes);
        observe(&trace, &[PERSONA, READ], 1);
        let added = observe(
            &trace,
            &[PERSONA, ("tool:bash", "Check the marker."), READ],
            1,
        );
        assert_eq!(added.changed_section.as_deref(), Some("tool:bash"));
        let removed = observe(&trace, &[PERSONA, READ], 1);
        assert_eq!(removed.changed_section.as_deref(), Some("tool:bash"));
        let appended = observe(&trace, &[PERSONA, READ, ("todo", "x")], 1);
        assert_eq!(appended.changed_section.as_deref(), Some("todo"));
        assert_eq!(appended.tokens, None, "bytes only: nothing is counted");
    }

    #[test]
    fn a_changed_tool_breaks_the_prefix_in_the_tools() {
        let trace = Trace::summary_only(Counting::Bytes);
        let request = |description: &str| {
            let tools = [Arc::new(ToolSchema::new(
                "read",
                description,
                serde_json::json!({"type": "object"}),
            ))];
            trace.observe(&TracedRequest {
                session: "s",
                agent: "coder",
                step: 1,
                model: "m",
                system: "You are terse.",
                sections: &|| vec![("agent:persona".to_owned(), 0..14)],
                tools: &tools,
                messages: &[],
            })
        };
        let first = request("Reads a file.");
        let second = request("Reads a text file.");
        assert_eq!(second.prefix_broke_in, Some(PartKind::Tool));
        assert_eq!(second.changed_section, None);
        assert_eq!(second.system_prompt_sha256, first.system_prompt_sha256);
        assert_ne!(second.tools_sha256, first.tools_sha256);
        let line = serde_json::to_value(&second).unwrap_or_default();
        assert_eq!(line["prefix_broke_in"], "tools");
        assert_summary_ends_with(&trace, "first broken at request 2 in the tools");
    }

    #[test]
    fn the_answer_brings_the_apis_cached_tokens() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("trace.jsonl");
        let trace = Trace::to_file(&path, TokenizerRule::by_model())?;
        observe(&trace, &[PERSONA], 1);
        trace.answered(
            "s",
            1,
            Some(Usage::new(40, 2).with_cached_prompt_tokens(32)),
        );
        // No answer: written at the end, without usage.
        observe(&trace, &[PERSONA], 3);
        let (summary, problem) = trace.finish();
        assert!(problem.is_none());
        assert_eq!((summary.requests, summary.answered), (2, 1));
        let lines: Vec<serde_json::Value> = std::fs::read_to_string(&path)?
            .lines()
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()?;
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["api_cached_tokens"], 32);
        assert_eq!(lines[0]["api_prompt_tokens"], 40);
        assert_eq!(lines[1]["request"], 2);
        assert_eq!(lines[1]["api_cached_tokens"], serde_json::Value::Null);
        Ok(())
    }

    #[test]
    fn cache_reads_and_writes_reach_the_line_and_the_summary()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("trace.jsonl");
        let trace = Trace::to_file(&path, TokenizerRule::by_model())?;
        // The API's answer: `prompt` tokens, of which `read` came from
        // its cache and `written` went into it.
        let answered = |prompt: u64, read: u64, written: u64| {
            let usage = Usage::new(prompt, 5)
                .with_cached_prompt_tokens(read)
                .with_cache_creation_prompt_tokens(written);
            trace.answered("s", 1, Some(usage));
        };
        let first = observe(&trace, &[PERSONA, READ], 1);
        answered(1_000, 0, 990);
        let second = observe(&trace, &[PERSONA, READ], 3);
        answered(1_040, 990, 45);
        let (summary, problem) = trace.finish();
        assert!(problem.is_none());
        let lines: Vec<serde_json::Value> = std::fs::read_to_string(&path)?
            .lines()
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()?;
        assert_eq!(lines[0]["api_cache_creation_tokens"], 990);
        assert_eq!(lines[1]["api_cached_tokens"], 990);
        assert_eq!(lines[1]["api_cache_creation_tokens"], 45);
        let predicted = second.shared_prefix_tokens.unwrap_or_default();
        assert_eq!(second.shared_prefix_tokens, first.tokens);
        assert!(
            summary.to_string().ends_with(&format!(
                "; the API's cache read 990 of 2040 prompt tokens and wrote 1035 \
                 (dsh predicted a shared prefix of {predicted} tokens)"
            )),
            "{summary}"
        );
        Ok(())
    }

    #[test]
    fn an_api_that_reports_only_reads_shows_only_reads() {
        let trace = Trace::summary_only(Counting::Bytes);
        observe(&trace, &[PERSONA], 1);
        trace.answered(
            "s",
            1,
            Some(Usage::new(40, 2).with_cached_prompt_tokens(32)),
        );
        assert_summary_ends_with(
            &trace,
            "share a prefix with; the API's cache read 32 of 40 prompt tokens \
             (dsh predicted a shared prefix of 0 bytes)",
        );
    }

    #[test]
    fn a_servers_sampling_request_is_counted_apart_and_written_at_once()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("trace.jsonl");
        let trace = Trace::to_file(&path, TokenizerRule::default())
            .map_err(|problem| problem.message().to_owned())?;
        trace.sampled("docs", Some("s"), "m", Some(Usage::new(20, 3)));
        let (summary, problem) = trace.finish();
        assert!(problem.is_none());
        assert_eq!((summary.requests, summary.sampled), (0, 1));
        assert!(
            summary
                .to_string()
                .contains("; 1 sampling request of MCP servers answered"),
            "{summary}"
        );
        let line: serde_json::Value = serde_json::from_str(std::fs::read_to_string(&path)?.trim())?;
        assert_eq!(
            line,
            serde_json::json!({"sampling_for": "docs", "session": "s", "model": "m",
                               "api_prompt_tokens": 20, "api_completion_tokens": 3})
        );
        Ok(())
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_sampling_line_that_cannot_be_written_is_named_so() -> Result<(), Box<dyn std::error::Error>>
    {
        // Every write to /dev/full fails (ENOSPC).
        let trace = Trace::to_file(Path::new("/dev/full"), TokenizerRule::default())
            .map_err(|problem| problem.message().to_owned())?;
        trace.sampled("docs", None, "m", None);
        let (_, problem) = trace.finish();
        let message = problem.ok_or("a problem")?.message().to_owned();
        assert!(
            message.starts_with("the trace is incomplete: cannot write sampling request 1: "),
            "{message}"
        );
        Ok(())
    }

    #[test]
    fn common_prefixes_end_at_a_character_boundary() {
        assert_eq!(common_prefix_len("abc", "abd"), 2);
        assert_eq!(common_prefix_len("é", "è"), 0);
        assert_eq!(common_prefix_len("aé", "aé!"), 3);
        assert_eq!(common_prefix_len("", "x"), 0);
    }
}
