//! Test tools and a loop builder shared by the integration tests.

#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use dsh_agent_loop::{
    Agent, AgentLoop, CallingTurn, LoopEvent, ModelAdapter, ModelResponse, ScriptedAdapter,
    Session, TurnError, TurnSummary,
};
use dsh_system_prompt::{Registration, SystemPrompt};
use dsh_tools::{Tool, ToolCallContext, ToolError, ToolOutput, ToolRegistry, async_trait};
use tokio_util::sync::CancellationToken;

/// Returns its `text` argument; counts its calls.
#[derive(Default)]
pub struct Echo {
    pub calls: AtomicUsize,
}

#[async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }

    fn description(&self) -> String {
        "Returns `text` unchanged.".to_owned()
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The text to return."}},
            "required": ["text"],
            "additionalProperties": false,
        })
    }

    async fn execute(
        &self,
        arguments: serde_json::Value,
        _cx: &ToolCallContext,
    ) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::new(
            arguments["text"].as_str().unwrap_or_default(),
        ))
    }
}

/// A test tool of one fixed behaviour, whose arguments are any object.
pub enum TestTool {
    /// `boom`: panics on every call, a tool with a bug.
    Boom,
    /// `slow`: sleeps for a minute, ignoring cancellation.
    Slow,
    /// `inspect`: reports what it learns about the calling turn.
    Inspect,
    /// `produce`: returns `big(tag, lines)`, a large result from small
    /// arguments, as `read` returns a file.
    Produce,
    /// `picture`: returns `pictures:` and [`pictures`].
    Picture,
    /// `report`: reports its progress, `half way`, and returns `done`.
    Report,
}

/// The images `picture` returns: a PNG's signature, then an SVG
/// (a type no model API takes), a JPEG labelled PNG, and data that is
/// not base64.
pub fn pictures() -> Vec<dsh_agent_loop::Image> {
    let image = |mime_type: &str, data: &str| dsh_agent_loop::Image {
        mime_type: mime_type.into(),
        data: data.into(),
    };
    vec![
        image("image/png", "iVBORw0KGgo="),
        image("image/svg+xml", "PHN2Zy8+"),
        image("image/png", "/9j/4AAQ"),
        image("image/png", "not base64!"),
    ]
}

/// A tool result of about `lines` × 14 tokens, tagged so it can be found.
pub fn big(tag: &str, lines: usize) -> String {
    (0..lines)
        .map(|line| format!("{tag} line {line}: the quick brown fox jumps over the lazy dog\n"))
        .collect()
}

#[async_trait]
impl Tool for TestTool {
    fn name(&self) -> &str {
        match self {
            Self::Boom => "boom",
            Self::Slow => "slow",
            Self::Inspect => "inspect",
            Self::Produce => "produce",
            Self::Picture => "picture",
            Self::Report => "report",
        }
    }

    fn description(&self) -> String {
        match self {
            Self::Boom => "Has a bug.",
            Self::Slow => "Takes a minute.",
            Self::Inspect => "Reports the calling turn.",
            Self::Produce => "Returns `lines` lines tagged `tag`.",
            Self::Picture => "Returns pictures.",
            Self::Report => "Reports its progress.",
        }
        .to_owned()
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({"type": "object"})
    }

    async fn execute(
        &self,
        arguments: serde_json::Value,
        cx: &ToolCallContext,
    ) -> Result<ToolOutput, ToolError> {
        match self {
            Self::Boom => panic!("the boom tool always panics"),
            Self::Slow => {
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok(ToolOutput::new("done"))
            }
            Self::Inspect => {
                let Some(turn) = cx.get::<CallingTurn>() else {
                    return Err(ToolError::failed("inspect", "no calling turn"));
                };
                Ok(ToolOutput::new(format!(
                    "agent={} session={} same_session={} cwd={:?} completed_events={}",
                    turn.agent().id(),
                    turn.session().id,
                    turn.session().id.as_str() == cx.session_id,
                    cx.cwd,
                    turn.completed_turns().len(),
                )))
            }
            Self::Produce => {
                let tag = arguments["tag"].as_str().unwrap_or_default();
                let lines = arguments["lines"]
                    .as_u64()
                    .map_or(0, |lines| lines as usize);
                Ok(ToolOutput::new(big(tag, lines)))
            }
            Self::Picture => Ok(ToolOutput::new("pictures:").with_images(pictures())),
            Self::Report => {
                cx.report_progress("half way");
                Ok(ToolOutput::new("done"))
            }
        }
    }
}

/// Registers the runtime context `name` at `order` on `agent_loop`'s
/// registry, whose text is what `text` holds at each assembly.
pub fn shared_context(
    agent_loop: &AgentLoop,
    name: &str,
    order: i32,
    text: &Arc<parking_lot::Mutex<String>>,
) -> Result<Registration, dsh_system_prompt::RegistryError> {
    let text = Arc::clone(text);
    agent_loop
        .prompt()
        .context(dsh_system_prompt::PromptSection::provided(
            name.to_owned(),
            order,
            move |_| text.lock().clone(),
        ))
}

/// `agent_loop`, keeping every event it shows its observers as recorded,
/// and the events kept.
pub fn recording_events(
    agent_loop: AgentLoop,
) -> (
    AgentLoop,
    Arc<parking_lot::Mutex<Vec<dsh_agent_loop::Event>>>,
) {
    let events = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let kept = Arc::clone(&events);
    let agent_loop = agent_loop.observed_by(Arc::new(move |event: LoopEvent<'_>| {
        if let LoopEvent::Recorded { event, .. } = event {
            kept.lock().push(event.clone());
        }
    }));
    (agent_loop, events)
}

