//! What a server sends, at random: a `retry-after` header, and an event
//! stream cut into chunks anywhere. Whatever comes in, reading it does
//! not panic, a wait stays within its bound, and the chunking of a stream
//! does not change its answer.
//!
//! `PROPTEST_CASES=20000 cargo test -p dsh-agent-loop --lib properties`
//! runs many more cases than the default.

use std::convert::Infallible;
use std::sync::LazyLock;

use proptest::prelude::*;

use super::*;

/// A header value: a number as servers and hostile probes write one, or
/// any text at all.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<f64>().prop_map(|number| number.to_string()),
        any::<f64>().prop_map(|number| format!("{number:e}")),
        any::<u64>().prop_map(|number| number.to_string()),
        "[-+0-9eE.naifINFty ]{0,24}",
        "\\PC{0,24}",
    ]
}

/// A wire that keeps the data of every event, so an answer says exactly
/// what the reader made of the stream: `[DONE]` ends it, an event whose
/// data starts with `error` is an error event, any other is text.
struct RecordingWire;

impl Wire for RecordingWire {
    type Streamed = Vec<String>;

    const END_OF_STREAM: &'static str = "`data: [DONE]`";

    fn is_busy(&self, _status: u16, _body: &[u8]) -> bool {
        false
    }

    fn add<'a>(&self, answer: &'a mut Self::Streamed, data: &str) -> Result<Step<'a>, String> {
        if data == "[DONE]" {
            return Ok(Step::Stop);
        }
        if let Some(message) = data.strip_prefix("error") {
            return Ok(Step::Error {
                kind: "test_error".to_owned(),
                message: message.to_owned(),
            });
        }
        answer.push(data.to_owned());
        Ok(Step::Shown {
            thought: "",
            text: answer.last().map_or("", String::as_str),
        })
    }

    fn held(&self, answer: &Self::Streamed) -> usize {
        answer.iter().map(String::len).sum()
    }

    fn finish(&self, answer: Self::Streamed) -> Result<ModelResponse, String> {
        // A separator no event's data holds: each event stays apart.
        Ok(ModelResponse::text(answer.join("\u{0}")))
    }

    fn response(&self, _body: &[u8]) -> Result<ModelResponse, String> {
        Err("the recording wire reads streams only".to_owned())
    }
}

/// An exchange that is never sent: [`Exchange::read_events`] alone is
/// tested, on streams made here.
static EXCHANGE: LazyLock<Exchange> = LazyLock::new(|| {
    let backoff = Backoff {
        max_retries: 0,
        base: Duration::ZERO,
    };
    let api = ModelApi::OpenAiChatCompletions;
    Exchange::connect("http://127.0.0.1:9", "/events", 1_000, api, None, backoff)
        .unwrap_or_else(|error| panic!("a local exchange: {error}"))
});

/// What the exchange reads from `bytes`, cut at `cuts`, its events
/// bounded to `limit` bytes: the answer, or the error's message.
fn read(bytes: &[u8], cuts: &[usize], limit: usize) -> Result<String, String> {
    let chunks: Vec<Result<Bytes, Infallible>> = chunked(bytes, cuts)
        .into_iter()
        .map(|chunk| Ok(Bytes::copy_from_slice(chunk)))
        .collect();
    let events = bounded_events(futures::stream::iter(chunks), limit);
    let read = EXCHANGE.read_events(&RecordingWire, events, &|_: crate::Piece<'_>| {});
    match futures::executor::block_on(read) {
        Ok(answer) => Ok(answer.text),
        Err(Failure::Busy { error, .. } | Failure::Final(error)) => Err(error.to_string()),
    }
}

/// `bytes` cut at `cuts` (each taken modulo its length, in order).
fn chunked<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    let mut start = 0;
    let mut chunks = Vec::new();
    for cut in cuts.into_iter().chain([bytes.len()]) {
        chunks.push(&bytes[start..cut]);
        start = cut;
    }
    chunks
}

