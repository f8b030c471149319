//! A stdio server's stderr, handed to the host a line at a time
//! ([`ServerSaid::Stderr`]; dsh's front end writes each on its stderr,
//! prefixed `[mcp <name>]`).
//!
//! The copy reads bytes, not text: a byte that is not UTF-8 is shown as
//! `�` and never stops it. It keeps at most [`MAX_STDERR_LINE`] bytes of a
//! line, so a server that writes without a newline costs dsh that much
//! memory and no more; the rest of an over-long line is dropped, and the
//! line says how much. It reads until the server closes its stderr: a
//! copy that stopped early would close the pipe, and the server's next
//! write would fail (`EPIPE`), which kills most servers.

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::{ServerOutput, ServerSaid};

/// The most bytes of one stderr line dsh keeps; the rest is dropped and
/// counted.
pub const MAX_STDERR_LINE: usize = 4096;

/// How much is read from the pipe at a time.
const READ_CHUNK: usize = 8 * 1024;

/// Hands `stderr` to `output` a line at a time ([`ServerSaid::Stderr`]),
/// on a task of its own, until the server closes it.
pub(crate) fn copy_to_output(
    server: &str,
    output: ServerOutput,
    stderr: impl AsyncRead + Unpin + Send + 'static,
) {
    let server = server.to_owned();
    tokio::spawn(async move {
        let read = drain(stderr, MAX_STDERR_LINE, |line| {
            output.said(&server, ServerSaid::Stderr(line));
        })
        .await;
        if let Err(error) = read {
            output.failed(&server, format!("[its stderr could not be read: {error}]"));
        }
    });
}

/// Reads `reader` to its end, handing each line to `emit` as
/// [`Lines`] cuts it (at most `cap` bytes kept a line); returns how many
/// bytes it read. Only a read error other than an interruption ends it
/// before the end.
async fn drain<R: AsyncRead + Unpin>(
    mut reader: R,
    cap: usize,
    mut emit: impl FnMut(String),
) -> std::io::Result<u64> {
    let mut lines = Lines::new(cap);
    let mut buffer = vec![0; READ_CHUNK];
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut buffer).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        total += n as u64;
        lines.push(&buffer[..n], &mut |line| emit(line.text()));
    }
    if let Some(last) = lines.finish() {
        emit(last.text());
    }
    Ok(total)
}

/// Bytes cut into lines at `\n`, whatever chunks they come in: of each
/// line, the first `cap` bytes are kept (less the end of a character the
/// cap splits) and the rest counted.
#[derive(Debug)]
struct Lines {
    cap: usize,
    kept: Vec<u8>,
    dropped: u64,
}

/// One line as [`Lines`] cut it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Line {
    /// Its first bytes, at most the cap, and no newline.
    kept: Vec<u8>,
    /// How many bytes after those it had.
    dropped: u64,
}

impl Line {
    /// The line as shown: its bytes as UTF-8, `�` for what is not, and
    /// a marker when some of it was dropped.
    fn text(&self) -> String {
        let text = String::from_utf8_lossy(&self.kept);
        if self.dropped == 0 {
            return text.into_owned();
        }
        format!("{text}… [{} bytes of this line dropped]", self.dropped)
    }
}

impl Lines {
    fn new(cap: usize) -> Self {
        Self {
            cap,
            kept: Vec::new(),
            dropped: 0,
        }
    }

    /// Takes the next bytes; hands each line they complete to `emit`.
    fn push(&mut self, mut bytes: &[u8], emit: &mut impl FnMut(Line)) {
        while !bytes.is_empty() {
            let (part, rest, ends) = match newline_in(bytes) {
                Some(at) => (&bytes[..at], &bytes[at + 1..], true),
                None => (bytes, &bytes[bytes.len()..], false),
            };
            let room = self.cap.saturating_sub(self.kept.len());
            let taken = if self.dropped == 0 {
                room.min(part.len())
            } else {
                0
            };
            self.kept.extend_from_slice(&part[..taken]);
            if taken < part.len() {
                self.cut_at_character();
                self.dropped += (part.len() - taken) as u64;
            }
            if ends {
                emit(self.take());
            }
            bytes = rest;
        }
    }

    /// The last line, when the bytes ended without a newline.
    fn finish(mut self) -> Option<Line> {
        (!self.kept.is_empty() || self.dropped > 0).then(|| self.take())
    }

    fn take(&mut self) -> Line {
        Line {
            kept: std::mem::take(&mut self.kept),
            dropped: std::mem::take(&mut self.dropped),
        }
    }

    /// Once a line is over the cap: drops the start of a character the
    /// cap split (and counts it), so the cut adds no `�`.
    fn cut_at_character(&mut self) {
        if self.dropped > 0 {
            return;
        }
        let keep = dsh_tools::complete_utf8_len(&self.kept);
        self.dropped += (self.kept.len() - keep) as u64;
        self.kept.truncate(keep);
    }
}

