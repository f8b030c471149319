//! What the user of `dsh run` sees of a turn while it runs: the answer on
//! stdout as it streams; what the model thinks before it (dimmed), tool
//! calls, their results, a spinner and problems on stderr. On a terminal, a running command's last lines show dimmed
//! under its call until its result replaces them.

use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dsh_deployment::Problem;
use dsh_deployment::session::{CallEnd, CallView, SessionEvent};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};
use parking_lot::Mutex;

use crate::diagnostics::Reporter;

/// What the user sees of a turn while it runs.
pub(crate) struct Console {
    /// A spinner only on a terminal: piped stderr gets plain lines.
    tty: bool,
    spinner: Mutex<Option<ProgressBar>>,
    /// Whether text of the answer being written has reached stdout.
    streaming: AtomicBool,
    /// Whether a thought being written has reached stderr, its line not
    /// yet ended.
    thinking: AtomicBool,
    /// Whether a question is open: the spinner stays stopped, so that a
    /// running call's progress does not draw over it.
    held: AtomicBool,
    /// The running command's last lines.
    tail: Mutex<LiveTail>,
    /// Whether a resumed session's history is being shown: all of it on
    /// stderr, the answers included.
    replaying: AtomicBool,
    reporter: Reporter,
}

impl Console {
    pub(crate) fn new() -> Self {
        Self {
            tty: std::io::stderr().is_terminal(),
            spinner: Mutex::new(None),
            streaming: AtomicBool::new(false),
            thinking: AtomicBool::new(false),
            held: AtomicBool::new(false),
            tail: Mutex::new(LiveTail::default()),
            replaying: AtomicBool::new(false),
            reporter: Reporter::for_stderr(),
        }
    }

    /// Shows the events `replay` shows as a resumed session's history,
    /// on stderr: what was said and done before, so the user knows where
    /// the conversation stands.
    pub(crate) fn history<T>(&self, replay: impl FnOnce() -> T) -> T {
        self.replaying.store(true, Ordering::Relaxed);
        let shown = replay();
        self.replaying.store(false, Ordering::Relaxed);
        shown
    }

    /// An event of a resumed session's history: what the person and the
    /// model said, and the calls.
    fn recalled(&self, event: SessionEvent) {
        match event {
            SessionEvent::Thought { text, .. } if !text.is_empty() => self.line(&dimmed(&text)),
            SessionEvent::Text { text, .. } if !text.is_empty() => self.line(&text),
            SessionEvent::CallMade(call) => self.line(&call_line(&call)),
            event @ (SessionEvent::UserText { .. }
            | SessionEvent::CallEnded(_)
            | SessionEvent::Problem { .. }) => self.live(event),
            _ => {}
        }
    }

    /// Shows an event of the session: the answer on stdout, the rest on
    /// stderr.
    pub(crate) fn show(&self, event: SessionEvent) {
        match self.replaying.load(Ordering::Relaxed) {
            true => self.recalled(event),
            false => self.live(event),
        }
    }

