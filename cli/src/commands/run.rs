//! `dsh run`: run an agent of the deployment through the agent loop.
//!
//! The model's answers go to stdout; tool calls, their results, the spinner
//! and errors go to stderr, so `dsh run -p … > answer.txt` keeps only what
//! the model said. A session that got an answer ends with one line on
//! stderr: its requests, the mean share of each that repeated the one
//! before (what a prompt cache can serve), and where that first broke
//! (`crate::trace`); `--trace FILE` writes the same per request, with
//! tokens.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dsh_agent_loop::{
    AgentLoop, Approval, CompactionReport, Event, Session, SessionFacts, ToolApproval, ToolCall,
    TurnError, async_trait,
};
use dsh_session_store::RequestPrefix;
use dsh_system_prompt::render_prompt;
use dsh_tool_subagent::AcpProvider;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};
use parking_lot::Mutex;
use tokio::io::AsyncBufReadExt;
use tokio_util::sync::CancellationToken;

use crate::args::RunArgs;
use crate::commands::{Outcome, async_runtime, command_line_cwd};
use dsh_deployment::adapter;
use dsh_deployment::check::prompt_problems::prompt_problems;
use dsh_deployment::host::signals::EndingSignals;
use dsh_deployment::host::store;
use dsh_deployment::measure::trace::{Counting, Trace};
use dsh_deployment::runtime;
use {crate::diagnostics::Reporter, dsh_deployment::Problem};

