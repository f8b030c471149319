//! The MCP server the tests of dsh run (`dsh-mcp-test-server`), on rmcp's
//! own server side, so `cargo test` needs neither Python nor Node. Built
//! only with the crate's `test-server` feature; not part of the API.
//!
//! It speaks MCP on stdio. Arguments, `key=value`, all optional:
//!
//! - `instructions=<text>`: the `instructions` of its `initialize` result
//!   (none without it); `instructions-bytes=<n>`: that many bytes of
//!   instructions instead (for the cap);
//! - `start-delay-ms=<n>`: waits before answering anything (a slow start);
//! - `exit-at-start=<code>`: exits at once with that status (a server
//!   that fails to start);
//! - `pid-file=<path>`: writes its pid, and the pid of a `sleep` child it
//!   starts (a grandchild of dsh), one a line — the process group test;
//! - `stderr=<text>`: writes that line to its stderr at start;
//! - `tool-prefix=<text>`: a prefix of every tool's name (naming tests);
//! - `env-file=<path>`: writes the names of its environment's variables,
//!   one a line (what a server may see);
//! - `extra-tools=<n>`: `n` more tools, `t0`, `t1`, … (a server with too
//!   many); `array-schema`: a tool `listy` whose input schema is an array,
//!   not an object; `schema-bytes=<n>`: a tool `big` whose input schema
//!   holds a description of `n` bytes (for the checks of `dsh check`).
//!
//! Tools: `echo` (`text`), `slow` (`ms`; logs `slow: cancelled` to stderr
//! when cancelled), `fail` (an `isError` result), `image` (text and a PNG),
//! `resource` (an embedded text resource), `structured` (structured
//! content only), `add_tool` (adds `extra` and sends
//! `notifications/tools/list_changed`), `exit` (the process exits without
//! answering), `dotted.name` (a name MCP allows and model APIs do not).
#![allow(clippy::print_stderr, reason = "a test server's log is its stderr")]
#![allow(missing_docs, missing_debug_implementations, reason = "a test fixture")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};

#[derive(Clone)]
struct TestServer {
    instructions: Option<String>,
    prefix: String,
    extra: Arc<AtomicBool>,
    /// Tools added by the arguments, after the usual ones.
    more: Vec<Tool>,
}

fn schema(properties: serde_json::Value, required: &[&str]) -> Arc<JsonObject> {
    let value = serde_json::json!({
        "type": "object",
        "properties": properties,
        "required": required,
    });
    match value {
        serde_json::Value::Object(map) => Arc::new(map),
        _ => unreachable!("a JSON object literal"),
    }
}