/// One turn of `agent` in `session`, never cancelled.
pub async fn turn(
    agent_loop: &AgentLoop,
    agent: &Agent,
    session: &mut Session,
    input: &str,
) -> Result<TurnSummary, TurnError> {
    agent_loop
        .run_turn(agent, session, input, &CancellationToken::new())
        .await
}

/// A loop with the [`Echo`] tool whose model answers `answers` in order,
/// and that model, to read the requests it was sent.
pub fn echo_loop(
    answers: impl IntoIterator<Item = ModelResponse>,
) -> Result<(AgentLoop, Registration, Arc<ScriptedAdapter>), Box<dyn std::error::Error>> {
    let (agent_loop, installed, adapter, _echo) = counting_echo_loop(answers)?;
    Ok((agent_loop, installed, adapter))
}

/// [`echo_loop`], and its [`Echo`], to count the calls.
#[allow(clippy::type_complexity)]
pub fn counting_echo_loop(
    answers: impl IntoIterator<Item = ModelResponse>,
) -> Result<(AgentLoop, Registration, Arc<ScriptedAdapter>, Arc<Echo>), Box<dyn std::error::Error>>
{
    let adapter = Arc::new(ScriptedAdapter::new(answers));
    let echo = Arc::new(Echo::default());
    let (agent_loop, installed) = agent_loop(vec![echo.clone()], adapter.clone())?;
    Ok((agent_loop, installed, adapter, echo))
}

/// A loop over a fresh registry with the static contributions, and the
/// tools given installed. Keep the returned registration alive.
pub fn agent_loop(
    tools: Vec<Arc<dyn Tool>>,
    adapter: Arc<dyn ModelAdapter>,
) -> Result<(AgentLoop, Registration), Box<dyn std::error::Error>> {
    let prompt = SystemPrompt::new()?;
    let registry = ToolRegistry::new();
    for tool in tools {
        registry.register(tool)?;
    }
    let installed = registry.install(&prompt)?;
    Ok((AgentLoop::new(prompt, registry, adapter), installed))
}

/// A token that is cancelled `after` this long, and the task that cancels
/// it (await it to be sure the cancel happened).
pub fn cancel_after(after: Duration) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            cancel.cancel();
        })
    };
    (cancel, canceller)
}

/// Serves `router` on a free port of 127.0.0.1 for the rest of the test;
/// returns the address it listens on.
pub async fn serve_locally(router: axum::Router) -> Result<std::net::SocketAddr, std::io::Error> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(address)
}

/// An address of 127.0.0.1 that nothing listens on: a port bound, then
/// let go.
pub fn unused_address() -> Result<std::net::SocketAddr, std::io::Error> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.local_addr()
}

/// A fake server's canned answer as an HTTP response: `status`, its
/// content type, `body` and the extra `headers`.
pub fn canned_response(
    status: axum::http::StatusCode,
    content_type: &'static str,
    body: axum::body::Body,
    headers: Vec<(&'static str, &'static str)>,
) -> axum::response::Response {
    use axum::http::header;
    use axum::response::IntoResponse;
    let mut response = (status, [(header::CONTENT_TYPE, content_type)], body).into_response();
    for (name, value) in headers {
        response
            .headers_mut()
            .insert(name, header::HeaderValue::from_static(value));
    }
    response
}

/// A fake model server's state: the canned answers `A` it still has to
/// give, in order, and what it recorded `R` of each request it received.
pub struct FakeServer<A, R> {
    pub answers: parking_lot::Mutex<std::collections::VecDeque<A>>,
    pub received: parking_lot::Mutex<Vec<R>>,
}

impl<A, R> FakeServer<A, R> {
    /// Records `request`; returns the next canned answer, if any is left.
    pub fn answer(&self, request: R) -> Option<A> {
        self.received.lock().push(request);
        self.answers.lock().pop_front()
    }
}

/// Starts a fake model server on 127.0.0.1 that gives `answers` to the
/// POSTs `handler` takes at `base` + `path`; returns its base URL
/// (`http://127.0.0.1:N` + `base`) and its state.
pub async fn start_fake_server<A, R>(
    base: &str,
    path: &str,
    handler: axum::routing::MethodRouter<Arc<FakeServer<A, R>>>,
    answers: impl IntoIterator<Item = A>,
) -> Result<(String, Arc<FakeServer<A, R>>), std::io::Error>
where
    A: Send + Sync + 'static,
    R: Send + Sync + 'static,
{
    let server = Arc::new(FakeServer {
        answers: parking_lot::Mutex::new(answers.into_iter().collect()),
        received: parking_lot::Mutex::new(Vec::new()),
    });
    let router = axum::Router::new()
        .route(&format!("{base}{path}"), handler)
        .with_state(Arc::clone(&server));
    let address = serve_locally(router).await?;
    Ok((format!("http://{address}{base}"), server))
}

/// A piece a sink got, as a test records it: a thought's text marked
/// `thought: `, the answer's text as it is.
pub fn piece_text(piece: dsh_agent_loop::Piece<'_>) -> String {
    match piece {
        dsh_agent_loop::Piece::Thought(text) => format!("thought: {text}"),
        dsh_agent_loop::Piece::Text(text) => text.to_owned(),
        other => panic!("a piece of a kind these tests do not know: {other:?}"),
    }
}
