//! MCP servers: a session's start with three servers, and a call's
//! overhead, against the in-repo test server (`dsh_mcp_test_server`,
//! on rmcp's server side).
//!
//! ```text
//! cargo bench -p dsh-benches --bench mcp
//! ```
//!
//! The bench binary is its own test server: run with
//! `DSH_BENCH_MCP_SERVER=1` it serves MCP on stdio (so no other package's
//! binary has to be built first). Group `mcp`:
//!
//! - `start/slowest_alone`: starting the slowest of the three servers
//!   alone (spawn, `initialize`, `tools/list`; it waits 150 ms before
//!   serving);
//! - `start/three_at_once`: `McpServers::start_all` of three servers that
//!   wait 50, 100 and 150 ms — the target is the slowest alone plus at most
//!   50 ms;
//! - `call/echo`: one `tools/call` through the tool registry (resolver,
//!   the call, rendering the result) of a tool whose own time is nil: all
//!   of it is overhead (target: ≤ 2 ms median);
//! - `call/slow_5ms`: the same of a tool that sleeps 5 ms, for the
//!   overhead over the server's own time.

use std::time::{Duration, Instant};

use criterion::Criterion;
use dsh_tool_mcp::{McpServer, McpServers, ServerConfig, http_client};
use dsh_tools::{ToolCallContext, ToolRegistry};

fn server(name: &str, delay_ms: u64) -> ServerConfig {
    let exe = std::env::current_exe().expect("the bench binary");
    ServerConfig::stdio(
        name,
        [
            exe.display().to_string(),
            format!("start-delay-ms={delay_ms}"),
        ],
    )
    .with_env([("DSH_BENCH_MCP_SERVER", "1")])
}

fn bench(c: &mut Criterion) {
    let tokio = tokio::runtime::Runtime::new().expect("a runtime");
    let http = http_client().expect("an HTTP client");
    let mut group = c.benchmark_group("mcp");

    let start = |configs: Vec<ServerConfig>, iters: u64| {
        tokio.block_on(async {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let began = Instant::now();
                let servers = McpServers::start_all(&configs, &http).await;
                total += began.elapsed();
                for server in servers {
                    server.expect("starts").shutdown().await;
                }
            }
            total
        })
    };
    group.sample_size(10);
    group.bench_function("start/slowest_alone", |b| {
        b.iter_custom(|iters| start(vec![server("c", 150)], iters));
    });
    group.bench_function("start/three_at_once", |b| {
        b.iter_custom(|iters| {
            start(
                vec![server("a", 50), server("b", 100), server("c", 150)],
                iters,
            )
        });
    });

    let tools = ToolRegistry::new();
    let servers = McpServers::new();
    let prompt = dsh_system_prompt::SystemPrompt::empty();
    let _installed = servers.install(&prompt, &tools).expect("installs");
    let started: McpServer = tokio
        .block_on(McpServer::start(server("docs", 0), &http))
        .expect("starts");
    servers.add(started);
    let cx = ToolCallContext::new("bench");
    group.sample_size(100);
    group.bench_function("call/echo", |b| {
        b.iter(|| {
            let result = tokio.block_on(tools.call("docs__echo", r#"{"text":"hi"}"#, &cx));
            assert!(!result.is_error, "{}", result.text);
        });
    });
    group.sample_size(50);
    group.bench_function("call/slow_5ms", |b| {
        b.iter(|| {
            let result = tokio.block_on(tools.call("docs__slow", r#"{"ms":5}"#, &cx));
            assert!(!result.is_error, "{}", result.text);
        });
    });
    group.finish();
    tokio.block_on(servers.shutdown());
}

fn main() {
    if std::env::var_os("DSH_BENCH_MCP_SERVER").is_some() {
        // Serving: the arguments are the test server's.
        if let Err(error) = dsh_mcp_test_server::main() {
            panic!("the test server failed: {error}");
        }
        return;
    }
    dsh_benches::main(10, Duration::from_secs(5), &[bench]);
}