impl TestServer {
    fn tools(&self) -> Vec<Tool> {
        let none = || schema(serde_json::json!({}), &[]);
        let p = &self.prefix;
        let mut tools = vec![
            // Annotated read-only: it runs unasked by default; the other
            // tools, unannotated, ask (the MCP specification's default).
            Tool::new(
                format!("{p}echo"),
                "Returns `text` unchanged.",
                schema(serde_json::json!({"text": {"type": "string"}}), &["text"]),
            )
            .annotate(rmcp::model::ToolAnnotations::new().read_only(true)),
            Tool::new(
                format!("{p}slow"),
                "Sleeps `ms` milliseconds, then says so.",
                schema(serde_json::json!({"ms": {"type": "integer"}}), &["ms"]),
            ),
            Tool::new(format!("{p}fail"), "Always fails.", none()),
            Tool::new(format!("{p}image"), "Returns a tiny PNG.", none()),
            Tool::new(
                format!("{p}resource"),
                "Returns an embedded text resource.",
                none(),
            ),
            Tool::new(
                format!("{p}structured"),
                "Returns structured content only.",
                none(),
            ),
            Tool::new(format!("{p}add_tool"), "Adds the tool `extra`.", none()),
            Tool::new(format!("{p}exit"), "Makes the server exit.", none()),
            Tool::new(format!("{p}dotted.name"), "A name with a dot.", none()),
        ];
        if self.extra.load(Ordering::SeqCst) {
            tools.push(Tool::new(format!("{p}extra"), "Added at run time.", none()));
        }
        tools.extend(self.more.iter().cloned());
        tools
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let mut info = ServerConfig::new(capabilities)
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
            .with_server_info(Implementation::new("dsh-mcp-test-server", "0.1.0"));
        if let Some(instructions) = &self.instructions {
            info = info.with_instructions(instructions.clone());
        }
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request
            .name
            .strip_prefix(&self.prefix)
            .unwrap_or(&request.name);
        let args = request.arguments.unwrap_or_default();
        let result = match name {
            "echo" => CallToolResult::success(vec![ContentBlock::text(
                args.get("text")
                    .and_then(|v| v.as_str())
                    .unwrap_or_default(),
            )]),
            "slow" => {
                let ms = args
                    .get("ms")
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(0);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                    () = context.ct.cancelled() => {
                        eprintln!("slow: cancelled");
                        return Err(ErrorData::internal_error("cancelled", None));
                    }
                }
                CallToolResult::success(vec![ContentBlock::text(format!("slept {ms} ms"))])
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text("it failed on purpose")]),
            "image" => CallToolResult::success(vec![
                ContentBlock::text("a pixel:"),
                ContentBlock::image(
                    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
                    "image/png",
                ),
            ]),
            "resource" => CallToolResult::success(vec![ContentBlock::embedded_text(
                "file:///docs/readme.md",
                "# Read me",
            )]),
            "structured" => {
                let mut result = CallToolResult::success(Vec::new());
                result.structured_content = Some(serde_json::json!({"answer": 42}));
                result
            }
            "add_tool" => {
                self.extra.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                CallToolResult::success(vec![ContentBlock::text("added `extra`")])
            }
            "exit" => {
                // Let what is queued (a cancelled call's log line) run first.
                for _ in 0..8 {
                    tokio::task::yield_now().await;
                }
                std::process::exit(3)
            }
            "dotted.name" | "extra" => CallToolResult::success(vec![ContentBlock::text(name)]),
            _ => return Err(ErrorData::invalid_params(format!("no tool {name}"), None)),
        };
        Ok(result.into())
    }
}

/// Runs the test server on stdio with the process's arguments.
#[tokio::main(flavor = "current_thread")]
pub async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut server = TestServer {
        instructions: None,
        prefix: String::new(),
        extra: Arc::new(AtomicBool::new(false)),
        more: Vec::new(),
    };
    for arg in std::env::args().skip(1) {
        let (key, value) = arg.split_once('=').unwrap_or((&arg, ""));
        match key {
            "instructions" => server.instructions = Some(value.to_owned()),
            "instructions-bytes" => {
                let n: usize = value.parse()?;
                server.instructions = Some("x".repeat(n));
            }
            "start-delay-ms" => tokio::time::sleep(Duration::from_millis(value.parse()?)).await,
            "exit-at-start" => std::process::exit(value.parse()?),
            "stderr" => eprintln!("{value}"),
            "tool-prefix" => server.prefix = value.to_owned(),
            "extra-tools" => {
                for n in 0..value.parse::<usize>()? {
                    let none = schema(serde_json::json!({}), &[]);
                    server
                        .more
                        .push(Tool::new(format!("t{n}"), "A tool of many.", none));
                }
            }
            "array-schema" => {
                let mut array = JsonObject::new();
                array.insert("type".to_owned(), "array".into());
                let tool = Tool::new("listy", "Takes a list.", Arc::new(array));
                server.more.push(tool);
            }
            "schema-bytes" => {
                let text = "x".repeat(value.parse()?);
                let properties =
                    serde_json::json!({"text": {"type": "string", "description": text}});
                let tool = Tool::new("big", "Has a large schema.", schema(properties, &[]));
                server.more.push(tool);
            }
            "env-file" => {
                let names: Vec<String> = std::env::vars_os()
                    .map(|(name, _)| name.to_string_lossy().into_owned())
                    .collect();
                std::fs::write(value, names.join("\n"))?;
            }
            "pid-file" => {
                let child = std::process::Command::new("sleep").arg("1000").spawn()?;
                std::fs::write(value, format!("{}\n{}\n", std::process::id(), child.id()))?;
            }
            _ => return Err(format!("unknown argument `{arg}`").into()),
        }
    }
    let running = server.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