    /// An event of the turn that runs.
    fn live(&self, event: SessionEvent) {
        if !matches!(event, SessionEvent::Thought { .. }) {
            self.end_thought();
        }
        match event {
            SessionEvent::UserText { text, .. } => {
                self.line(&format!("> {}", one_line(&text, 160)));
            }
            SessionEvent::Asking => self.spin("thinking…".to_owned()),
            SessionEvent::Text { text, .. } => self.text(&text),
            SessionEvent::Thought { text, .. } => self.thought(&text),
            // Its text has streamed to stdout already: end its line.
            SessionEvent::Answered => {
                self.idle();
                if self.streaming.swap(false, Ordering::Relaxed) {
                    out(&mut std::io::stdout(), "\n");
                }
            }
            SessionEvent::CallMade(call) => {
                self.line(&call_line(&call));
                *self.tail.lock() = LiveTail::default();
                self.spin(running(&call.tool));
            }
            SessionEvent::CallProgress { tool, text, .. } => {
                self.spin(format!("`{tool}`: {}", one_line(&text, 100)));
            }
            SessionEvent::CallOutput { tool, text, .. } => self.output(&tool, &text),
            SessionEvent::CallEnded(end) => self.line(&format!("  {}", result_summary(&end))),
            SessionEvent::Notice { text } | SessionEvent::Compacted { report: text, .. } => {
                self.line(&text);
            }
            SessionEvent::Refused { text } => self.problem(&Problem::new(text)),
            SessionEvent::Problem { problem } => self.problem(&problem),
            SessionEvent::TurnEnded => self.idle(),
            // An editor's: a terminal shows the command's output and the
            // result's line instead, and no meter, title or plan.
            SessionEvent::UserImage { .. }
            | SessionEvent::CallRunning { .. }
            | SessionEvent::FileChanged { .. }
            | SessionEvent::Plan { .. }
            | SessionEvent::Usage { .. }
            | SessionEvent::Title { .. }
            | SessionEvent::Steered { .. }
            | SessionEvent::QuestionShown { .. }
            | SessionEvent::QuestionEnded { .. } => {}
        }
    }

    /// A line of its own on stderr, the spinner stopped.
    fn line(&self, text: &str) {
        self.idle();
        out(&mut std::io::stderr(), &format!("{text}\n"));
    }

    /// A piece of what the model thinks before it answers, as it writes
    /// it: dimmed, on stderr, apart from the answer.
    fn thought(&self, piece: &str) {
        if !piece.is_empty() {
            self.idle();
            self.thinking.store(true, Ordering::Relaxed);
            out(&mut std::io::stderr(), &dimmed(piece));
        }
    }

    /// Ends the line of a thought being written, if one is.
    fn end_thought(&self) {
        if self.thinking.swap(false, Ordering::Relaxed) {
            out(&mut std::io::stderr(), "\n");
        }
    }

    /// A piece of the answer, as the model writes it.
    fn text(&self, piece: &str) {
        if !piece.is_empty() {
            self.idle();
            self.end_thought();
            self.streaming.store(true, Ordering::Relaxed);
            out(&mut std::io::stdout(), piece);
        }
    }

    /// Text a running call of tool `tool` wrote: its last lines, under the
    /// spinner's line.
    fn output(&self, tool: &str, text: &str) {
        if !self.tty {
            return;
        }
        let lines = {
            let mut tail = self.tail.lock();
            tail.push(text);
            tail.lines()
        };
        let mut message = running(tool);
        for line in lines {
            let line = one_line(&line, 120);
            message.push_str(&format!("\n  {}", console::style(line).dim()));
        }
        if let Some(spinner) = self.spinner.lock().as_ref() {
            spinner.set_message(message);
        }
    }

