//! The stdio transport of `dsh acp`: newline-delimited JSON-RPC on stdin
//! and stdout, hardened against what an editor (or anything else on the
//! other end of a pipe) may do.
//!
//! - **Any bytes in, an answer out.** A line that is not UTF-8, not JSON,
//!   or longer than [`MAX_LINE_BYTES`] is answered with a JSON-RPC parse
//!   error (`-32700`, id `null`) for that line, and the server goes on. An
//!   error never echoes more than [`ECHO_BYTES`] of the line.
//! - **Bounded memory.** A line is read in pieces and only its first
//!   [`MAX_LINE_BYTES`] are kept; replies waiting for a client that stopped
//!   reading are counted, and past [`MAX_PENDING_OUTPUT_BYTES`] the
//!   connection ends with an error instead of growing.
//! - **A closing editor is a shutdown, not a crash.** When stdin ends (or
//!   the caller's stop token fires: a signal), the transport first runs
//!   the caller's wind-down (cancel the turns, wait for them and for child
//!   processes) while the connection still runs, so turns end through
//!   their own cancellation and their replies still go out; then it closes
//!   the connection's input, and the server's future returns.
//!
//! The SDK's own `Stdio` reads lines with `BufRead::lines`, which fails
//! the whole connection on one invalid UTF-8 byte and buffers a line of
//! any length; its parse errors carry the whole line as `data`.

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use agent_client_protocol::{Channel, ConnectTo, Error, ErrorCode, Role, TransportFrame};
use futures::StreamExt;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

/// The longest line `dsh acp` reads, in bytes. A prompt with a large
/// pasted file fits; a runaway client does not exhaust memory.
pub(crate) const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How many bytes of replies may wait for a client that is not reading
/// before the connection ends.
pub(crate) const MAX_PENDING_OUTPUT_BYTES: usize = 64 * 1024 * 1024;

/// How much of a bad line an error quotes back.
pub(crate) const ECHO_BYTES: usize = 120;

/// What runs when input ends, before the connection closes.
type WindDown = Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send>;

/// `dsh acp`'s stdin and stdout, as a transport for the SDK (see the
/// module documentation).
pub(crate) struct StdioTransport {
    stop: CancellationToken,
    wind_down: Option<WindDown>,
}

impl std::fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioTransport")
            .field("stop", &self.stop)
            .finish_non_exhaustive()
    }
}

impl StdioTransport {
    /// Serves until stdin ends or `stop` is cancelled.
    pub(crate) fn new(stop: CancellationToken) -> Self {
        Self {
            stop,
            wind_down: None,
        }
    }

    /// Runs `wind_down` when input ends, while the connection still runs;
    /// the connection closes when it returns.
    pub(crate) fn on_input_end<F>(mut self, wind_down: impl FnOnce() -> F + Send + 'static) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.wind_down = Some(Box::new(move || Box::pin(wind_down())));
        self
    }
}

impl<R: Role> ConnectTo<R> for StdioTransport {
    async fn connect_to(self, client: impl ConnectTo<R::Counterpart>) -> Result<(), Error> {
        let (channel, driver) = client.into_channel_and_future();
        let Channel {
            rx: from_server,
            tx: to_server,
            ..
        } = channel;

        // Reading stdin blocks a thread that cannot be interrupted: a thread
        // of its own, never joined, so a signal need not wait for a line.
        let (lines_tx, mut lines_rx) = tokio::sync::mpsc::channel::<Line>(8);
        std::thread::Builder::new()
            .name("dsh-acp-stdin".to_owned())
            .spawn(move || {
                let mut reader = LineReader::new(std::io::stdin().lock(), MAX_LINE_BYTES);
                // A read error ends input like EOF does.
                while let Ok(Some(line)) = reader.next_line() {
                    if lines_tx.blocking_send(line).is_err() {
                        break;
                    }
                }
            })
            .map_err(|error| Error::internal_error().data(format!("cannot read stdin: {error}")))?;

        let stop = self.stop;
        let wind_down = self.wind_down;
        let incoming = async move {
            loop {
                tokio::select! {
                    line = lines_rx.recv() => match line {
                        Some(line) => {
                            if let Some(frame) = frame_of(line)
                                && to_server.unbounded_send(frame).is_err()
                            {
                                break;
                            }
                        }
                        None => break,
                    },
                    () = stop.cancelled() => break,
                }
            }
            if let Some(wind_down) = wind_down {
                wind_down().await;
            }
            // Closing the server's input ends the connection.
            drop(to_server);
            futures::future::pending::<()>().await;
        };

        let outgoing = write_replies(from_server, std::io::stdout());
        let serve = async move {
            match driver {
                Some(driver) => futures::try_join!(driver, outgoing).map(|_| ()),
                None => outgoing.await,
            }
        };
        tokio::select! {
            served = serve => served,
            () = incoming => Ok(()),
        }
    }
}

