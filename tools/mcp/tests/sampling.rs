//! A server's sampling against its bounds: the crate's test server
//! (`dsh-mcp-test-server`) floods dsh with `sampling/createMessage`, at
//! once and one after another, and an asker that answers at once counts
//! what reached it and how many at a time.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use dsh_tool_mcp::{
    AskError, Asker, ElicitAnswer, Elicitation, Elicits, McpServers, Origin, Sampled, SampledStop,
    SamplingLimits, SamplingRequest, ServerConfig, SharedAsker, http_client,
};
use dsh_tools::{ToolCallContext, ToolRegistry};
use parking_lot::Mutex;

/// The MCP test server's binary.
static SERVER: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| dsh_mcp_test_server::binary().display().to_string());

/// Answers every sampling request after a little while, counting them,
/// the most it answered at once, and the refusals it was told of.
#[derive(Default)]
struct Counting {
    answered: AtomicUsize,
    now: AtomicUsize,
    most: AtomicUsize,
    refused: Mutex<Vec<(Origin, String)>>,
}

#[async_trait::async_trait]
impl Asker for Counting {
    fn samples(&self) -> bool {
        true
    }

    fn elicits(&self) -> Elicits {
        Elicits::default()
    }

    async fn sample(&self, _request: SamplingRequest) -> Result<Sampled, AskError> {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(5)).await;
        self.now.fetch_sub(1, Ordering::SeqCst);
        self.answered.fetch_add(1, Ordering::SeqCst);
        Ok(Sampled {
            model: "m".into(),
            text: "Blue".into(),
            stop: SampledStop::EndTurn,
        })
    }

    async fn elicit(&self, _request: Elicitation) -> ElicitAnswer {
        ElicitAnswer::Decline
    }

    fn refused(&self, origin: &Origin, why: &str) {
        self.refused.lock().push((origin.clone(), why.to_owned()));
    }
}

/// The test server `docs` with `samples`, bounded by `limits`, answered
/// by `asker`, in a fresh registry.
async fn sampling_server(
    asker: &Arc<Counting>,
    limits: SamplingLimits,
) -> (ToolRegistry, McpServers) {
    let tools = ToolRegistry::new();
    let servers = McpServers::new();
    let prompt = dsh_system_prompt::SystemPrompt::empty();
    let installed = servers.install(&prompt, &tools).expect("installs");
    std::mem::forget(installed);
    let shared: Arc<dyn Asker> = Arc::clone(asker) as Arc<dyn Asker>;
    let config = ServerConfig::stdio("docs", [SERVER.as_str(), "samples"])
        .with_asker(SharedAsker(shared))
        .with_sampling_limits(limits);
    let http = http_client().expect("an HTTP client");
    let server = dsh_tool_mcp::McpServer::start(config, &http)
        .await
        .expect("starts");
    servers.add(server);
    (tools, servers)
}

async fn flood(tools: &ToolRegistry, call_id: &str, arguments: &str) -> String {
    let mut cx = ToolCallContext::new("s1");
    cx.call_id = call_id.to_owned();
    let output = tools.call("docs__sample_flood", arguments, &cx).await;
    assert!(!output.is_error, "{}", output.text);
    output.text
}

#[tokio::test(flavor = "multi_thread")]
async fn two_hundred_requests_at_once_reach_the_model_one_at_a_time_and_bounded() {
    let asker = Arc::new(Counting::default());
    let (tools, servers) = sampling_server(&asker, SamplingLimits::default()).await;
    let said = flood(&tools, "c1", r#"{"count": 200, "max_tokens": 64}"#).await;
    // The default: 8 a call; the other 192 refused with code -1.
    assert!(
        said.starts_with("sampled 8, refused 192, failed 0"),
        "{said}"
    );
    assert!(
        said.contains("reached its sampling limit of 8 requests for one tool call"),
        "{said}"
    );
    assert_eq!(asker.answered.load(Ordering::SeqCst), 8);
    assert_eq!(asker.most.load(Ordering::SeqCst), 1, "one in flight");
    // The person is told once, not 192 times, with the call it served.
    let refused = asker.refused.lock().clone();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].0.call.as_deref(), Some("c1"));
    servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_one_after_another_meet_the_call_and_then_the_session_budget() {
    let asker = Arc::new(Counting::default());
    let limits = SamplingLimits::default()
        .with_requests_per_call(100)
        .with_tokens_per_call(4096 * 3)
        .with_tokens_per_session(4096 * 5);
    let (tools, servers) = sampling_server(&asker, limits).await;
    // Each asks for more than 4096 tokens, and costs 4096.
    let first = flood(
        &tools,
        "c1",
        r#"{"count": 200, "serial": true, "max_tokens": 100000}"#,
    )
    .await;
    assert!(
        first.starts_with("sampled 3, refused 197, failed 0"),
        "{first}"
    );
    assert!(
        first.contains("12288 tokens (12288 spent, 4096 asked)"),
        "{first}"
    );
    assert!(
        first.contains("`[mcp.docs] sampling_tokens_per_call`"),
        "{first}"
    );
    let second = flood(
        &tools,
        "c2",
        r#"{"count": 200, "serial": true, "max_tokens": 100000}"#,
    )
    .await;
    assert!(
        second.starts_with("sampled 2, refused 198, failed 0"),
        "{second}"
    );
    assert!(second.contains("for one session"), "{second}");
    assert_eq!(asker.answered.load(Ordering::SeqCst), 5);
    // Told once for the first call, once for the session.
    assert_eq!(asker.refused.lock().len(), 2);
    servers.shutdown().await;
}