pub(crate) fn run(args: &RunArgs) -> Outcome {
    let (deployment, agent, runtime) = &runtime::load_agent(
        args.target.deployment.config.as_deref(),
        args.target.agent.as_deref(),
    )?;
    let cwd = command_line_cwd(args.cwd.as_deref())?;

    // A persona that does not render would fail every turn: say so now,
    // with the place in the file, before the model is contacted.
    let started: runtime::StartedSession = runtime.start_session(Some(&cwd))?;
    let assembly = runtime.assemble(agent, &started);
    if let Err(errors) = render_prompt(&assembly) {
        return Err(prompt_problems(deployment, agent, &errors));
    }

    let model = adapter::for_running(deployment, args.record_requests.as_deref())
        .map_err(|problem| vec![problem])?;
    let console = Arc::new(Console::new());
    let (events, text, progress) = (
        Arc::clone(&console),
        Arc::clone(&console),
        Arc::clone(&console),
    );
    let recording = store::open(deployment, args.store.no_store)
        .map_err(|problem| vec![problem])?
        .map(|store| store::Recording::new(store, deployment, agent));
    let RunSession {
        session,
        recorded,
        history,
        prefix,
    } = run_session(args, recording.as_ref(), &cwd)?;
    let loop_agent = runtime::loop_agent(agent).with_budget(deployment.budget_for(agent));
    let mut trace = match &args.trace {
        Some(path) => {
            dsh_deployment::check_output(deployment, path, "--trace")
                .map_err(|problem| vec![problem])?;
            Trace::to_file(path, deployment.tokenizers).map_err(|problem| vec![problem])?
        }
        None => Trace::summary_only(Counting::Bytes),
    }
    .with_tool_server(runtime::mcp::tool_server(&runtime.mcp));
    if let Some(recorded) = &recorded {
        trace = trace.with_prefix_recorder(prefix_recorder(recorded));
    }
    if let Some(prefix) = &prefix {
        let messages = session.messages();
        trace.resume(session.id().as_str(), loop_agent.model(), prefix, &messages);
    }
    let trace = Arc::new(trace);
    // The instruction files stay registered while the session runs: the
    // ones of the session that runs (its id is the store's, and a resumed
    // one reads its own working directory's), not the checked one's.
    drop(started);
    let _instructions = dsh_deployment::host::SessionInstructions::start(
        &runtime.instructions,
        &runtime.prompt,
        &session,
    )
    .map_err(|error| vec![Problem::new(error.to_string())])?;
    console.replay(&history);
    let id = session.id().clone();
    let mut agent_loop = AgentLoop::new(runtime.prompt.clone(), runtime.tools.clone(), model)
        .on_event({
            let trace = Arc::clone(&trace);
            move |session, event| {
                if let Some(report) = CompactionReport::of(event) {
                    trace.compacted(session.as_str(), &report);
                }
                events.event(event);
            }
        })
        .on_text(move |_, piece| text.text(piece))
        .on_tool_progress(move |session, call, text| {
            if *session == id {
                progress.progress(&call.name, text);
            }
        })
        .before_step({
            let trace = Arc::clone(&trace);
            move |step| trace.before_step(step)
        })
        .on_response({
            let trace = Arc::clone(&trace);
            move |answer| {
                trace.answered(
                    answer.session.id.as_str(),
                    answer.step,
                    answer.response.usage,
                );
            }
        });
    if !deployment.ask_first.is_empty() {
        agent_loop = agent_loop.with_approval(Arc::new(NoOneToAsk {
            ask_first: deployment.ask_first.clone(),
        }));
    }
    let tokio = async_runtime()?;
    // Listening before any server starts: a signal that comes while they
    // start ends dsh the gentle way, which stops them too.
    let ending = {
        let _runtime = tokio.enter();
        EndingSignals::listen()?
    };
    let outcome = tokio.block_on(async {
        // The agent's MCP servers, all at once; one that may be missed and
        // failed is said once, here.
        let started = runtime::mcp::start_deployment_servers(
            deployment,
            &runtime.mcp,
            runtime::mcp::Which::ListedBy(vec![agent]),
        )
        .await;
        if !started.required_failures.is_empty() {
            runtime.mcp.shutdown().await;
            return Err(started.required_failures);
        }
        Reporter::for_stderr().report(&started.optional_failures);
        let mut chat = Chat {
            agent_loop,
            agent: loop_agent,
            session,
            console,
            ending,
            ended: None,
        };
        let outcome = match &args.prompt {
            Some(prompt) => chat.one_turn(prompt).await,
            None => chat.lines().await,
        };
        // Child agents of the last turn stop gently, so that they stop
        // their own tools' processes.
        AcpProvider::wait_for_children(AcpProvider::STOP_GRACE).await;
        runtime.mcp.shutdown().await;
        match chat.ended {
            Some(signal) => Err(vec![Problem::new(format!(
                "stopped by {signal}: the running turn was cancelled"
            ))]),
            None => outcome,
        }
    });
    // Reading stdin blocks a thread that cannot be interrupted; do not wait
    // for it.
    tokio.shutdown_background();
    let (summary, incomplete) = trace.finish();
    let unrecorded = recorded.as_ref().and_then(store::Recorded::failure);
    let incomplete = match (incomplete, unrecorded) {
        (Some(problem), _) | (None, Some(problem)) => Some(problem),
        (None, None) => None,
    };
    // A session whose requests all failed has nothing to say of caching;
    // its error is the one line to read.
    if summary.answered > 0 {
        out(&mut std::io::stderr(), &format!("{summary}\n"));
    }
    match (outcome, incomplete) {
        (Ok(()), Some(problem)) => Err(vec![problem]),
        (Err(mut problems), Some(problem)) => {
            problems.push(problem);
            Err(problems)
        }
        (outcome, None) => outcome,
    }
}

/// The loop session `dsh run` runs.
struct RunSession {
    session: Session,
    /// The store's side, when the store is on.
    recorded: Option<store::Recorded>,
    /// What a resumed session said and did before.
    history: Vec<Event>,
    /// The prefix of a resumed session's last request, if recorded.
    prefix: Option<RequestPrefix>,
}

/// Keeps each changed prefix of the recorded session's requests in the
/// store; a failure to is said, and the session goes on (only a later
/// `--continue`'s trace misses it).
fn prefix_recorder(recorded: &store::Recorded) -> dsh_deployment::measure::trace::PrefixRecorder {
    let writer = Arc::clone(&recorded.writer);
    let warned = AtomicBool::new(false);
    Box::new(move |session, prefix| {
        if session != writer.id() {
            return;
        }
        if let Err(error) = writer.record_prefix(prefix)
            && !warned.swap(true, Ordering::Relaxed)
        {
            out(
                &mut std::io::stderr(),
                &format!("warning: the request prefix was not recorded: {error}\n"),
            );
        }
    })
}