/// A valid event stream ended by `[DONE]`, the answer it holds, and the
/// length of its longest event (up to the empty line that ends it):
/// events of one or more data lines (joined by `\n`), with comments and
/// `event:` lines among them, every line ended by `\n`, `\r\n` or `\r`.
fn stream() -> impl Strategy<Value = (Vec<u8>, String, usize)> {
    let end = || prop_oneof![Just("\n"), Just("\r\n"), Just("\r")];
    let text = "[^\r\n\u{0}]{0,16}".prop_filter("not an ending", |text| {
        text != "[DONE]" && !text.starts_with("error")
    });
    let line = (text, end()).prop_map(|(text, end)| (format!("data: {text}{end}"), text));
    let extra = prop_oneof![
        Just(String::new()),
        end().prop_map(|end| format!(": keep-alive{end}")),
        end().prop_map(|end| format!("event: delta{end}")),
    ];
    let event =
        (extra, proptest::collection::vec(line, 1..4), end()).prop_map(|(extra, lines, end)| {
            let (written, data): (Vec<String>, Vec<String>) = lines.into_iter().unzip();
            let written = written.concat();
            // A `\n` right after a `\r` would end the line, not the event.
            let end = if written.ends_with('\r') && end == "\n" {
                "\r\n"
            } else {
                end
            };
            let event = format!("{extra}{written}");
            (event.len(), format!("{event}{end}"), data.join("\n"))
        });
    proptest::collection::vec(event, 0..8).prop_map(|events| {
        let done = "data: [DONE]\n";
        let longest = events.iter().map(|(length, ..)| *length);
        let longest = longest.chain([done.len()]).max().unwrap_or(0);
        let written: String = events
            .iter()
            .map(|(_, written, _)| written.as_str())
            .collect();
        let data: Vec<&str> = events.iter().map(|(.., data)| data.as_str()).collect();
        let stream = format!("{written}{done}\n");
        (stream.into_bytes(), data.join("\u{0}"), longest)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(256),
    ))]

    /// Whatever the server sends, reading it does not panic, and the
    /// wait decided is one dsh accepts: the server's own when within
    /// [`Backoff::MAX_WAIT`], else none at all.
    #[test]
    fn any_retry_after_gives_a_wait_within_the_bound(
        seconds in proptest::option::of(value()),
        milliseconds in proptest::option::of(value()),
    ) {
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in [("retry-after", seconds), ("retry-after-ms", milliseconds)] {
            let value = value.and_then(|value| HeaderValue::from_str(&value).ok());
            if let Some(value) = value {
                headers.insert(name, value);
            }
        }
        let asked = retry_after(&headers);
        let backoff = Backoff { max_retries: 1, base: Duration::from_secs(1) };
        match backoff.wait(1, asked) {
            Retry::After(wait) => {
                prop_assert!(wait <= Backoff::MAX_WAIT);
                prop_assert_eq!(wait, asked.unwrap_or(backoff.base));
            }
            Retry::TooLong => prop_assert!(asked.is_some_and(|asked| asked > Backoff::MAX_WAIT)),
            Retry::Spent => prop_assert!(false, "a first retry of one is not spent"),
        }
    }

    /// However a valid stream is cut into chunks, its answer is its
    /// events' data, in order, when its events are within the event
    /// bound; one byte less of bound than its longest event fails it,
    /// saying so.
    #[test]
    fn any_chunking_of_a_valid_stream_gives_its_answer(
        (bytes, answer, longest) in stream(),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        prop_assert_eq!(read(&bytes, &cuts, longest), Ok(answer));
        let error = read(&bytes, &cuts, longest - 1).err().unwrap_or_default();
        prop_assert!(error.contains("dsh's event limit"), "{}", error);
    }

    /// Any bytes at all, however cut, are an answer or an error, never a
    /// panic; and the same bytes give the same outcome in one chunk.
    #[test]
    fn any_bytes_are_an_answer_or_an_error(
        bytes in proptest::collection::vec(any::<u8>(), 0..512),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let limit = ResponseLimit::MAX_EVENT;
        prop_assert_eq!(read(&bytes, &cuts, limit), read(&bytes, &[], limit));
    }
}
