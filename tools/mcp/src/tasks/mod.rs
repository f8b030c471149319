//! Tools a server runs only as tasks (`execution.taskSupport:
//! "required"`, MCP 2025-11-25): a call without a task always fails
//! (`-32601`), so dsh, which does not speak the task protocol, leaves them
//! out of every request and says why (`dsh check`, `explain`).
//!
//! rmcp 3.11's `Tool` has no `execution` field and drops it while reading
//! `tools/list`, so the field is read here, off the bytes of a stdio
//! server's stdout before rmcp decodes them ([`Tap`]): every line that
//! may answer `tools/list` is read once more for the tools' names and
//! their task support. The answer reaches rmcp after the tap has read it,
//! so a list rmcp returns never runs ahead of what the tap knows.
//!
//! Over streamable HTTP the same is done to each event of a server's
//! event streams ([`TappedHttp`]); an answer a server sends as a plain
//! JSON body rmcp decodes itself, out of reach: there a task-only tool
//! stays in the request, and its calls fail with the server's error.

use std::collections::{HashMap, HashSet};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::StreamExt;
use futures::stream::BoxStream;
use parking_lot::Mutex;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use rmcp_sse_stream::Sse;
use serde::Deserialize;
use tokio::io::{AsyncRead, ReadBuf};

/// Why a tool a server lists is not sent to the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeftOut {
    /// The deployment's allow-list (`[mcp.<name>] tools`) does not name
    /// it.
    NotAllowed,
    /// It runs only as an MCP task (`execution.taskSupport:
    /// "required"`), which dsh does not speak.
    TaskOnly,
}

impl std::fmt::Display for LeftOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::NotAllowed => "not in the server's `tools` allow-list",
            Self::TaskOnly => {
                "it runs only as an MCP task (`execution.taskSupport: \"required\"`), \
                 which dsh does not speak: every call would fail"
            }
        })
    }
}

/// The longest line the tap reads: rmcp's own limit for one message
/// (`DEFAULT_MAX_LINE_LENGTH`), so the tap reads every list rmcp does.
const MAX_LINE: usize = 16 * 1024 * 1024;

/// A buffer kept past one line only up to this size: a long message once
/// does not hold its memory for the rest of the session.
const KEPT_CAPACITY: usize = 64 * 1024;

/// The names of a server's tools that require tasks, as its latest
/// `tools/list` answers say.
#[derive(Debug, Default)]
pub(crate) struct TaskOnly {
    names: Mutex<HashSet<String>>,
}

impl TaskOnly {
    /// The names now.
    pub(crate) fn names(&self) -> HashSet<String> {
        self.names.lock().clone()
    }

    /// Reads one message, if it is a page of a `tools/list` answer: each
    /// tool it lists requires tasks or not, as it says now. Every tool of
    /// a page has an input schema: a message without one is not parsed.
    fn read_if_listed(&self, message: &[u8]) {
        if memchr::memmem::find(message, b"\"inputSchema\"").is_some() {
            self.read(message);
        }
    }

    fn read(&self, line: &[u8]) {
        #[derive(Deserialize)]
        struct Answer {
            result: Page,
        }
        #[derive(Deserialize)]
        struct Page {
            tools: Vec<Listed>,
        }
        #[derive(Deserialize)]
        struct Listed {
            name: String,
            #[serde(default)]
            execution: Option<Execution>,
        }
        #[derive(Deserialize)]
        struct Execution {
            #[serde(default, rename = "taskSupport")]
            task_support: Option<String>,
        }
        // Anything else (a call's result, a notification) is not a page.
        let Ok(answer) = serde_json::from_slice::<Answer>(line) else {
            return;
        };
        let mut names = self.names.lock();
        for tool in answer.result.tools {
            let required = tool
                .execution
                .and_then(|execution| execution.task_support)
                .is_some_and(|support| support == "required");
            if required {
                names.insert(tool.name);
            } else {
                names.remove(&tool.name);
            }
        }
    }
}

/// A server's stdout, read through: what it reads is passed on unchanged,
/// and each line that may be a `tools/list` page is read for the tools'
/// task support into [`TaskOnly`].
pub(crate) struct Tap<R> {
    inner: R,
    line: Vec<u8>,
    /// The line is past [`MAX_LINE`]: the rest of it is not kept.
    skipping: bool,
    task_only: Arc<TaskOnly>,
}

impl<R> Tap<R> {
    pub(crate) fn new(inner: R, task_only: Arc<TaskOnly>) -> Self {
        Self {
            inner,
            line: Vec::new(),
            skipping: false,
            task_only,
        }
    }

    fn observe(&mut self, mut bytes: &[u8]) {
        while let Some(end) = memchr::memchr(b'\n', bytes) {
            self.keep(&bytes[..end]);
            self.line_done();
            bytes = &bytes[end + 1..];
        }
        self.keep(bytes);
    }

    fn keep(&mut self, bytes: &[u8]) {
        if self.skipping {
            return;
        }
        if self.line.len() + bytes.len() > MAX_LINE {
            self.skipping = true;
            self.line = Vec::new();
            return;
        }
        self.line.extend_from_slice(bytes);
    }