/// The loop session to run: recorded into the store when it is on — a new
/// one, or with `--continue`/`--resume` a recorded one with its history;
/// a plain one when it is off.
fn run_session(
    args: &RunArgs,
    recording: Option<&store::Recording>,
    cwd: &Path,
) -> Result<RunSession, Vec<Problem>> {
    let resume = &args.resume;
    let Some(recording) = recording else {
        if resume.continue_latest || resume.resume.is_some() {
            return Err(vec![
                Problem::new("`--continue` and `--resume` need the session store, which is off")
                    .help("drop `--no-store`, or `[sessions] enabled = false` from the deployment"),
            ]);
        }
        return Ok(RunSession {
            session: runtime::session(Some(cwd)),
            recorded: None,
            history: Vec::new(),
            prefix: None,
        });
    };
    let id = if resume.continue_latest {
        let latest = recording
            .store()
            .latest_in(cwd, Some(recording.agent()))
            .map_err(|error| vec![store::problem(error)])?;
        let Some(latest) = latest else {
            return Err(vec![
                Problem::new(format!(
                    "no recorded session of agent `{}` in `{}` to continue",
                    recording.agent(),
                    cwd.display()
                ))
                .help("`dsh sessions` lists the recorded sessions; `--resume ID` continues one"),
            ]);
        };
        Some(latest.id)
    } else {
        resume.resume.clone()
    };
    let Some(id) = id else {
        let (session, recorded) = recording
            .start(Some(cwd))
            .map_err(|error| vec![store::problem(error)])?;
        return Ok(RunSession {
            session,
            recorded: Some(recorded),
            history: Vec::new(),
            prefix: None,
        });
    };
    let resumed = recording
        .resume(&id, None)
        .map_err(|error| vec![error.problem(recording.agent())])?;
    for note in &resumed.notes {
        out(&mut std::io::stderr(), &format!("note: {note}\n"));
    }
    Ok(RunSession {
        session: resumed.session,
        recorded: Some(resumed.recorded),
        history: resumed.loaded.events,
        prefix: resumed.loaded.prefix,
    })
}

/// The input line that compacts the session instead of starting a turn.
const COMPACT_COMMAND: &str = "/compact";

struct Chat {
    agent_loop: AgentLoop,
    agent: dsh_agent_loop::Agent,
    session: dsh_agent_loop::Session,
    console: Arc<Console>,
    /// `SIGTERM` and `SIGHUP`: cancel the running turn, then end.
    ending: EndingSignals,
    /// The ending signal received, if any.
    ended: Option<&'static str>,
}

impl Chat {
    /// `-p`: one turn; its failure, or its cancellation, is the command's.
    async fn one_turn(&mut self, prompt: &str) -> Outcome {
        match self.turn(prompt).await {
            Ok(()) => Ok(()),
            Err(error) => Err(vec![turn_problem(&error)]),
        }
    }

