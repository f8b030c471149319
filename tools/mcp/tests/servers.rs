//! The client against a real MCP server process: `dsh-mcp-test-server`,
//! this crate's test server on rmcp's server side.

mod common;

use std::sync::Arc;
use std::time::Duration;

use dsh_system_prompt::{AssembleContext, SystemPrompt, render_prompt};
use dsh_tool_mcp::{
    LeftOut, MIN_RELIST_INTERVAL, McpError, McpServer, McpServers, ServerConfig, http_client,
};
use dsh_tools::{ToolCallContext, ToolKind, ToolRegistry, ToolSelection, ToolSession};
use tokio_util::sync::CancellationToken;

/// The MCP test server's binary.
static SERVER: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| dsh_mcp_test_server::binary().display().to_string());

fn config(name: &str, args: &[&str]) -> ServerConfig {
    let mut command = vec![SERVER.to_owned()];
    command.extend(args.iter().map(|arg| (*arg).to_owned()));
    ServerConfig::stdio(name, command)
}

async fn start(config: ServerConfig) -> Result<McpServer, McpError> {
    McpServer::start(config, &http_client().expect("an HTTP client")).await
}

/// The servers installed in a fresh prompt and tool registry.
struct Wired {
    prompt: SystemPrompt,
    tools: ToolRegistry,
    servers: McpServers,
    _installed: dsh_system_prompt::Registration,
}

fn wired() -> Wired {
    let prompt = SystemPrompt::empty();
    let tools = ToolRegistry::new();
    let servers = McpServers::new();
    let installed = servers.install(&prompt, &tools).expect("installs");
    Wired {
        prompt,
        tools,
        servers,
        _installed: installed,
    }
}

fn selecting(names: &[&str]) -> AssembleContext {
    AssembleContext::new().with(ToolSelection::new(names.iter().copied()))
}