/// Where the first newline of `bytes` is.
fn newline_in(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&byte| byte == b'\n')
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use proptest::prelude::*;
    use tokio::io::ReadBuf;

    use super::*;

    /// A reader that hands out its chunks one read at a time, as a pipe
    /// does with what the writer wrote.
    struct Chunks(VecDeque<Vec<u8>>);

    impl AsyncRead for Chunks {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            if let Some(chunk) = self.0.front_mut() {
                let n = chunk.len().min(buf.remaining());
                buf.put_slice(&chunk[..n]);
                chunk.drain(..n);
                if chunk.is_empty() {
                    self.0.pop_front();
                }
            }
            Poll::Ready(Ok(()))
        }
    }

    fn cut(chunks: &[&[u8]], cap: usize) -> Vec<Line> {
        let mut lines = Lines::new(cap);
        let mut out = Vec::new();
        for chunk in chunks {
            lines.push(chunk, &mut |line| out.push(line));
        }
        out.extend(lines.finish());
        out
    }

    fn line(kept: &str, dropped: u64) -> Line {
        Line {
            kept: kept.as_bytes().to_vec(),
            dropped,
        }
    }

    #[test]
    fn a_byte_that_is_not_utf8_is_shown_and_the_next_lines_follow() {
        let lines = cut(&[b"bad \xff byte\nnext\n", b"last"], 100);
        let texts: Vec<String> = lines.iter().map(Line::text).collect();
        assert_eq!(texts, ["bad \u{fffd} byte", "next", "last"]);
    }

    #[test]
    fn an_over_long_line_keeps_its_start_and_says_what_was_dropped() {
        let lines = cut(&[b"abcdefgh", b"ij\nshort\n"], 4);
        assert_eq!(lines, [line("abcd", 6), line("shor", 1)]);
        assert_eq!(lines[0].text(), "abcd… [6 bytes of this line dropped]");
        // The cap splits `é` (two bytes): the half is dropped too.
        assert_eq!(cut(&["abcé".as_bytes(), b"z"], 4), [line("abc", 3)]);
    }

    #[tokio::test]
    async fn a_line_without_end_costs_the_cap_and_is_read_to_its_end() {
        let flood = vec![b'x'; 10 * 1024 * 1024];
        let mut shown = Vec::new();
        let read = drain(&flood[..], MAX_STDERR_LINE, |line| shown.push(line.len()))
            .await
            .expect("reads");
        assert_eq!(read, flood.len() as u64);
        let dropped = flood.len() - MAX_STDERR_LINE;
        let marker = format!("… [{dropped} bytes of this line dropped]");
        assert_eq!(shown, [MAX_STDERR_LINE + marker.len()]);
    }

    proptest! {
        /// Whatever bytes come, in whatever chunks: no panic, every line
        /// kept within the cap and shown within a bound, each line of the
        /// input accounted for (its start kept, the rest counted), and
        /// the reader read to its end.
        #[test]
        fn every_line_is_bounded_and_accounted_for(
            input in proptest::collection::vec(
                prop_oneof![Just(b'\n'), Just(0xffu8), Just(0xc3), Just(0xa9), any::<u8>()],
                0..400,
            ),
            cuts in proptest::collection::vec(0usize..400, 0..8),
            cap in 1usize..40,
        ) {
            // A pipe's read returns nothing only at the end: no chunk is empty.
            let mut cuts: Vec<usize> =
                cuts.into_iter().filter(|&at| at > 0 && at < input.len()).collect();
            cuts.sort_unstable();
            cuts.dedup();
            let mut chunks = VecDeque::new();
            let mut from = 0;
            for at in cuts.into_iter().chain([input.len()]).filter(|&at| at > 0) {
                chunks.push_back(input[from..at].to_vec());
                from = at;
            }
            let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
            let mut shown = Vec::new();
            let read = runtime
                .block_on(drain(Chunks(chunks.clone()), cap, |line| shown.push(line)))
                .expect("reads");
            prop_assert_eq!(read, input.len() as u64);

            let chunks: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
            let lines = cut(&chunks, cap);
            let mut expected: Vec<&[u8]> = input.split(|&byte| byte == b'\n').collect();
            if expected.last().is_some_and(|last| last.is_empty()) {
                expected.pop();
            }
            prop_assert_eq!(lines.len(), expected.len());
            prop_assert_eq!(shown.len(), lines.len());
            for ((line, original), text) in lines.iter().zip(expected).zip(&shown) {
                prop_assert!(line.kept.len() <= cap);
                prop_assert!(original.starts_with(&line.kept));
                prop_assert_eq!(line.kept.len() as u64 + line.dropped, original.len() as u64);
                // `�` is 3 bytes for 1; the marker is short.
                prop_assert!(text.len() <= 3 * cap + 60, "{} bytes: {text}", text.len());
            }
        }
    }
}
