//! A server's log messages (`notifications/message`): asked for at the
//! level its table sets (`logging/setLevel`), and handed to the host
//! with its level ([`ServerSaid::Log`]), where its stderr goes.

// rmcp marks logging deprecated (SEP-2577, for the protocol after
// 2025-11-25); the version dsh speaks has it, and servers of today log.
#![allow(
    deprecated,
    reason = "rmcp marks logging deprecated; 2025-11-25 has it"
)]

use rmcp::RoleClient;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::Peer;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{ServerConfig, ServerSaid};

/// The least severe log message of a server dsh shows (`log_level` of
/// `[mcp.<name>]`), as MCP (and syslog) orders them. Default: `warning`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum McpLogLevel {
    /// Everything, down to debugging detail.
    Debug,
    /// Informational messages and above.
    Info,
    /// Normal but significant events and above.
    Notice,
    /// Warnings and above.
    #[default]
    Warning,
    /// Errors and above.
    Error,
    /// Critical conditions and above.
    Critical,
    /// Conditions that need action now, and above.
    Alert,
    /// Only a server that is unusable.
    Emergency,
}

impl McpLogLevel {
    /// The level as MCP has it.
    pub(crate) fn protocol(self) -> LoggingLevel {
        match self {
            Self::Debug => LoggingLevel::Debug,
            Self::Info => LoggingLevel::Info,
            Self::Notice => LoggingLevel::Notice,
            Self::Warning => LoggingLevel::Warning,
            Self::Error => LoggingLevel::Error,
            Self::Critical => LoggingLevel::Critical,
            Self::Alert => LoggingLevel::Alert,
            Self::Emergency => LoggingLevel::Emergency,
        }
    }

    /// The level of MCP's `level`.
    fn of(level: LoggingLevel) -> Self {
        match level {
            LoggingLevel::Debug => Self::Debug,
            LoggingLevel::Info => Self::Info,
            LoggingLevel::Notice => Self::Notice,
            LoggingLevel::Warning => Self::Warning,
            LoggingLevel::Error => Self::Error,
            LoggingLevel::Critical => Self::Critical,
            LoggingLevel::Alert => Self::Alert,
            LoggingLevel::Emergency => Self::Emergency,
        }
    }

    /// The level's name, as the table writes it.
    fn name(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }
}

/// The level's name, as the table writes it (`warning`).
impl std::fmt::Display for McpLogLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The most characters of one log message shown; a server's stderr line
/// has the same cap in bytes.
const MAX_MESSAGE_CHARS: usize = crate::connection::stderr::MAX_STDERR_LINE;

/// The most characters of a logger's name shown.
const MAX_LOGGER_CHARS: usize = 100;

/// A log message as the person is shown it ([`ServerSaid::Log`]), or
/// `None` when it is less severe than `least` (a server that ignores
/// `logging/setLevel` is filtered here): a text message as it is, any
/// other data as its JSON; both it and the logger's name as a person is
/// shown a server's text ([`crate::shown`]: escaped, so it stays one line
/// and holds no terminal sequence), cut at [`MAX_MESSAGE_CHARS`] and
/// [`MAX_LOGGER_CHARS`].
pub(crate) fn log_line(
    params: &LoggingMessageNotificationParam,
    least: McpLogLevel,
) -> Option<ServerSaid> {
    let level = McpLogLevel::of(params.level);
    if level < least {
        return None;
    }
    let data = match &params.data {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    Some(ServerSaid::Log {
        level,
        logger: (params.logger.as_deref()).map(|logger| crate::shown(logger, MAX_LOGGER_CHARS)),
        message: crate::shown(&data, MAX_MESSAGE_CHARS),
    })
}

/// Asks a server with the logging capability for the log messages its
/// table's `log_level` shows (`logging/setLevel`); one that refuses is
/// said, and its messages below the level are still not shown.
#[allow(
    deprecated,
    reason = "rmcp marks logging deprecated (SEP-2577); 2025-11-25 has it"
)]
pub(crate) async fn set_log_level(config: &ServerConfig, peer: &Peer<RoleClient>) {
    let params = rmcp::model::SetLevelRequestParams::new(config.log_level.protocol());
    if let Err(error) = peer.set_level(params).await {
        config.output.failed(
            &config.name,
            format!("it refused the log level `logging/setLevel` asked for: {error}"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_shown_at_or_above_the_level_with_its_level_and_logger() {
        let mut warning =
            LoggingMessageNotificationParam::new(LoggingLevel::Warning, "disk\nlow".into());
        warning.logger = Some("fs".to_owned());
        assert_eq!(
            log_line(&warning, McpLogLevel::Warning)
                .map(|said| said.to_string())
                .as_deref(),
            Some("warning: fs: disk\\nlow")
        );
        assert_eq!(log_line(&warning, McpLogLevel::Error), None);
        let data =
            LoggingMessageNotificationParam::new(LoggingLevel::Debug, serde_json::json!({"n": 1}));
        assert_eq!(
            log_line(&data, McpLogLevel::Debug)
                .map(|said| said.to_string())
                .as_deref(),
            Some(r#"debug: {"n":1}"#)
        );
        assert_eq!(log_line(&data, McpLogLevel::default()), None);
    }

    #[test]
    fn a_long_message_is_cut() {
        let long = LoggingMessageNotificationParam::new(
            LoggingLevel::Error,
            "x".repeat(MAX_MESSAGE_CHARS + 10).into(),
        );
        let line = log_line(&long, McpLogLevel::Error)
            .expect("shown")
            .to_string();
        assert_eq!(
            line.chars().count(),
            "error: ".len() + MAX_MESSAGE_CHARS + 1
        );
        assert!(line.ends_with('…'));
        // Cut on the escaped text: the marker is there though the
        // message has fewer characters than the cap.
        let newlines = LoggingMessageNotificationParam::new(
            LoggingLevel::Error,
            "\n".repeat(MAX_MESSAGE_CHARS / 2 + 1).into(),
        );
        let line = log_line(&newlines, McpLogLevel::Error)
            .expect("shown")
            .to_string();
        assert!(line.ends_with("\\n…"), "{line}");
    }

    #[test]
    fn a_terminal_sequence_in_a_message_or_logger_is_escaped() {
        let mut osc = LoggingMessageNotificationParam::new(
            LoggingLevel::Error,
            "\u{1b}]52;c;aGk=\u{7}".into(),
        );
        osc.logger = Some("\u{1b}[2Jfs".to_owned());
        assert_eq!(
            log_line(&osc, McpLogLevel::Error)
                .map(|said| said.to_string())
                .as_deref(),
            Some("error: \\u{1b}[2Jfs: \\u{1b}]52;c;aGk=\\u{7}")
        );
    }
}