fn alive(pid: u32) -> bool {
    // A zombie has exited: only a process that still runs counts.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

async fn wait_until(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..500 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done()
}

#[tokio::test]
async fn instructions_are_a_section_bound_to_the_servers_tools_and_verbatim() {
    let w = wired();
    let server = start(config(
        "docs",
        &["instructions=Search before you fetch. <<not_a_variable>> stays."],
    ))
    .await
    .expect("starts");
    w.servers.add(server);

    let assembly = w.prompt.assemble(&selecting(&["mcp:docs"]));
    let names: Vec<&str> = assembly
        .tools
        .iter()
        .map(|tool| tool.name.as_str())
        .collect();
    assert!(names.contains(&"docs__echo"), "{names:?}");
    assert!(names.contains(&"docs__dotted_name"), "{names:?}");
    let echo = assembly.tool("docs__echo").expect("echo");
    assert_eq!(echo.description, "Returns `text` unchanged.");
    let section = assembly.sections.get("mcp:docs").expect("the section");
    assert_eq!(section.order(), 150);
    assert_eq!(&*section.owner().krate, "MCP server `docs`");
    assert!(section.owner().item.starts_with(SERVER.as_str()));
    let prompt = render_prompt(&assembly).expect("renders");
    assert_eq!(prompt, "Search before you fetch. <<not_a_variable>> stays.");

    // An agent without the server has neither its tools nor its section.
    let without = w.prompt.assemble(&selecting(&["read"]));
    assert!(without.tools.is_empty());
    assert_eq!(render_prompt(&without).expect("renders"), "");
}

#[tokio::test]
async fn long_instructions_are_cut_at_4_kib_with_a_marker() {
    let server = start(config("big", &["instructions-bytes=5000"]))
        .await
        .expect("starts");
    let text = server.instructions().expect("instructions");
    assert!(text.starts_with(&"x".repeat(4096)));
    assert!(text.ends_with(
        "\n[… cut: dsh keeps the first 4096 of the 5000 bytes of MCP server `big`'s instructions]"
    ), "{text}");
    server.shutdown().await;
}

#[tokio::test]
async fn an_allow_list_limits_the_tools_and_names_the_unknown() {
    let server = start(config("docs", &[]).with_allowed_tools(["echo", "nope"]))
        .await
        .expect("starts");
    assert_eq!(common::tool_names(&server), ["docs__echo"]);
    assert_eq!(server.unknown_allowed_tools(), ["nope"]);
    // What the allow-list may name: every tool, the others too.
    let listed = server.listed_tools();
    assert_eq!(listed[..3], ["echo", "slow", "fail"]);
    assert!(listed.contains(&"dotted.name".to_owned()), "{listed:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_tool_that_runs_only_as_a_task_is_left_out_and_said() {
    let server = start(config("docs", &["task-only"]).with_allowed_tools(["echo", "research"]))
        .await
        .expect("starts");
    assert_eq!(common::tool_names(&server), ["docs__echo"]);
    assert!(server.listed_tools().contains(&"research".to_owned()));
    let left_out = server.left_out();
    let research = left_out
        .iter()
        .find(|(tool, _)| tool == "research")
        .expect("research is left out");
    assert_eq!(research.1, LeftOut::TaskOnly);
    // The allow-list's own reason stays for the others.
    assert!(
        left_out
            .iter()
            .any(|(tool, why)| tool == "slow" && *why == LeftOut::NotAllowed),
        "{left_out:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn results_are_rendered_as_text_and_images() {
    let w = wired();
    w.servers
        .add(start(config("docs", &[])).await.expect("starts"));
    let cx = ToolCallContext::new("s1");
    let call = |name: &'static str, args: &'static str| {
        let (tools, cx) = (w.tools.clone(), cx.clone());
        async move { tools.call(name, args, &cx).await }
    };
    let echo = call("docs__echo", r#"{"text": "hi"}"#).await;
    assert_eq!((echo.text.as_str(), echo.is_error), ("hi", false));
    let image = call("docs__image", "").await;
    assert_eq!(image.text, "a pixel:");
    let images: Vec<(&str, u64)> = (image.images.iter())
        .map(|image| (image.mime_type.as_str(), image.decoded_len()))
        .collect();
    assert_eq!(images, [("image/png", 70)]);
    let resource = call("docs__resource", "{}").await;
    assert_eq!(
        resource.text,
        "[resource file:///docs/readme.md]\n# Read me"
    );
    let structured = call("docs__structured", "{}").await;
    assert_eq!(structured.text, r#"{"answer":42}"#);
    let failed = call("docs__fail", "{}").await;
    assert!(failed.is_error);
    assert_eq!(
        failed.text,
        "tool `docs__fail` failed: it failed on purpose"
    );
    let dotted = call("docs__dotted_name", "{}").await;
    assert_eq!(dotted.text, "dotted.name");
    w.servers.shutdown().await;
}

#[tokio::test]
async fn a_slow_call_times_out_and_a_cancelled_call_ends() {
    let server = Arc::new(
        start(config("docs", &[]).with_call_timeout(Duration::from_millis(200)))
            .await
            .expect("starts"),
    );
    let never = CancellationToken::new();
    let error = server
        .call("docs__slow", serde_json::json!({"ms": 60_000}), &never)
        .await
        .expect_err("times out");
    assert!(
        error
            .to_string()
            .contains("did not answer within 0.2 s (its `call_timeout_secs`)"),
        "{error}"
    );
    // The server is still there for the next call.
    let ok = server
        .call("docs__slow", serde_json::json!({"ms": 1}), &never)
        .await
        .expect("answers");
    assert_eq!(ok.text, "slept 1 ms");

    let cancel = CancellationToken::new();
    let call = {
        let (server, cancel) = (Arc::clone(&server), cancel.clone());
        tokio::spawn(async move {
            server
                .call("docs__slow", serde_json::json!({"ms": 60_000}), &cancel)
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    cancel.cancel();
    let error = call.await.expect("joins").expect_err("cancelled");
    assert!(
        matches!(error, dsh_tools::ToolError::Cancelled { .. }),
        "{error}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_changed_tool_list_is_in_the_next_assembly() {
    let w = wired();
    let server = w
        .servers
        .add(start(config("docs", &[])).await.expect("starts"));
    let cx = selecting(&["mcp:docs"]);
    assert!(!w.prompt.assemble(&cx).has_tool("docs__extra"));
    let added = w
        .tools
        .call("docs__add_tool", "{}", &ToolCallContext::new("s"))
        .await;
    assert_eq!(added.text, "added `extra`");
    // The call returns once the new list is read: no waiting here.
    assert_eq!(server.tool_list_generation(), 2);
    assert!(w.prompt.assemble(&cx).has_tool("docs__extra"));
    w.servers.shutdown().await;
}

#[tokio::test]
async fn a_server_that_exits_fails_its_calls_at_once() {
    let server = start(config("docs", &[])).await.expect("starts");
    let never = CancellationToken::new();
    let error = server
        .call("docs__exit", serde_json::json!({}), &never)
        .await
        .expect_err("the server exits");
    assert!(error.to_string().contains("MCP server `docs`"), "{error}");
    assert!(wait_until(|| server.is_closed()).await);
    let error = server
        .call("docs__echo", serde_json::json!({"text": "x"}), &never)
        .await
        .expect_err("dead");
    assert!(error.to_string().contains("is not running"), "{error}");
}

#[tokio::test]
async fn start_failures_name_the_server_and_its_command() {
    let missing = start(ServerConfig::stdio("gone", ["/nonexistent/mcp-server"]))
        .await
        .expect_err("no such program");
    assert!(matches!(missing, McpError::Spawn { .. }), "{missing}");
    assert!(
        missing.to_string().contains("`gone`")
            && missing.to_string().contains("/nonexistent/mcp-server")
    );

    let exits = start(config("quits", &["exit-at-start=3"]))
        .await
        .expect_err("exits");
    assert!(matches!(exits, McpError::Handshake { .. }), "{exits}");

    let slow = start(
        config("sleepy", &["start-delay-ms=5000"]).with_startup_timeout(Duration::from_millis(200)),
    )
    .await
    .expect_err("too slow");
    assert!(matches!(slow, McpError::StartupTimeout { .. }), "{slow}");
    assert!(
        slow.to_string()
            .contains("raise its `startup_timeout_secs`"),
        "{slow}"
    );
}

#[tokio::test]
async fn stopping_a_server_stops_its_whole_process_group() {
    for graceful in [true, false] {
        let dir = tempfile::tempdir().expect("a temp dir");
        let pid_file = dir.path().join("pids");
        let arg = format!("pid-file={}", pid_file.display());
        let server = start(config("docs", &[&arg])).await.expect("starts");
        let pids: Vec<u32> = std::fs::read_to_string(&pid_file)
            .expect("the server wrote its pids")
            .lines()
            .map(|line| line.parse().expect("a pid"))
            .collect();
        assert_eq!(pids.len(), 2);
        assert_eq!(server.pid(), Some(pids[0]));
        assert!(pids.iter().all(|&pid| alive(pid)));
        if graceful {
            server.shutdown().await;
        } else {
            drop(server);
        }
        assert!(
            wait_until(|| pids.iter().all(|&pid| !alive(pid))).await,
            "left running (graceful: {graceful}): {pids:?}"
        );
    }
}

#[tokio::test]
async fn session_servers_are_seen_by_their_session_only() {
    let w = wired();
    w.servers.add_to_session(
        "a",
        start(config("notes", &["instructions=Session A's notes."]))
            .await
            .expect("starts"),
    );
    let in_a = w
        .prompt
        .assemble(&selecting(&[]).with(ToolSession::new("a")));
    assert!(in_a.has_tool("notes__echo"));
    assert!(in_a.sections.get("mcp:notes").is_some());
    let in_b = w
        .prompt
        .assemble(&selecting(&[]).with(ToolSession::new("b")));
    assert!(!in_b.has_tool("notes__echo"));
    let from_b = w
        .tools
        .call("notes__echo", r#"{"text":"x"}"#, &ToolCallContext::new("b"))
        .await;
    assert!(from_b.is_error);
    w.servers.end_session("a").await;
    let after = w
        .prompt
        .assemble(&selecting(&[]).with(ToolSession::new("a")));
    assert!(!after.has_tool("notes__echo"));
}

#[tokio::test]
async fn a_byte_on_stderr_that_is_not_utf8_leaves_the_server_running() {
    // `bad \xff` and a newline, written before the server answers.
    let server = start(config("docs", &["stderr-hex=626164ff0a"]))
        .await
        .expect("starts");
    let never = CancellationToken::new();
    for text in ["after the bad byte", "and again"] {
        // The server writes to its stderr, which dsh still reads: were
        // the pipe closed, the write would fail and the server exit.
        let logged = server
            .call("docs__log", serde_json::json!({ "text": text }), &never)
            .await
            .expect("the server is alive");
        assert_eq!(logged.text, "logged");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn a_huge_result_is_cut_to_the_cap_with_a_marker() {
    let server = start(config("docs", &[])).await.expect("starts");
    let never = CancellationToken::new();
    let result = server
        .call(
            "docs__big",
            serde_json::json!({ "bytes": 10_000_000 }),
            &never,
        )
        .await
        .expect("answers");
    let half = dsh_tool_mcp::MAX_RESULT_BYTES / 2;
    let omitted = 10_000_000 - dsh_tool_mcp::MAX_RESULT_BYTES;
    let marker = format!(
        "\n[output truncated: {omitted} bytes omitted; the first {half} and the last {half} bytes are shown]\n"
    );
    assert_eq!(
        result.text,
        format!("{}{marker}{}", "y".repeat(half), "y".repeat(half))
    );
    server.shutdown().await;
}

/// `stats`: how many `tools/list` requests the server answered, and the
/// most it answered at once.
async fn list_stats(server: &McpServer) -> (u64, u64) {
    let stats = server
        .call(
            "docs__stats",
            serde_json::json!({}),
            &CancellationToken::new(),
        )
        .await
        .expect("answers")
        .text;
    let numbers: Vec<u64> = stats
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    (numbers[0], numbers[1])
}

#[tokio::test]
async fn a_flood_of_tool_list_changes_is_read_one_list_at_a_time() {
    let flooding = std::time::Instant::now();
    let server = start(config("docs", &[])).await.expect("starts");
    let flood = server
        .call(
            "docs__flood",
            serde_json::json!({ "count": 10_000 }),
            &CancellationToken::new(),
        )
        .await
        .expect("answers");
    assert_eq!(flood.text, "sent 10000");
    // The call returned once a list read after the last notification was
    // in place.
    assert!(server.tool_list_generation() >= 2);
    let (lists, at_once) = list_stats(&server).await;
    assert_eq!(at_once, 1, "{lists} lists");
    // One list at the start, then one every `MIN_RELIST_INTERVAL` at
    // most, however many notifications: a slow machine makes fewer.
    let bound = 2 + flooding.elapsed().as_millis() / MIN_RELIST_INTERVAL.as_millis();
    assert!(
        u128::from(lists) <= bound,
        "{lists} lists for 10,000 notifications in {:?}",
        flooding.elapsed()
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_tool_list_without_end_fails_the_start_naming_the_server() {
    for (per_page, bound) in [(1, "past 100 pages"), (100, "more than 1000 tools")] {
        let pages = format!("endless-pages={per_page}");
        let error = start(config("pager", &[&pages]).with_startup_timeout(Duration::from_secs(60)))
            .await
            .expect_err("the list never ends");
        assert!(matches!(error, McpError::ToolListTooLong { .. }), "{error}");
        let message = error.to_string();
        assert!(message.contains("MCP server `pager`"), "{message}");
        assert!(message.contains(bound), "{message}");
    }
}

#[tokio::test]
async fn roots_list_answers_the_sessions_directories_and_a_change_is_announced() {
    let project = tempfile::tempdir().expect("a project");
    let extra = tempfile::tempdir().expect("an additional directory");
    let server = start(config("docs", &["roots"]).with_roots([project.path()]))
        .await
        .expect("starts");
    let never = CancellationToken::new();
    let roots = || server.call("docs__roots", serde_json::json!({}), &never);
    let uri = |dir: &std::path::Path| format!("file://{}", dir.display());
    let seen = roots().await.expect("the server lists roots").text;
    assert_eq!(seen, format!("{}\nlist_changed: 0", uri(project.path())));

    let both = vec![project.path().to_owned(), extra.path().to_owned()];
    assert!(server.set_roots(both.clone()).await, "the roots changed");
    assert!(
        !server.set_roots(both).await,
        "the same roots are no change"
    );
    let seen = roots().await.expect("the server lists roots").text;
    assert_eq!(
        seen,
        format!(
            "{}\n{}\nlist_changed: 1",
            uri(project.path()),
            uri(extra.path())
        )
    );
    server.shutdown().await;
}

#[tokio::test]
async fn without_roots_set_a_stdio_server_has_its_working_directory() {
    let dir = tempfile::tempdir().expect("a directory");
    let server = start(config("docs", &["roots"]).with_cwd(dir.path()))
        .await
        .expect("starts");
    assert_eq!(server.roots(), vec![dir.path().to_owned()]);
    let seen = server
        .call(
            "docs__roots",
            serde_json::json!({}),
            &CancellationToken::new(),
        )
        .await
        .expect("the server lists roots")
        .text;
    assert!(
        seen.starts_with(&format!("file://{}\n", dir.path().display())),
        "{seen}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_servers_resources_are_read_through_one_tool_that_lists_them() {
    let w = wired();
    let server = w
        .servers
        .add(start(config("docs", &["resources"])).await.expect("starts"));
    assert_eq!(
        server.resource_reader().as_deref(),
        Some("docs__read_resource")
    );
    assert_eq!(server.resources().map(|listed| listed.len()), Some(2));
    let reader = server
        .tool_schemas()
        .into_iter()
        .find(|schema| schema.name == "docs__read_resource")
        .expect("the reader is a tool");
    assert!(
        reader.description.contains(
            "Its resources:\n- `file:///docs/readme.md`: Read me (text/markdown) — What the docs are.\n\
             - `demo://logo.png`: logo (image/png)"
        ),
        "{}",
        reader.description
    );
    // Its resource templates too, after them: what the model fills in.
    assert!(
        reader.description.ends_with(
            "Its resource templates (an RFC 6570 URI template: fill in each `{…}` to make a URI \
             to read):\n- `recipe://{name}`: A recipe — The recipe called `name`."
        ),
        "{}",
        reader.description
    );
    let cx = ToolCallContext::new("s1");
    let call = |args: &'static str| {
        let (tools, cx) = (w.tools.clone(), cx.clone());
        async move { tools.call("docs__read_resource", args, &cx).await }
    };
    let recipe = call(r#"{"uri": "recipe://bread"}"#).await;
    assert_eq!(recipe.text, "[resource recipe://bread]\nMix the bread.");
    let text = call(r#"{"uri": "file:///docs/readme.md"}"#).await;
    assert_eq!(
        (text.text.as_str(), text.is_error),
        (
            "[resource file:///docs/readme.md]\n# Read me\nThe docs are here.",
            false
        )
    );
    let binary = call(r#"{"uri": "demo://logo.png"}"#).await;
    assert_eq!(
        binary.text,
        "[binary resource demo://logo.png: image/png, 70 bytes, not shown]"
    );
    let missing = call(r#"{"uri": "demo://nothing"}"#).await;
    assert!(missing.is_error);
    assert!(
        missing.text.contains(
            "MCP server `docs` could not read `demo://nothing`: no resource demo://nothing"
        ),
        "{}",
        missing.text
    );
    let no_uri = call("{}").await;
    assert!(
        no_uri.text.contains("the argument `uri` is missing"),
        "{}",
        no_uri.text
    );
    let linked = w.tools.call("docs__linked", "{}", &cx).await;
    assert_eq!(
        linked.text,
        "see the read-me:\n[resource link: readme file:///docs/readme.md (read it with `docs__read_resource`)]"
    );
    // The reader reads: it runs unasked.
    assert_eq!(server.asks_first("docs__read_resource"), Some(false));
    w.servers.shutdown().await;
}

#[tokio::test]
async fn a_server_without_resources_has_no_reader() {
    let server = start(config("docs", &[])).await.expect("starts");
    assert_eq!(server.resource_reader(), None);
    assert_eq!(server.resources(), None);
    assert!(
        !common::tool_names(&server)
            .iter()
            .any(|name| name.ends_with("read_resource"))
    );
    server.shutdown().await;
}

#[tokio::test]
async fn annotations_choose_the_kind_and_title_of_a_call() {
    let w = wired();
    w.servers
        .add(start(config("docs", &["annotated"])).await.expect("starts"));
    let cx = ToolCallContext::new("s1");
    let tool = |name: &str| w.tools.resolve(name, &cx).expect("the tool resolves");
    let args = serde_json::json!({});
    let delete = tool("docs__delete_note");
    assert_eq!(
        (delete.kind(), delete.title(&args)),
        (ToolKind::Edit, "Delete a note".to_owned())
    );
    let search = tool("docs__web_search");
    assert_eq!(
        (search.kind(), search.title(&args)),
        (ToolKind::Fetch, "Web search".to_owned())
    );
    let echo = tool("docs__echo");
    assert_eq!(
        (echo.kind(), echo.title(&args)),
        (ToolKind::Read, "docs__echo".to_owned())
    );
    let fail = tool("docs__fail");
    assert_eq!(fail.kind(), ToolKind::Other);
    w.servers.shutdown().await;
}

#[tokio::test]
async fn a_prompt_is_got_as_text_and_its_list_kept_current() {
    let w = wired();
    let server = (w.servers).add_to_session(
        "s",
        start(config("docs", &["prompts", "prompt-changes"]))
            .await
            .expect("starts"),
    );
    assert_eq!(server.prompt_names(), Some(vec!["review".to_owned()]));
    let arguments: std::collections::BTreeMap<String, String> =
        [("file".to_owned(), "x.rs".to_owned())].into();
    let go = CancellationToken::new();
    let text = w
        .servers
        .get_prompt(Some("s"), ("docs", "review"), &arguments, &go);
    assert_eq!(text.await.as_deref(), Ok("Review x.rs for mistakes."));
    // A prompt the server lacks, a server the session lacks, an error of
    // the server's: each named.
    let unknown = w
        .servers
        .get_prompt(Some("s"), ("docs", "reveiw"), &arguments, &go);
    assert_eq!(
        unknown.await.map_err(|error| error.to_string()),
        Err("MCP server `docs` has no prompt `reveiw`; it has `review`".to_owned())
    );
    let elsewhere = w
        .servers
        .get_prompt(Some("t"), ("docs", "review"), &arguments, &go);
    assert_eq!(
        elsewhere.await.map_err(|error| error.to_string()),
        Err("no MCP server `docs` is running for this session".to_owned())
    );
    let none = Default::default();
    let refused = w
        .servers
        .get_prompt(Some("s"), ("docs", "review"), &none, &go);
    assert_eq!(
        refused.await.map_err(|error| error.to_string()),
        Err("MCP server `docs` could not give prompt `review`: `file` is required".to_owned())
    );
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let given_up = w
        .servers
        .get_prompt(Some("s"), ("docs", "review"), &arguments, &cancelled);
    assert_eq!(
        given_up.await.map_err(|error| error.to_string()),
        Err("prompt `review` of MCP server `docs` was cancelled".to_owned())
    );
    // The server adds a prompt: it is listed again, and the listeners told.
    let mut changes = w.servers.prompt_changes();
    let added = w
        .tools
        .call("docs__add_prompt", "{}", &ToolCallContext::new("s"))
        .await;
    assert_eq!(added.text, "added `summarize`");
    let changed = tokio::time::timeout(Duration::from_secs(30), changes.recv()).await;
    assert_eq!(changed.expect("told").as_deref(), Ok("docs"));
    assert_eq!(
        server.prompt_names(),
        Some(vec!["review".to_owned(), "summarize".to_owned()])
    );
    w.servers.shutdown().await;
}

#[tokio::test]
async fn a_calls_progress_reaches_its_display_step_by_step_before_its_result() {
    let server = start(config("docs", &["progress"])).await.expect("starts");
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let progress = dsh_tools::ToolProgress::new(move |text| sink.lock().push(text.to_owned()));
    let result = server
        .call_reporting(
            "docs__progress",
            serde_json::json!({"ms": 50}),
            &CancellationToken::new(),
            Some(&progress),
        )
        .await
        .expect("answers");
    assert_eq!(result.text, "done");
    assert_eq!(
        *seen.lock(),
        [
            "step 1 of 3 (1/3)",
            "step 2 of 3 (2/3)",
            "step 3 of 3 (3/3)"
        ]
    );
    // A call without a display still runs; nothing more is reported.
    let quiet = server
        .call(
            "docs__progress",
            serde_json::json!({"ms": 1}),
            &CancellationToken::new(),
        )
        .await
        .expect("answers");
    assert_eq!(quiet.text, "done");
    assert_eq!(seen.lock().len(), 3);
    server.shutdown().await;
}

#[tokio::test]
async fn what_a_server_says_goes_to_the_hosts_output_by_name() {
    use dsh_tool_mcp::{McpLogLevel, ServerLine, ServerOutput, ServerSaid};
    let heard = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let output = ServerOutput::new({
        let heard = Arc::clone(&heard);
        move |line: ServerLine| heard.lock().push(line)
    });
    let config = config("docs", &["stderr=docs server up", "progress"])
        .with_log_level(McpLogLevel::Warning)
        .with_output(output);
    let server = start(config).await.expect("starts");
    let never = CancellationToken::new();
    let args = serde_json::json!({ "ms": 1 });
    server
        .call("docs__progress", args, &never)
        .await
        .expect("answers");
    let args = serde_json::json!({ "text": "after the progress" });
    server
        .call("docs__log", args, &never)
        .await
        .expect("answers");
    let expected = [
        ServerSaid::Stderr("docs server up".to_owned()),
        ServerSaid::Log {
            level: McpLogLevel::Warning,
            logger: Some("steps".to_owned()),
            message: "warning at step 3".to_owned(),
        },
        ServerSaid::Stderr("after the progress".to_owned()),
    ];
    // Stderr is read on a task of its own: its lines come when they come.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while heard.lock().len() < expected.len() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.shutdown().await;
    let heard = heard.lock();
    assert!(heard.iter().all(|line| line.server == "docs"), "{heard:?}");
    let said: Vec<&ServerSaid> = heard.iter().map(|line| &line.said).collect();
    for one in &expected {
        assert!(said.contains(&one), "{one:?} not in {said:?}");
    }
    assert_eq!(said.len(), expected.len(), "{said:?}");
}

/// A result that breaks its tool's `outputSchema` (a string where an
/// integer was promised, or no structured content at all) is passed on
/// with a line saying so; one that keeps it is passed on as it is.
#[tokio::test]
async fn a_result_breaking_its_output_schema_says_so() {
    let w = wired();
    w.servers.add(
        start(config("calc", &["output-schema"]))
            .await
            .expect("starts"),
    );
    let cx = ToolCallContext::new("s1");
    let shaped = w.tools.call("calc__shaped", "{}", &cx).await;
    assert_eq!(shaped.text, r#"{"answer":42}"#);
    let misshaped = w.tools.call("calc__misshaped", "{}", &cx).await;
    assert!(!misshaped.is_error);
    assert!(
        misshaped.text.starts_with(r#"{"answer":"forty-two"}"#),
        "{}",
        misshaped.text
    );
    assert!(
        misshaped
            .text
            .contains("does not keep the tool's outputSchema: `/answer`: \"forty-two\" is not of type \"integer\""),
        "{}",
        misshaped.text
    );
    let unshaped = w.tools.call("calc__unshaped", "{}", &cx).await;
    assert!(
        unshaped
            .text
            .ends_with("declares an outputSchema but the result has no structured content]"),
        "{}",
        unshaped.text
    );
    w.servers.shutdown().await;
}
