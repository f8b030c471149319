//! The command's output as it runs, for the caller's
//! [`CommandOutput`]: whole characters, at most one report every
//! [`LIVE_INTERVAL`] (or sooner once [`LIVE_FLUSH_BYTES`] wait), so a
//! command that writes a byte at a time costs a front end ten reports a
//! second, not thousands.

use std::time::Duration;

use dsh_tools::{CommandExit, CommandOutput, CommandReport};
use tokio::time::Instant;

/// The least time between two reports of output.
pub(crate) const LIVE_INTERVAL: Duration = Duration::from_millis(100);

/// How much waiting output is reported at once, interval or not: what the
/// stream holds is bounded by it.
pub(crate) const LIVE_FLUSH_BYTES: usize = 64 * 1024;

/// Output waiting to be reported, and when it is due.
#[derive(Debug)]
pub(crate) struct LiveStream {
    output: CommandOutput,
    pending: Vec<u8>,
    last_sent: Option<Instant>,
    due: Option<Instant>,
}

impl LiveStream {
    pub(crate) fn new(output: CommandOutput) -> Self {
        Self {
            output,
            pending: Vec::new(),
            last_sent: None,
            due: None,
        }
    }

    /// Takes `bytes` the command wrote at `now`: reported at once when
    /// nothing was reported for an interval (the first output is), or when
    /// enough waits; otherwise due at the end of the interval.
    pub(crate) fn push(&mut self, bytes: &[u8], now: Instant) {
        self.pending.extend_from_slice(bytes);
        let next = self.last_sent.map(|last| last + LIVE_INTERVAL);
        match next {
            Some(next) if next > now && self.pending.len() < LIVE_FLUSH_BYTES => {
                self.due = Some(next);
            }
            _ => self.flush(now),
        }
    }

    /// When the waiting output is due, if any waits.
    pub(crate) fn due(&self) -> Option<Instant> {
        self.due
    }

    /// Reports the waiting output's whole characters; a character the
    /// last read split waits for its rest.
    pub(crate) fn flush(&mut self, now: Instant) {
        self.due = None;
        let whole = dsh_tools::complete_utf8_len(&self.pending);
        if whole == 0 {
            return;
        }
        let text = String::from_utf8_lossy(&self.pending[..whole]).into_owned();
        self.pending.drain(..whole);
        self.last_sent = Some(now);
        self.output.report(CommandReport::Output(&text));
    }

    /// The command ended: what waits (a split character replaced), then
    /// how it ended.
    pub(crate) fn finish(mut self, exit: CommandExit) {
        if !self.pending.is_empty() {
            let text = String::from_utf8_lossy(&self.pending).into_owned();
            self.output.report(CommandReport::Output(&text));
        }
        self.pending.clear();
        self.output.report(CommandReport::Exit(exit));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    fn stream() -> (LiveStream, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let output = CommandOutput::new(move |report| {
            let line = match report {
                CommandReport::Output(text) => text.to_owned(),
                CommandReport::Exit(exit) => format!("exit {:?} {:?}", exit.code, exit.signal),
                _ => String::new(),
            };
            sink.lock().unwrap().push(line);
        });
        (LiveStream::new(output), seen)
    }

    #[test]
    fn output_within_an_interval_is_reported_once_when_due() {
        let (mut live, seen) = stream();
        let start = Instant::now();
        live.push(b"one\n", start);
        live.push(b"two\n", start + Duration::from_millis(10));
        live.push(b"three\n", start + Duration::from_millis(20));
        assert_eq!(live.due(), Some(start + LIVE_INTERVAL));
        live.flush(start + LIVE_INTERVAL);
        live.push(b"four\n", start + LIVE_INTERVAL * 3);
        live.finish(CommandExit {
            code: Some(0),
            signal: None,
        });
        assert_eq!(
            *seen.lock().unwrap(),
            ["one\n", "two\nthree\n", "four\n", "exit Some(0) None"]
        );
    }

    #[test]
    fn enough_waiting_output_is_reported_before_the_interval_ends() {
        let (mut live, seen) = stream();
        let start = Instant::now();
        live.push(b"first", start);
        live.push(&vec![b'x'; LIVE_FLUSH_BYTES], start);
        assert_eq!(live.due(), None);
        assert_eq!(seen.lock().unwrap().len(), 2);
    }

    #[test]
    fn a_character_split_between_reads_is_reported_whole() {
        let (mut live, seen) = stream();
        let start = Instant::now();
        let e_acute = "é".as_bytes();
        live.push(&[b'a', e_acute[0]], start);
        live.push(&[e_acute[1]], start + LIVE_INTERVAL);
        live.finish(CommandExit::default());
        assert_eq!(*seen.lock().unwrap(), ["a", "é", "exit None None"]);
    }
}