    fn line_done(&mut self) {
        if !self.skipping {
            self.task_only.read_if_listed(&self.line);
        }
        self.line.clear();
        self.line.shrink_to(KEPT_CAPACITY);
        self.skipping = false;
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Tap<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = poll {
            this.observe(&buf.filled()[before..]);
        }
        poll
    }
}

/// dsh's HTTP client, as rmcp's streamable HTTP transport uses it, with
/// each event of the server's event streams (the answers to its requests,
/// and what it sends on its own) read for tools' task support.
///
/// `C` is dsh's client, or rmcp's `AuthClient` over it when a login to
/// the server is kept (the token sent, and refreshed, by rmcp); either
/// way, a request the server answers 401 after all sets `refused`, so
/// what fails next says to log in.
#[derive(Clone)]
pub(crate) struct TappedHttp<C = reqwest::Client> {
    pub(crate) client: C,
    pub(crate) task_only: Arc<TaskOnly>,
    pub(crate) refused: Arc<std::sync::atomic::AtomicBool>,
}

impl<C> TappedHttp<C> {
    /// `result`, noting a 401 in `refused`.
    fn noted<T>(&self, result: HttpResult<T>) -> HttpResult<T> {
        if let Err(StreamableHttpError::AuthRequired(_)) = &result {
            self.refused
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        result
    }

    fn tapped(&self, stream: SseStream) -> SseStream {
        let task_only = Arc::clone(&self.task_only);
        stream
            .inspect(move |event| {
                if let Ok(event) = event
                    && let Some(data) = &event.data
                {
                    task_only.read_if_listed(data.as_bytes());
                }
            })
            .boxed()
    }

    fn tapped_answer(&self, answer: StreamableHttpPostResponse) -> StreamableHttpPostResponse {
        match answer {
            StreamableHttpPostResponse::Sse(stream, session) => {
                StreamableHttpPostResponse::Sse(self.tapped(stream), session)
            }
            other => other,
        }
    }
}

type SseStream = BoxStream<'static, Result<Sse, SseError>>;
type HttpResult<T> = Result<T, StreamableHttpError<reqwest::Error>>;

impl<C> StreamableHttpClient for TappedHttp<C>
where
    C: StreamableHttpClient<Error = reqwest::Error> + Sync,
{
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let answer = self.noted(
            (self.client)
                .post_message(uri, message, session_id, auth_header, custom_headers)
                .await,
        )?;
        Ok(self.tapped_answer(answer))
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let answer = self.noted(
            (self.client)
                .post_message_with_response_limits(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers,
                    limits,
                )
                .await,
        )?;
        Ok(self.tapped_answer(answer))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        self.noted(
            (self.client)
                .delete_session(uri, session_id, auth_header, custom_headers)
                .await,
        )
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<SseStream> {
        let stream = self.noted(
            (self.client)
                .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
                .await,
        )?;
        Ok(self.tapped(stream))
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<SseStream> {
        let stream = self.noted(
            (self.client)
                .get_stream_with_max_sse_event_size(
                    uri,
                    session_id,
                    last_event_id,
                    auth_header,
                    custom_headers,
                    max_sse_event_size,
                )
                .await,
        )?;
        Ok(self.tapped(stream))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::io::AsyncReadExt;

    use super::*;

    const PAGE: &str = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[
        {"name":"echo","inputSchema":{"type":"object"}},
        {"name":"research","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}},
        {"name":"maybe","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}]}}"#;

    fn one_line(json: &str) -> String {
        json.replace('\n', "") + "\n"
    }

    async fn read_through(input: &[u8], chunk: usize) -> (Vec<u8>, HashSet<String>) {
        let task_only = Arc::new(TaskOnly::default());
        let (mut writer, reader) = tokio::io::duplex(chunk);
        let mut tap = Tap::new(reader, Arc::clone(&task_only));
        let input = input.to_vec();
        let writing = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            writer.write_all(&input).await.unwrap();
        });
        let mut out = Vec::new();
        tap.read_to_end(&mut out).await.unwrap();
        writing.await.unwrap();
        (out, task_only.names())
    }

    #[tokio::test]
    async fn a_tool_that_requires_tasks_is_read_off_the_page_and_the_bytes_pass_unchanged() {
        let page = one_line(PAGE);
        let input = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}}\n{page}");
        // Small reads: the page arrives in many pieces.
        let (out, names) = read_through(input.as_bytes(), 7).await;
        assert_eq!(out, input.as_bytes());
        assert_eq!(names, HashSet::from(["research".to_owned()]));
    }

    #[tokio::test]
    async fn a_later_list_that_drops_the_requirement_lets_the_tool_back() {
        let later = PAGE.replace(r#""taskSupport":"required""#, r#""taskSupport":"optional""#);
        let input = one_line(PAGE) + &one_line(&later);
        let (_, names) = read_through(input.as_bytes(), 64).await;
        assert!(names.is_empty(), "{names:?}");
    }

    #[tokio::test]
    async fn a_result_that_only_mentions_input_schemas_changes_nothing() {
        let result = r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"\"inputSchema\""}]}}"#;
        let input = one_line(PAGE) + &one_line(result);
        let (_, names) = read_through(input.as_bytes(), 64).await;
        assert_eq!(names, HashSet::from(["research".to_owned()]));
    }
}