    /// One turn per line of stdin, until it ends. A failed turn is
    /// reported and the session goes on; the command fails if any turn
    /// failed. Ctrl-C cancels the running turn; between turns, it ends the
    /// session.
    async fn lines(&mut self) -> Outcome {
        let interactive = std::io::stdin().is_terminal();
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        let mut failed = false;
        loop {
            if interactive {
                self.console.ask();
            }
            let line = tokio::select! {
                line = lines.next_line() => line,
                _ = tokio::signal::ctrl_c() => Ok(None),
                signal = self.ending.recv() => {
                    self.ended = Some(signal);
                    Ok(None)
                }
            };
            let line = match line {
                Ok(Some(line)) => line,
                Ok(None) => {
                    if interactive {
                        // Leave the shell's prompt a line of its own.
                        out(&mut std::io::stderr(), "\n");
                    }
                    break;
                }
                Err(error) => {
                    return Err(vec![Problem::new(format!("cannot read stdin: {error}"))]);
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            let outcome = if line.trim() == COMPACT_COMMAND {
                self.compact().await
            } else {
                self.turn(&line).await
            };
            if self.ended.is_some() {
                break;
            }
            match outcome {
                Ok(()) => {}
                // Cancelling is what the user asked for, not a failure.
                Err(TurnError::Cancelled) => out(&mut std::io::stderr(), "turn cancelled\n"),
                Err(error) => {
                    self.console.problem(&turn_problem(&error));
                    failed = true;
                }
            }
        }
        if failed {
            Err(vec![Problem::new(
                "some turns of this session failed; see above",
            )])
        } else {
            Ok(())
        }
    }

    /// `/compact`: compacts the session now; Ctrl-C or an ending signal
    /// cancels it. The
    /// event's line says what it did; nothing to compact says so.
    async fn compact(&mut self) -> Result<(), TurnError> {
        let cancel = CancellationToken::new();
        self.console.spin("compacting…".to_owned());
        let compact = self
            .agent_loop
            .compact(&self.agent, &mut self.session, &cancel);
        tokio::pin!(compact);
        let result = loop {
            tokio::select! {
                result = &mut compact => break result,
                _ = tokio::signal::ctrl_c() => cancel.cancel(),
                signal = self.ending.recv(), if self.ended.is_none() => {
                    self.ended = Some(signal);
                    cancel.cancel();
                }
            }
        };
        self.console.idle();
        if let Ok(None) = result {
            out(&mut std::io::stderr(), "nothing to compact\n");
        }
        result.map(|_| ())
    }

    /// Runs one turn; Ctrl-C cancels it, and the turn then ends itself.
    async fn turn(&mut self, input: &str) -> Result<(), TurnError> {
        let cancel = CancellationToken::new();
        let turn = self
            .agent_loop
            .run_turn(&self.agent, &mut self.session, input, &cancel);
        tokio::pin!(turn);
        let result = loop {
            tokio::select! {
                result = &mut turn => break result,
                _ = tokio::signal::ctrl_c() => cancel.cancel(),
                signal = self.ending.recv(), if self.ended.is_none() => {
                    self.ended = Some(signal);
                    cancel.cancel();
                }
            }
        };
        self.console.idle();
        result.map(|_| ())
    }
}

/// `dsh run` has no way to ask the user about one call: the calls of a
/// tool that asks first are refused, with what to do instead.
#[derive(Debug)]
struct NoOneToAsk {
    ask_first: Vec<String>,
}

#[async_trait]
impl ToolApproval for NoOneToAsk {
    async fn approve(&self, call: &ToolCall, _: &SessionFacts, _: &CancellationToken) -> Approval {
        if !self.ask_first.contains(&call.name) {
            return Approval::Allow;
        }
        Approval::Deny {
            reason: format!(
                "`{name}` runs only with the user's permission (`[tools.{name}] permission = \"ask\"`), \
                 and `dsh run` cannot ask for it; run this agent from an editor with `dsh acp`, \
                 or set `permission = \"allow\"`",
                name = call.name
            ),
        }
    }
}

fn turn_problem(error: &TurnError) -> Problem {
    Problem::new(error.to_string())
}

/// What the user sees of a turn while it runs.
struct Console {
    /// A spinner only on a terminal: piped stderr gets plain lines.
    tty: bool,
    spinner: Mutex<Option<ProgressBar>>,
    /// Whether text of the answer being written has reached stdout.
    streaming: AtomicBool,
    reporter: Reporter,
}

impl Console {
    fn new() -> Self {
        Self {
            tty: std::io::stderr().is_terminal(),
            spinner: Mutex::new(None),
            streaming: AtomicBool::new(false),
            reporter: Reporter::for_stderr(),
        }
    }

    /// A resumed session's history, on stderr: what was said and done
    /// before, so the user knows where the conversation stands.
    fn replay(&self, history: &[Event]) {
        let mut stderr = std::io::stderr();
        for event in history {
            match event {
                Event::UserMessage { text } => {
                    out(&mut stderr, &format!("> {}\n", one_line(text, 160)))
                }
                Event::AssistantMessage { text } if !text.is_empty() => {
                    out(&mut stderr, &format!("{text}\n"));
                }
                Event::ToolCall { .. } | Event::ToolResult { .. } => self.event(event),
                _ => {}
            }
        }
    }

    fn event(&self, event: &Event) {
        match event {
            Event::StepStart { .. } => self.spin("thinking…".to_owned()),
            // Its text has streamed to stdout already: end its line.
            Event::AssistantMessage { .. } => {
                self.idle();
                if self.streaming.swap(false, Ordering::Relaxed) {
                    out(&mut std::io::stdout(), "\n");
                }
            }
            Event::ToolCall { call } => {
                self.idle();
                out(
                    &mut std::io::stderr(),
                    &format!("→ {} {}\n", call.name, one_line(&call.arguments, 160)),
                );
                self.spin(format!("running `{}`…", call.name));
            }
            Event::ToolResult { text, is_error, .. } => {
                self.idle();
                out(
                    &mut std::io::stderr(),
                    &format!("  {}\n", result_summary(text, *is_error)),
                );
            }
            Event::TurnEnd { .. } => self.idle(),
            Event::Compacted { .. } => {
                self.idle();
                if let Some(report) = CompactionReport::of(event) {
                    out(&mut std::io::stderr(), &format!("{report}\n"));
                }
            }
            _ => {}
        }
    }

    /// A piece of the answer, as the model writes it.
    fn text(&self, piece: &str) {
        if !piece.is_empty() {
            self.idle();
            self.streaming.store(true, Ordering::Relaxed);
            out(&mut std::io::stdout(), piece);
        }
    }

    /// What a running call says it is doing, in the spinner's line.
    fn progress(&self, tool: &str, text: &str) {
        self.spin(format!("`{tool}`: {}", one_line(text, 100)));
    }

    fn spin(&self, message: String) {
        if !self.tty {
            return;
        }
        let spinner = ProgressBar::with_draw_target(
            None,
            ProgressDrawTarget::term_like(Box::new(NarrowStderr(console::Term::stderr()))),
        );
        spinner.set_style(ProgressStyle::default_spinner());
        spinner.set_message(message);
        spinner.enable_steady_tick(Duration::from_millis(100));
        if let Some(previous) = self.spinner.lock().replace(spinner) {
            previous.finish_and_clear();
        }
    }

    fn idle(&self) {
        if let Some(spinner) = self.spinner.lock().take() {
            spinner.finish_and_clear();
        }
    }

    fn ask(&self) {
        out(&mut std::io::stderr(), "> ");
    }

    fn problem(&self, problem: &Problem) {
        self.idle();
        self.reporter.report(std::slice::from_ref(problem));
    }
}

/// Stderr for the spinner, two columns narrower than the terminal.
///
/// indicatif pads the spinner's line to the last column; the `^C` a
/// terminal echoes there on Ctrl-C would wrap onto a new line, and clearing
/// the spinner would then clear that line and leave the spinner's behind.
#[derive(Debug)]
struct NarrowStderr(console::Term);

impl TermLike for NarrowStderr {
    fn width(&self) -> u16 {
        self.0.size().1.saturating_sub(2).max(1)
    }

    fn height(&self) -> u16 {
        self.0.size().0
    }

    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_up(n)
    }

    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_down(n)
    }

    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_right(n)
    }

    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_left(n)
    }

    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.0.write_line(s)
    }

    fn write_str(&self, s: &str) -> std::io::Result<()> {
        self.0.write_str(s)
    }

    fn clear_line(&self) -> std::io::Result<()> {
        self.0.clear_line()
    }

    fn flush(&self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Writes to a stream; a closed stream leaves nothing to report to.
fn out(stream: &mut impl Write, text: &str) {
    let _ = stream
        .write_all(text.as_bytes())
        .and_then(|()| stream.flush());
}

/// `text` on one line, cut to about `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let cut: String = flat.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// A tool result in one line: its first line, how many more, and its last
/// line when that is a marker such as `[exit code: 1]`.
fn result_summary(text: &str, is_error: bool) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let first = lines.first().copied().unwrap_or("(no output)");
    let mut summary = format!(
        "← {}{}",
        if is_error { "error: " } else { "" },
        one_line(first, 120)
    );
    if lines.len() > 1 {
        let last = lines[lines.len() - 1].trim();
        let marker = last.starts_with('[') && last.ends_with(']');
        let more = lines.len() - 1 - usize::from(marker);
        if more > 0 {
            summary.push_str(&format!(" (+{more} lines)"));
        }
        if marker {
            summary.push_str(&format!(" {last}"));
        }
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_show_their_first_line_and_their_marker() {
        assert_eq!(
            result_summary("a\nb\nc\n[exit code: 3]", false),
            "← a (+2 lines) [exit code: 3]"
        );
        assert_eq!(result_summary("only", true), "← error: only");
        assert_eq!(result_summary("", false), "← (no output)");
    }

    #[test]
    fn long_arguments_are_cut() {
        assert_eq!(one_line("{\"a\":\n 1}", 160), "{\"a\": 1}");
        assert_eq!(one_line("abcdef", 3), "abc…");
    }
}
