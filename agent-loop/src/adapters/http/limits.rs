//! What a model server's answer may hold: bounds far above any real
//! answer, so that a server that ignores `max_tokens`, never ends a line
//! of its stream, or sends an endless body fails the request with an
//! error that says which bound it passed, rather than fill dsh's memory
//! and the session store.
//!
//! [`sse_stream`] buffers a line, and an event, whole and without bound,
//! so the byte stream is counted before it reaches the parser
//! ([`bounded_events`]); a body is read chunk by chunk up to its bound
//! ([`read_body`]); what an answer holds is counted by its wire as it
//! grows ([`Wire::held`](super::Wire::held)).

use std::fmt;

use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt as _};

use crate::{ModelResponse, Thought};

/// A bound on what a model server may send for one request. Each is far
/// above what a real answer needs (a model's longest answers are a few
/// hundred KiB), and an answer that passes one fails with
/// [`ModelError::TooLarge`](crate::ModelError::TooLarge), naming it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ResponseLimit {
    /// What one answer holds, streamed or not (its text, and its tool
    /// calls' ids, names and arguments):
    /// [`MAX_ANSWER`](Self::MAX_ANSWER) bytes.
    Answer,
    /// One event of a stream, every line of it up to the blank line that
    /// ends it: [`MAX_EVENT`](Self::MAX_EVENT) bytes.
    Event,
    /// The body of an answer that is not streamed:
    /// [`MAX_BODY`](Self::MAX_BODY) bytes.
    Body,
}

impl ResponseLimit {
    /// 8 MiB: what one answer may hold.
    pub const MAX_ANSWER: usize = 8 << 20;
    /// 16 MiB: one event may carry a whole answer at its limit, written
    /// as JSON (whose escapes can double its length).
    pub const MAX_EVENT: usize = 16 << 20;
    /// 16 MiB: a body is one JSON answer, as an event is.
    pub const MAX_BODY: usize = 16 << 20;

    /// The bound, in bytes.
    pub const fn bytes(self) -> usize {
        match self {
            Self::Answer => Self::MAX_ANSWER,
            Self::Event => Self::MAX_EVENT,
            Self::Body => Self::MAX_BODY,
        }
    }
}

impl fmt::Display for ResponseLimit {
    /// The bound as a message says it: `dsh's answer limit, 8 MiB of …`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, of_what) = match self {
            Self::Answer => ("answer", "of text, thoughts and tool calls in one answer"),
            Self::Event => ("event", "in one event of a stream"),
            Self::Body => ("body", "in one answer that is not streamed"),
        };
        write!(
            f,
            "dsh's {name} limit, {} MiB {of_what}",
            self.bytes() >> 20
        )
    }
}

/// The most of an error status's body that is read: its message is at
/// its start, and the rest is left unread.
pub(crate) const ERROR_BODY_BYTES: usize = 64 << 10;

/// Why a bounded event stream failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StreamError {
    /// The bytes could not be read (the connection, or the timeout).
    #[error(transparent)]
    Read(Box<dyn std::error::Error + Send + Sync>),
    /// An event ran past its bound before the empty line that ends it.
    #[error("an event of the stream is longer than its bound")]
    EventTooLarge,
}

/// `bytes`, failing with [`StreamError::EventTooLarge`] before the chunk
/// that would make one event longer than `limit` bytes reaches the
/// parser; so the parser never holds more than `limit` bytes of an event
/// (plus the chunk in hand).
pub(crate) fn bounded_events<S, E>(
    bytes: S,
    limit: usize,
) -> impl Stream<Item = Result<Bytes, StreamError>>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: std::error::Error + Send + Sync + 'static,
{
    let mut bound = EventBound::new(limit);
    bytes.map(move |chunk| {
        let chunk = chunk.map_err(|error| StreamError::Read(Box::new(error)))?;
        if bound.admits(&chunk) {
            Ok(chunk)
        } else {
            Err(StreamError::EventTooLarge)
        }
    })
}

/// Counts the bytes of the event being read, as the parser will see
/// them: lines end at `\r\n`, `\n` or `\r` (a `\n` right after a `\r`
/// belongs to it, even in the next chunk), and an empty line ends the
/// event and starts the count again. An event's count is its bytes up to
/// the empty line that ends it.
#[derive(Debug)]
pub(crate) struct EventBound {
    limit: usize,
    /// The bytes since the last empty line.
    since: usize,
    /// Whether the last byte ended a line (or nothing was read yet).
    line_start: bool,
    /// Whether the last byte was a `\r`.
    after_cr: bool,
}

impl EventBound {
    /// A count that allows events of up to `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            since: 0,
            line_start: true,
            after_cr: false,
        }
    }

    /// Counts `chunk`; whether every event it ends or continues is still
    /// within the limit.
    pub(crate) fn admits(&mut self, chunk: &[u8]) -> bool {
        for &byte in chunk {
            let after_cr = std::mem::replace(&mut self.after_cr, byte == b'\r');
            match byte {
                // The LF of a CRLF: counted with its line, unless the CR
                // ended an empty line (and the count with it).
                b'\n' if after_cr => {
                    if self.since > 0 {
                        self.since += 1;
                    }
                }
                b'\r' | b'\n' if self.line_start => self.since = 0,
                b'\r' | b'\n' => {
                    self.line_start = true;
                    self.since += 1;
                }
                _ => {
                    self.line_start = false;
                    self.since += 1;
                }
            }
            if self.since > self.limit {
                return false;
            }
        }
        true
    }
}

