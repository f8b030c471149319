//! What a server says of a call while it runs (`notifications/progress`),
//! handed to the call's [`ToolProgress`], which a front end shows (an
//! editor's `tool_call_update`, a line of `dsh run`).
//!
//! rmcp gives every request a progress token of its own; a call ties its
//! token to its display for as long as it runs ([`CallProgress::watch`]),
//! and the connection's handler reports what comes for a token
//! ([`CallProgress::report`]). Progress for a token no call watches (a
//! call over, a server that invents tokens) is dropped.

use std::collections::HashMap;
use std::sync::Arc;

use dsh_tools::ToolProgress;
use parking_lot::Mutex;
use rmcp::model::{ProgressNotificationParam, ProgressToken};

/// The displays of a server's running calls, by their progress tokens:
/// shared by the server, which adds them, and the connection's handler,
/// which reports to them.
#[derive(Debug, Default)]
pub(crate) struct CallProgress {
    calls: Mutex<HashMap<ProgressToken, ToolProgress>>,
}

/// A call's progress token tied to its display; dropping it unties them.
pub(crate) struct Watching {
    owner: Arc<CallProgress>,
    token: ProgressToken,
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.owner.calls.lock().remove(&self.token);
    }
}

impl CallProgress {
    /// Sends what the server says of `token` to `progress` until the
    /// returned guard is dropped.
    pub(crate) fn watch(
        self: &Arc<Self>,
        token: ProgressToken,
        progress: ToolProgress,
    ) -> Watching {
        self.calls.lock().insert(token.clone(), progress);
        Watching {
            owner: Arc::clone(self),
            token,
        }
    }

    /// Hands a progress notification to the display of its call, if a
    /// call watches its token.
    pub(crate) fn report(&self, params: &ProgressNotificationParam) {
        // Cloned out of the lock: the display runs a front end's code.
        let progress = self.calls.lock().get(&params.progress_token).cloned();
        if let Some(progress) = progress {
            progress.report(&progress_text(params));
        }
    }
}

/// A progress notification as a line: its message, then how far along
/// (`step 2 of 3 (2/3)`); the numbers alone when it has no message.
pub(crate) fn progress_text(params: &ProgressNotificationParam) -> String {
    let done = match params.total {
        Some(total) => format!("{}/{}", number(params.progress), number(total)),
        None => number(params.progress),
    };
    match params.message.as_deref().map(str::trim) {
        Some(message) if !message.is_empty() => format!("{message} ({done})"),
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
    fn progress_reaches_the_call_that_watches_its_token_while_it_does() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let calls = Arc::new(CallProgress::default());
        let watching = calls.watch(
            token(7),
            ToolProgress::new(move |text| sink.lock().push(text.to_owned())),
        );
        calls.report(&ProgressNotificationParam::new(token(7), 1.0));
        calls.report(&ProgressNotificationParam::new(token(8), 1.0));
        drop(watching);
        calls.report(&ProgressNotificationParam::new(token(7), 2.0));
        assert_eq!(*seen.lock(), ["1"]);
        assert!(calls.calls.lock().is_empty());
    }
}