/// Writes each frame the server sends as one line of `out`, on a thread of
/// its own (a client that stops reading blocks that thread, not the
/// server), counting what waits; fails when more than
/// [`MAX_PENDING_OUTPUT_BYTES`] wait.
async fn write_replies(
    mut frames: futures::channel::mpsc::UnboundedReceiver<TransportFrame>,
    out: impl Write + Send + 'static,
) -> Result<(), Error> {
    let pending = Arc::new(AtomicUsize::new(0));
    let closed = Arc::new(AtomicBool::new(false));
    let (lines_tx, lines_rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    {
        let (pending, closed) = (Arc::clone(&pending), Arc::clone(&closed));
        std::thread::Builder::new()
            .name("dsh-acp-stdout".to_owned())
            .spawn(move || {
                let mut out = out;
                for line in lines_rx {
                    let size = line.len();
                    if !closed.load(Ordering::Acquire)
                        && out.write_all(&line).and_then(|()| out.flush()).is_err()
                    {
                        // The client closed its end: nothing more reaches
                        // it, and its input ends soon.
                        closed.store(true, Ordering::Release);
                    }
                    pending.fetch_sub(size, Ordering::AcqRel);
                }
                let _ = done_tx.send(());
            })
            .map_err(|error| {
                Error::internal_error().data(format!("cannot write stdout: {error}"))
            })?;
    }
    while let Some(frame) = frames.next().await {
        let mut line = frame.to_json()?.into_bytes();
        line.push(b'\n');
        let size = line.len();
        let waiting = pending.fetch_add(size, Ordering::AcqRel) + size;
        if waiting > MAX_PENDING_OUTPUT_BYTES && !closed.load(Ordering::Acquire) {
            return Err(Error::new(
                ErrorCode::INTERNAL_ERROR,
                format!(
                    "the client stopped reading: {waiting} bytes of replies wait on stdout, \
                     over the limit of {MAX_PENDING_OUTPUT_BYTES}; dsh ends the connection \
                     rather than grow without bound"
                ),
            ));
        }
        if lines_tx.send(line).is_err() {
            break;
        }
    }
    drop(lines_tx);
    // Everything accepted is written before the connection reports its end
    // (the last reply of a cancelled turn included); a client that never
    // reads again does not hold dsh forever.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), done_rx).await;
    Ok(())
}

/// One line of input, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// A UTF-8 line within the limit, without its `\n`.
    Text(String),
    /// A line that is not UTF-8.
    NotUtf8 {
        /// Its length in bytes.
        bytes: usize,
        /// Where its first invalid byte is.
        invalid_at: usize,
        /// Its first bytes, invalid ones replaced.
        prefix: String,
    },
    /// A line longer than the limit; only its prefix was kept.
    TooLong {
        /// Its length in bytes.
        bytes: usize,
        /// Its first bytes (invalid UTF-8 replaced).
        prefix: String,
    },
}

