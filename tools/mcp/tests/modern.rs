//! MCP 2026-07-28 against the test server speaking it
//! (`protocol=2026-07-28`), beside the same server speaking 2025-11-25:
//! the version found by `server/discover`, a call's rounds
//! (`input_required`) answered by the asker a 2025 question goes to, the
//! lists' changes through `subscriptions/listen`, and a list kept for its
//! `ttlMs`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use dsh_tool_mcp::{
    AskError, Asker, ElicitAnswer, Elicitation, Elicits, McpServer, Sampled, SamplingRequest,
    ServerConfig, SharedAsker, http_client,
};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

/// The MCP test server's binary.
static SERVER: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| dsh_mcp_test_server::binary().display().to_string());

/// The test server, speaking 2026-07-28, with `args` besides.
const MODERN: &str = "protocol=2026-07-28";

fn config(args: &[&str]) -> ServerConfig {
    let mut command = vec![SERVER.to_owned()];
    command.extend(args.iter().map(|arg| (*arg).to_owned()));
    ServerConfig::stdio("docs", command)
}

async fn start(config: ServerConfig) -> McpServer {
    McpServer::start(config, &http_client().expect("an HTTP client"))
        .await
        .expect("starts")
}

async fn call(server: &McpServer, tool: &str) -> String {
    let never = CancellationToken::new();
    let output = server.call(tool, serde_json::json!({}), &never).await;
    output.expect("answers").text
}

async fn wait_until(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..250 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done()
}

/// Answers every form with the name Ada, and keeps what it was asked.
#[derive(Default)]
struct Ada {
    asked: Mutex<Vec<Elicitation>>,
}

#[async_trait::async_trait]
impl Asker for Ada {
    fn samples(&self) -> bool {
        false
    }
    fn elicits(&self) -> Elicits {
        Elicits {
            form: true,
            url: false,
        }
    }
    async fn sample(&self, _request: SamplingRequest) -> Result<Sampled, AskError> {
        Err(AskError::Refused("not here".to_owned()))
    }
    async fn elicit(&self, request: Elicitation) -> ElicitAnswer {
        self.asked.lock().push(request);
        let mut content = serde_json::Map::new();
        content.insert("name".to_owned(), "Ada".into());
        ElicitAnswer::Accept(Some(content))
    }
}

#[tokio::test]
async fn the_version_is_the_one_server_discover_finds_else_2025_11_25() {
    let modern = start(config(&[MODERN])).await;
    assert_eq!(modern.protocol_version().as_deref(), Some("2026-07-28"));
    assert_eq!(modern.server_info(), Some("dsh-mcp-test-server 0.1.0"));
    let today = start(config(&[])).await;
    assert_eq!(today.protocol_version().as_deref(), Some("2025-11-25"));
    // Both serve the same tools, in the same order.
    assert_eq!(common::tool_names(&modern), common::tool_names(&today));
    for server in [&modern, &today] {
        let echoed = server
            .call(
                "docs__echo",
                serde_json::json!({"text": "hi"}),
                &CancellationToken::new(),
            )
            .await;
        assert_eq!(echoed.expect("answers").text, "hi");
        server.shutdown().await;
    }
}

