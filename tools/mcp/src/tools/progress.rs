//! What a server says of a call while it runs (`notifications/progress`),
//! handed to the call's [`ToolProgress`], which a front end shows (an
//! editor's `tool_call_update`, a line of `dsh run`).
//!
//! rmcp gives every request a progress token of its own, and tells it
//! only once the request is sent; a call ties its token to its display
//! for as long as it runs ([`CallProgress::watch`]), and the connection's
//! handler reports what comes for a token ([`CallProgress::report`]).
//! A server may send progress before the call has tied its token (rmcp
//! reads it on another task): the last [`MAX_EARLY`] reports of tokens no
//! call watches are kept, and a call that ties its token gets the newest
//! of its own first. Others (a call over, a server that invents tokens) are dropped.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use dsh_tools::ToolProgress;
use parking_lot::Mutex;
use rmcp::model::{ProgressNotificationParam, ProgressToken};

/// How many reports of tokens no call watches yet are kept.
const MAX_EARLY: usize = 32;

/// The displays of a server's running calls, by their progress tokens:
/// shared by the server, which adds them, and the connection's handler,
/// which reports to them.
#[derive(Debug, Default)]
pub(crate) struct CallProgress {
    calls: Mutex<Calls>,
}

#[derive(Debug, Default)]
struct Calls {
    /// The running calls' displays (`None`: a call shown nowhere).
    watched: HashMap<ProgressToken, Option<ToolProgress>>,
    /// Reports of tokens not watched (yet), oldest first.
    early: VecDeque<(ProgressToken, String)>,
}

/// A call's progress token tied to its display; dropping it unties them.
pub(crate) struct Watching {
    owner: Arc<CallProgress>,
    token: ProgressToken,
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.owner.calls.lock().watched.remove(&self.token);
    }
}

impl CallProgress {
    /// Sends what the server says of `token` to `progress` (nowhere when
    /// `None`) until the returned guard is dropped, starting with the
    /// newest thing it said before (older reports are stale).
    ///
    /// That one is delivered under the lock (the display is quick, as
    /// [`ToolProgress`] asks): a report that comes meanwhile finds the
    /// token watched, and is delivered after it, never overwritten by it.
    pub(crate) fn watch(
        self: &Arc<Self>,
        token: ProgressToken,
        progress: Option<ToolProgress>,
    ) -> Watching {
        let mut calls = self.calls.lock();
        calls.watched.insert(token.clone(), progress.clone());
        let mut newest = None;
        calls.early.retain(|(of, text)| {
            let mine = *of == token;
            if mine {
                newest = Some(text.clone());
            }
            !mine
        });
        if let (Some(progress), Some(text)) = (&progress, newest) {
            progress.report(&text);
        }
        drop(calls);
        Watching {
            owner: Arc::clone(self),
            token,
        }
    }

    /// Hands a progress notification to the display of its call; keeps
    /// it when no call watches its token yet.
    pub(crate) fn report(&self, params: &ProgressNotificationParam) {
        let text = progress_text(params);
        let progress = {
            let mut calls = self.calls.lock();
            match calls.watched.get(&params.progress_token) {
                Some(progress) => progress.clone(),
                None => {
                    if calls.early.len() == MAX_EARLY {
                        calls.early.pop_front();
                    }
                    calls.early.push_back((params.progress_token.clone(), text));
                    return;
                }
            }
        };
        if let Some(progress) = progress {
            progress.report(&text);
        }
    }
}

/// The most characters of a progress message shown (escaped).
const MAX_PROGRESS_CHARS: usize = 500;

/// A progress notification as a line: its message as a person is shown a
/// server's text ([`crate::shown`], at most [`MAX_PROGRESS_CHARS`]), then
/// how far along (`step 2 of 3 (2/3)`); the numbers alone when it has no
/// message.
pub(crate) fn progress_text(params: &ProgressNotificationParam) -> String {
    let done = match params.total {
        Some(total) => format!("{}/{}", number(params.progress), number(total)),
        None => number(params.progress),
    };
    match params.message.as_deref().map(str::trim) {
        Some(message) if !message.is_empty() => {
            format!("{} ({done})", crate::shown(message, MAX_PROGRESS_CHARS))
        }
        _ => done,
    }
}

/// A number as a person writes it: `2`, not `2.0`.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    fn token(n: i64) -> ProgressToken {
        ProgressToken(NumberOrString::Number(n))
    }

    #[test]
    fn progress_reads_as_its_message_and_how_far_along() {
        let step = ProgressNotificationParam::new(token(1), 2.0)
            .with_total(3.0)
            .with_message("step 2 of 3");
        assert_eq!(progress_text(&step), "step 2 of 3 (2/3)");
        assert_eq!(
            progress_text(&ProgressNotificationParam::new(token(1), 0.5)),
            "0.5"
        );
        let blank = ProgressNotificationParam::new(token(1), 40.0)
            .with_total(100.0)
            .with_message(" ");
        assert_eq!(progress_text(&blank), "40/100");
    }

    #[test]
    fn a_progress_message_is_escaped_and_cut() {
        let osc =
            ProgressNotificationParam::new(token(1), 1.0).with_message("\u{1b}]52;c;aGk=\u{7}");
        assert_eq!(progress_text(&osc), "\\u{1b}]52;c;aGk=\\u{7} (1)");
        let long = ProgressNotificationParam::new(token(1), 1.0).with_message("x".repeat(100_000));
        assert_eq!(
            progress_text(&long),
            format!("{}… (1)", "x".repeat(MAX_PROGRESS_CHARS))
        );
    }

    #[test]
    fn progress_reaches_the_call_that_watches_its_token_while_it_does() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let calls = Arc::new(CallProgress::default());
        // Said before the call tied its token: it gets the newest when it
        // does.
        calls.report(&ProgressNotificationParam::new(token(7), 0.5));
        calls.report(&ProgressNotificationParam::new(token(7), 1.0));
        calls.report(&ProgressNotificationParam::new(token(9), 1.0));
        let display = ToolProgress::new(move |text| sink.lock().push(text.to_owned()));
        let watching = calls.watch(token(7), Some(display));
        assert!(
            calls
                .calls
                .lock()
                .early
                .iter()
                .all(|(of, _)| *of != token(7))
        );
        calls.report(&ProgressNotificationParam::new(token(7), 2.0));
        calls.report(&ProgressNotificationParam::new(token(8), 1.0));
        drop(watching);
        calls.report(&ProgressNotificationParam::new(token(7), 3.0));
        assert_eq!(*seen.lock(), ["1", "2"]);
        assert!(calls.calls.lock().watched.is_empty());
    }

    #[test]
    fn reports_no_call_claims_are_kept_a_few() {
        let calls = Arc::new(CallProgress::default());
        for n in 0..100 {
            calls.report(&ProgressNotificationParam::new(token(n), 1.0));
        }
        assert_eq!(calls.calls.lock().early.len(), MAX_EARLY);
        // A call shown nowhere takes its own and shows none.
        drop(calls.watch(token(99), None));
        assert_eq!(calls.calls.lock().early.len(), MAX_EARLY - 1);
    }
}