/// Splits a byte stream into lines of at most `max` bytes, keeping no more
/// than `max` bytes of a line in memory.
#[derive(Debug)]
pub(crate) struct LineReader<R> {
    reader: R,
    max: usize,
}

impl<R: BufRead> LineReader<R> {
    pub(crate) fn new(reader: R, max: usize) -> Self {
        Self { reader, max }
    }

    /// The next line, `None` at the end of input. A last line without a
    /// `\n` is a line.
    pub(crate) fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        let mut kept = Vec::new();
        let mut bytes = 0usize;
        let mut any = false;
        loop {
            let buffer = match self.reader.fill_buf() {
                Ok(buffer) => buffer,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            if buffer.is_empty() {
                if !any {
                    return Ok(None);
                }
                break;
            }
            any = true;
            let (piece, used, ended) = match buffer.iter().position(|&byte| byte == b'\n') {
                Some(at) => (&buffer[..at], at + 1, true),
                None => (buffer, buffer.len(), false),
            };
            bytes = bytes.saturating_add(piece.len());
            let room = if bytes <= self.max {
                piece.len()
            } else {
                // Over the limit: keep only what an error quotes.
                if kept.len() > ECHO_BYTES {
                    kept.truncate(ECHO_BYTES);
                    kept.shrink_to_fit();
                }
                ECHO_BYTES.saturating_sub(kept.len()).min(piece.len())
            };
            kept.extend_from_slice(&piece[..room]);
            self.reader.consume(used);
            if ended {
                break;
            }
        }
        if bytes > self.max {
            kept.truncate(ECHO_BYTES);
            return Ok(Some(Line::TooLong {
                bytes,
                prefix: String::from_utf8_lossy(&kept).into_owned(),
            }));
        }
        match String::from_utf8(kept) {
            Ok(text) => Ok(Some(Line::Text(text))),
            Err(error) => {
                let invalid_at = error.utf8_error().valid_up_to();
                let kept = error.into_bytes();
                Ok(Some(Line::NotUtf8 {
                    bytes,
                    invalid_at,
                    prefix: String::from_utf8_lossy(&kept[..kept.len().min(ECHO_BYTES)])
                        .into_owned(),
                }))
            }
        }
    }
}

/// The frame a line of input is for the SDK: a message, or a malformed
/// value whose error quotes at most [`ECHO_BYTES`] of it. A blank line is
/// nothing.
pub(crate) fn frame_of(line: Line) -> Option<TransportFrame> {
    let parse_error = |message: String, bytes: usize, prefix: &str| TransportFrame::Malformed {
        // Not JSON, so never mistaken for a response: it is answered.
        raw: String::new(),
        error: Error::new(ErrorCode::PARSE_ERROR, message)
            .data(serde_json::json!({ "bytes": bytes, "start": prefix })),
    };
    match line {
        Line::Text(text) if text.trim().is_empty() => None,
        Line::Text(text) => Some(match TransportFrame::parse_json(&text) {
            TransportFrame::Malformed { raw, error } if error.code == ErrorCode::PARSE_ERROR => {
                let reason = serde_json::from_str::<serde::de::IgnoredAny>(&text)
                    .err()
                    .map(|error| format!(": {error}"))
                    .unwrap_or_default();
                drop(raw);
                parse_error(
                    format!("Parse error: the line is not JSON{reason}"),
                    text.len(),
                    prefix(&text),
                )
            }
            frame => frame,
        }),
        Line::NotUtf8 {
            bytes,
            invalid_at,
            prefix,
        } => Some(parse_error(
            format!(
                "Parse error: the line is not UTF-8 (an invalid byte at offset {invalid_at}); \
                 JSON-RPC messages are UTF-8 text"
            ),
            bytes,
            &prefix,
        )),
        Line::TooLong { bytes, prefix } => Some(parse_error(
            format!(
                "Parse error: the line is {bytes} bytes, over dsh's limit of {MAX_LINE_BYTES} \
                 bytes a message; it was skipped"
            ),
            bytes,
            &prefix,
        )),
    }
}