    pub(crate) fn spin(&self, message: String) {
        if !self.tty || self.held.load(Ordering::Relaxed) {
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

    /// Keeps the spinner stopped (`true`) while a question is open, or
    /// lets it start again.
    pub(crate) fn hold_spinner(&self, held: bool) {
        self.held.store(held, Ordering::Relaxed);
    }

    pub(crate) fn idle(&self) {
        if let Some(spinner) = self.spinner.lock().take() {
            spinner.finish_and_clear();
        }
    }

    pub(crate) fn ask(&self) {
        out(&mut std::io::stderr(), "> ");
    }

    pub(crate) fn problem(&self, problem: &Problem) {
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

/// `text` dimmed, where stderr shows styles (a terminal, or
/// `CLICOLOR_FORCE`); plain elsewhere.
fn dimmed(text: &str) -> String {
    console::style(text).for_stderr().dim().to_string()
}

/// A call as its line shows it: `→ bash {"command":"ls"}`.
fn call_line(call: &CallView) -> String {
    format!("→ {} {}", call.tool, one_line(&call.input.to_string(), 160))
}

/// The spinner's line while a call of `tool` runs.
fn running(tool: &str) -> String {
    format!("running `{tool}`…")
}

/// How many of a running command's last lines show under its call.
const TAIL_LINES: usize = 3;

/// A running command's last [`TAIL_LINES`] lines, the one it is writing
/// included; a carriage return starts its line again, as a terminal
/// would (a progress bar redraws in place).
#[derive(Debug, Default)]
struct LiveTail {
    done: VecDeque<String>,
    current: String,
}

impl LiveTail {
    fn push(&mut self, text: &str) {
        let mut pieces = text.split('\n');
        if let Some(first) = pieces.next() {
            self.write(first);
        }
        for piece in pieces {
            self.done.push_back(std::mem::take(&mut self.current));
            if self.done.len() > TAIL_LINES {
                self.done.pop_front();
            }
            self.write(piece);
        }
    }

    fn write(&mut self, piece: &str) {
        match piece.rsplit_once('\r') {
            Some((_, after)) => self.current = after.to_owned(),
            None => self.current.push_str(piece),
        }
    }

    /// The last lines, without an empty one being written.
    fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.done.iter().cloned().collect();
        if !self.current.is_empty() {
            lines.push(self.current.clone());
        }
        let skip = lines.len().saturating_sub(TAIL_LINES);
        lines.split_off(skip)
    }
}

/// Writes to a stream; a closed stream leaves nothing to report to.
pub(crate) fn out(stream: &mut impl Write, text: &str) {
    let _ = stream
        .write_all(text.as_bytes())
        .and_then(|()| stream.flush());
}

/// `text` on one line, cut to about `max` characters.
pub(crate) fn one_line(text: &str, max: usize) -> String {
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
fn result_summary(end: &CallEnd) -> String {
    let (brief, images) = (end.brief(), end.images_only());
    let first = match &images {
        Some(images) => images.as_str(),
        None if brief.first.is_empty() && end.text.is_empty() => "(no output)",
        None => brief.first,
    };
    let mut summary = format!(
        "← {}{}",
        if end.is_error { "error: " } else { "" },
        one_line(first, 120)
    );
    if brief.more > 0 {
        summary.push_str(&format!(" (+{} lines)", brief.more));
    }
    if let Some(marker) = brief.marker {
        summary.push_str(&format!(" {marker}"));
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(text: &str, is_error: bool) -> CallEnd {
        CallEnd {
            call_id: "c".to_owned(),
            tool: "bash".to_owned(),
            text: text.to_owned(),
            is_error,
            never_ran: false,
            images: Vec::new(),
            command: None,
        }
    }

    #[test]
    fn results_show_their_first_line_and_their_marker() {
        assert_eq!(
            result_summary(&ended("a\nb\nc\n[exit code: 3]", false)),
            "← a (+2 lines) [exit code: 3]"
        );
        assert_eq!(result_summary(&ended("only", true)), "← error: only");
        assert_eq!(result_summary(&ended("", false)), "← (no output)");
        // Images and no text: said, not "(no output)".
        let mut image = ended("", false);
        image.images = vec![dsh_agent_loop::Image {
            mime_type: "image/png".to_owned(),
            data: "iVBORw0KGgo=".to_owned(),
        }];
        assert_eq!(result_summary(&image), "← 1 image: image/png, 8 bytes");
    }

    #[test]
    fn a_running_command_shows_its_last_lines() {
        let mut tail = LiveTail::default();
        tail.push("one\ntw");
        assert_eq!(tail.lines(), ["one", "tw"]);
        tail.push("o\nthree\nfour\n");
        assert_eq!(tail.lines(), ["two", "three", "four"]);
        tail.push("10%\r50%\r");
        tail.push("90%");
        assert_eq!(tail.lines(), ["three", "four", "90%"]);
    }

    #[test]
    fn long_arguments_are_cut() {
        assert_eq!(one_line("{\"a\":\n 1}", 160), "{\"a\": 1}");
        assert_eq!(one_line("abcdef", 3), "abc…");
    }
}