/// The body of `response`, up to `limit` bytes; whether there was more
/// (then the rest is left unread, and the connection closed).
pub(crate) async fn read_body(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<(Bytes, bool), reqwest::Error> {
    let mut body = BytesMut::new();
    while let Some(chunk) = response.chunk().await? {
        let room = limit - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body.freeze(), true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body.freeze(), false))
}

/// What `answer` holds, as [`ResponseLimit::Answer`] counts it: its text,
/// its tool calls' ids, names and arguments, and its thoughts.
pub(crate) fn held_by(answer: &ModelResponse) -> usize {
    answer
        .tool_calls
        .iter()
        .fold(answer.text.len(), |held, call| {
            held + call.id.len() + call.name.len() + call.arguments.len()
        })
        + answer
            .thoughts
            .iter()
            .map(|thought| match thought {
                Thought::Text { text, signature } => {
                    text.len() + signature.as_ref().map_or(0, String::len)
                }
                Thought::Redacted { data } => data.len(),
                _ => 0,
            })
            .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Whether `bound` admits `chunks`, fed one after the other.
    fn admits(limit: usize, chunks: &[&[u8]]) -> bool {
        let mut bound = EventBound::new(limit);
        chunks.iter().all(|chunk| bound.admits(chunk))
    }

    #[test]
    fn an_empty_line_ends_the_event_and_its_count() {
        assert!(admits(8, &[b"data: 1\n\ndata: 2\n\n"]));
        assert!(admits(9, &[b"data: 1\r\n\r\ndata: 2\r\n\r\n"]));
        assert!(!admits(8, &[b"data: 1\r\n\r\ndata: 2\r\n\r\n"]));
        assert!(admits(8, &[b"data: 1\r\rdata: 2\r\r"]));
        assert!(!admits(8, &[b"data: 123\n\n"]), "10 bytes");
        assert!(
            !admits(8, &[b"data:\r\ndata:\r\n"]),
            "a CRLF is one line end, not an empty line"
        );
        assert!(
            !admits(8, &[b"data:\r", b"\ndata:\r\n"]),
            "a CRLF split over two chunks is one line end too"
        );
        assert!(!admits(8, &[b"data: 12", b"3"]), "a line split over chunks");
    }

    #[test]
    fn a_limit_says_what_it_bounds() {
        assert_eq!(
            ResponseLimit::Answer.to_string(),
            "dsh's answer limit, 8 MiB of text, thoughts and tool calls in one answer"
        );
    }

    /// A stream of events: each a few lines of data, the lines ended by
    /// any of the three line ends, the event by an empty line.
    fn events() -> impl Strategy<Value = (Vec<u8>, usize)> {
        let line_end = prop_oneof![Just("\n"), Just("\r\n"), Just("\r")];
        let line = ("[a-z :]{0,20}", line_end.clone())
            .prop_map(|(text, end)| format!("data: {text}{end}"));
        // A `\n` right after a `\r` would end the line, not the event.
        let event = (proptest::collection::vec(line, 1..4), line_end).prop_map(|(lines, end)| {
            let lines = lines.concat();
            let end = if lines.ends_with('\r') && end == "\n" {
                "\r\n"
            } else {
                end
            };
            (lines, end)
        });
        proptest::collection::vec(event, 0..8).prop_map(|events| {
            // An event's count stops before the empty line that ends it.
            let longest = events.iter().map(|(lines, _)| lines.len()).max();
            let stream: String = events
                .iter()
                .map(|(lines, end)| format!("{lines}{end}"))
                .collect();
            (stream.into_bytes(), longest.unwrap_or(0))
        })
    }

    /// `bytes` cut at `cuts` (sorted, deduplicated, within it).
    fn chunked(bytes: &[u8], mut cuts: Vec<usize>) -> Vec<&[u8]> {
        cuts.iter_mut().for_each(|cut| *cut %= bytes.len() + 1);
        cuts.sort_unstable();
        cuts.dedup();
        let mut start = 0;
        let mut chunks = Vec::new();
        for cut in cuts.into_iter().chain([bytes.len()]) {
            chunks.push(&bytes[start..cut]);
            start = cut;
        }
        chunks
    }

    proptest! {
        /// However a stream is cut into chunks, events no longer than the
        /// limit pass, and one byte less of limit than its longest event
        /// stops it.
        #[test]
        fn events_within_the_limit_pass_in_any_chunking(
            (stream, longest) in events(),
            cuts in proptest::collection::vec(any::<usize>(), 0..6),
        ) {
            let chunks = chunked(&stream, cuts);
            prop_assert!(admits(longest, &chunks));
            if longest > 0 {
                prop_assert!(!admits(longest - 1, &chunks));
            }
        }

        /// A line longer than the limit is stopped, whatever else the
        /// bytes hold and however they are cut.
        #[test]
        fn a_line_past_the_limit_never_passes(
            head in proptest::collection::vec(any::<u8>(), 0..64),
            limit in 1usize..64,
            cuts in proptest::collection::vec(any::<usize>(), 0..6),
        ) {
            let mut stream = head;
            stream.extend(std::iter::repeat_n(b'x', limit + 1));
            prop_assert!(!admits(limit, &chunked(&stream, cuts)));
        }
    }
}