/// A 2026-07-28 server's question comes as a round of the call
/// (`input_required`); a 2025-11-25 server's as `elicitation/create`.
/// The same asker answers both, with the same origin, and the server
/// gets the same answer.
#[tokio::test]
async fn a_rounds_question_goes_to_the_asker_a_2025_question_goes_to() {
    let mut said = Vec::new();
    for args in [&["elicits", MODERN][..], &["elicits"][..]] {
        let ada = Arc::new(Ada::default());
        let asker = SharedAsker(Arc::clone(&ada) as Arc<dyn Asker>);
        let server = start(config(args).with_asker(asker)).await;
        said.push(call(&server, "docs__elicit_form").await);
        let asked = ada.asked.lock().clone();
        assert_eq!(asked.len(), 1, "{args:?}: {asked:?}");
        assert_eq!(asked[0].message, "Who are you?");
        assert_eq!(asked[0].origin.server, "docs");
        server.shutdown().await;
    }
    assert_eq!(said[0], r#"elicitation: Accept {"name":"Ada"}"#);
    assert_eq!(said[0], said[1]);
}

/// Without an asker a round's question is declined, and said, as a
/// 2025 question is.
#[tokio::test]
async fn without_an_asker_a_rounds_question_is_declined_and_said() {
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let kept = Arc::clone(&lines);
    let output = dsh_tool_mcp::ServerOutput::new(move |line| kept.lock().push(line.to_string()));
    let server = start(config(&["elicits", MODERN]).with_output(output)).await;
    assert_eq!(call(&server, "docs__elicit").await, "elicitation: Decline");
    let lines = lines.lock().clone();
    assert!(
        (lines.iter()).any(|line| line.contains("declined") && line.contains("Sign in, please.")),
        "{lines:?}"
    );
    server.shutdown().await;
}

/// A 2026-07-28 server says its tools changed only on the subscription
/// dsh opened (`subscriptions/listen`): a tool added comes last, the
/// tools before it keep their places; one removed goes.
#[tokio::test]
async fn a_tool_added_or_removed_is_heard_through_listen() {
    let server = start(config(&[MODERN])).await;
    let before = common::tool_names(&server);
    assert_eq!(call(&server, "docs__add_tool").await, "added `extra`");
    // The call returns once the new list is read.
    assert_eq!(server.tool_list_generation(), 2);
    let mut appended = before.clone();
    appended.push("docs__extra".to_owned());
    assert_eq!(common::tool_names(&server), appended);
    assert_eq!(call(&server, "docs__extra").await, "extra, gone now");
    assert_eq!(common::tool_names(&server), before);
    server.shutdown().await;
}

#[tokio::test]
async fn a_prompt_added_is_heard_through_listen() {
    let server = start(config(&["prompts", "prompt-changes", MODERN])).await;
    assert_eq!(server.prompt_names(), Some(vec!["review".to_owned()]));
    assert_eq!(call(&server, "docs__add_prompt").await, "added `summarize`");
    let names = || server.prompt_names().unwrap_or_default();
    assert!(
        wait_until(|| names().contains(&"summarize".to_owned())).await,
        "{:?}",
        names()
    );
    server.shutdown().await;
}

/// `stats`: how many `tools/list` requests the server answered.
async fn lists(server: &McpServer) -> u64 {
    let stats = call(server, "docs__stats").await;
    let number = stats
        .split(|c: char| !c.is_ascii_digit())
        .find(|n| !n.is_empty());
    number.and_then(|n| n.parse().ok()).expect("a count")
}

/// A list with `ttlMs` is not asked for again within that time; after
/// it, once.
#[tokio::test]
async fn a_list_is_kept_for_its_ttl_and_asked_for_again_after_it() {
    let server = start(config(&[MODERN, "ttl-ms=1500"])).await;
    assert_eq!(lists(&server).await, 1);
    assert!(!server.refresh_tools().await, "nothing changed");
    assert!(!server.refresh_tools().await, "nothing changed");
    assert_eq!(lists(&server).await, 1, "within the ttl, no request");
    tokio::time::sleep(Duration::from_millis(1600)).await;
    assert!(!server.refresh_tools().await, "nothing changed");
    assert_eq!(lists(&server).await, 2, "past the ttl, one request");
    assert!(!server.refresh_tools().await);
    assert_eq!(lists(&server).await, 2, "fresh again");
    assert_eq!(server.tool_list_generation(), 1);
    server.shutdown().await;
}

/// A list without a `ttlMs` (2025-11-25), or with 0, is kept current by
/// the server's notifications alone: a refresh asks nothing.
#[tokio::test]
async fn a_list_without_a_ttl_is_not_asked_for_again() {
    for args in [&[][..], &[MODERN][..]] {
        let server = start(config(args)).await;
        assert!(!server.refresh_tools().await);
        assert_eq!(lists(&server).await, 1, "{args:?}");
        server.shutdown().await;
    }
}

/// The roots are a question of the call's round on 2026-07-28: answered
/// with the roots as they are, never announced.
#[tokio::test]
async fn a_rounds_roots_are_the_roots_now_and_never_announced() {
    let project = tempfile::tempdir().expect("a project");
    let other = tempfile::tempdir().expect("another");
    let server = start(config(&["roots", MODERN]).with_roots([project.path()])).await;
    let uri = |dir: &std::path::Path| format!("file://{}", dir.display());
    let seen = call(&server, "docs__roots").await;
    assert_eq!(seen, format!("{}\nlist_changed: 0", uri(project.path())));
    assert!(server.set_roots(vec![other.path().to_owned()]).await);
    let seen = call(&server, "docs__roots").await;
    assert_eq!(seen, format!("{}\nlist_changed: 0", uri(other.path())));
    server.shutdown().await;
}

/// dsh ends its subscription before it closes the connection: the
/// server, which waits for its open requests, exits at once rather than
/// at the `SIGTERM` of the grace period's end.
#[tokio::test]
async fn a_server_with_a_subscription_stops_at_once() {
    let server = start(config(&[MODERN])).await;
    // A round trip after the start: the subscription dsh opened at the
    // start has reached the server (it read the request before this one).
    call(&server, "docs__stats").await;
    let pid = server.pid().expect("a stdio server's pid");
    let stopping = std::time::Instant::now();
    server.shutdown().await;
    let took = stopping.elapsed();
    assert!(took < Duration::from_secs(1), "{took:?}");
    let gone = !std::path::Path::new(&format!("/proc/{pid}")).exists()
        || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        });
    assert!(gone, "the server still runs");
}