/// The first [`ECHO_BYTES`] of `text`, cut at a character boundary.
fn prefix(text: &str) -> &str {
    let mut end = text.len().min(ECHO_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<Line> {
        let mut reader = LineReader::new(std::io::BufReader::with_capacity(7, input), max);
        std::iter::from_fn(|| reader.next_line().expect("reading a slice")).collect()
    }

    #[test]
    fn lines_split_on_newline_and_a_last_line_without_one_counts() {
        assert_eq!(
            lines(b"{}\n\nabc", 100),
            vec![
                Line::Text("{}".into()),
                Line::Text(String::new()),
                Line::Text("abc".into())
            ]
        );
    }

    #[test]
    fn an_invalid_byte_is_one_bad_line() {
        let read = lines(b"ok\nx\xffy\nok\n", 100);
        assert_eq!(read.len(), 3);
        assert!(matches!(
            &read[1],
            Line::NotUtf8 {
                bytes: 3,
                invalid_at: 1,
                ..
            }
        ));
        assert_eq!(read[2], Line::Text("ok".into()));
    }

    #[test]
    fn a_long_line_keeps_only_a_prefix() {
        let mut input = vec![b'a'; 1000];
        input.extend_from_slice(b"\n{}\n");
        let read = lines(&input, 500);
        let Line::TooLong { bytes, prefix } = &read[0] else {
            panic!("{read:?}")
        };
        assert_eq!((*bytes, prefix.len()), (1000, ECHO_BYTES));
        assert_eq!(read[1], Line::Text("{}".into()));
    }

    #[test]
    fn a_parse_error_quotes_a_short_prefix() {
        let long = format!("not json {}", "x".repeat(10_000));
        let Some(TransportFrame::Malformed { error, .. }) = frame_of(Line::Text(long)) else {
            panic!("a malformed frame")
        };
        assert_eq!(error.code, ErrorCode::PARSE_ERROR);
        assert!(error.to_string().len() < 1000, "{error}");
    }

    mod property {
        use proptest::prelude::*;

        use super::super::*;

        proptest! {
            // `PROPTEST_CASES=100000 cargo test -p dsh-cli --bin dsh transport`
            // runs many more (see ARCHITECTURE.md, "Property tests").
            #![proptest_config(ProptestConfig::with_cases(
                std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(256)
            ))]

            /// Any bytes: no panic, every line kept within the limit, and
            /// every frame's error quotes a bounded prefix.
            #[test]
            fn any_bytes_read_into_bounded_lines(
                input in proptest::collection::vec(
                    prop_oneof![Just(b'\n'), Just(b'{'), Just(b'"'), Just(0xff_u8), any::<u8>()],
                    0..2000,
                ),
                max in 1usize..300,
                capacity in 1usize..64,
            ) {
                let mut reader = LineReader::new(
                    std::io::BufReader::with_capacity(capacity, input.as_slice()),
                    max,
                );
                let mut total = 0;
                while let Some(line) = reader.next_line().expect("reading a slice") {
                    let size = match &line {
                        Line::Text(text) => { prop_assert!(text.len() <= max); text.len() }
                        Line::NotUtf8 { bytes, prefix, .. } => {
                            prop_assert!(*bytes <= max && prefix.len() <= 3 * ECHO_BYTES);
                            *bytes
                        }
                        Line::TooLong { bytes, prefix } => {
                            prop_assert!(*bytes > max && prefix.len() <= 3 * ECHO_BYTES);
                            *bytes
                        }
                    };
                    total += size + 1;
                    if let Some(TransportFrame::Malformed { error, .. }) = frame_of(line) {
                        let data = error.data.map(|data| data.to_string()).unwrap_or_default();
                        prop_assert!(data.len() <= 8 * ECHO_BYTES + 100, "{data}");
                    }
                }
                prop_assert!(total >= input.len());
            }
        }
    }
}
