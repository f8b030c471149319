//! The registry's contract: unique names, validated arguments, per-agent
//! tool sets, shared schemas, and calls that never fail or panic.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use dsh_system_prompt::{AssembleContext, PromptSection, SystemPrompt, render_prompt};
use dsh_tools::{
    Tool, ToolCallContext, ToolError, ToolOutput, ToolRegistry, ToolRegistryError, ToolResult,
    ToolSelection, async_trait, parameters_for, parse_arguments,
};
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(dead_code, reason = "deserialized to exercise the schema, never read")]
struct PlanArgs {
    /// The plan's title.
    title: String,
    /// At most this many steps.
    #[schemars(range(min = 1, max = 10))]
    limit: Option<u32>,
    /// The steps.
    steps: Vec<Step>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(dead_code, reason = "deserialized to exercise the schema, never read")]
struct Step {
    name: String,
    status: Status,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Status {
    Pending,
    Done,
}

/// What a test tool does when it runs.
#[derive(Clone, Copy)]
enum Behaviour {
    Echo,
    Fail,
    Panic,
    Hang,
}

struct TestTool {
    name: &'static str,
    description: &'static str,
    behaviour: Behaviour,
    calls: Arc<AtomicUsize>,
}

impl TestTool {
    fn new(name: &'static str, behaviour: Behaviour) -> Self {
        Self {
            name,
            description: "A test tool.",
            behaviour,
            calls: Arc::new(AtomicUsize::new(0)),
        }
    }
}

#[async_trait]
impl Tool for TestTool {
    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> String {
        self.description.to_owned()
    }

    fn parameters(&self) -> Value {
        parameters_for::<PlanArgs>()
    }

    async fn execute(
        &self,
        arguments: Value,
        _cx: &ToolCallContext,
    ) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let args: PlanArgs = parse_arguments(self.name, arguments)?;
        match self.behaviour {
            Behaviour::Echo => Ok(ToolOutput::new(format!(
                "{}: {} steps",
                args.title,
                args.steps.len()
            ))),
            Behaviour::Fail => Err(ToolError::failed(self.name, "the disk is full")),
            Behaviour::Panic => panic!("index out of bounds in {}", args.title),
            Behaviour::Hang => {
                futures::future::pending::<()>().await;
                Ok(ToolOutput::new("unreachable"))
            }
        }
    }
}

fn registry_with(tools: Vec<TestTool>) -> ToolRegistry {
    let registry = ToolRegistry::new();
    for tool in tools {
        registry
            .register(Arc::new(tool))
            .expect("test tools register");
    }
    registry
}

const GOOD: &str = r#"{"title": "ship", "steps": [{"name": "build", "status": "done"}]}"#;

async fn call(registry: &ToolRegistry, name: &str, arguments: &str) -> ToolResult {
    registry
        .call(name, arguments, &ToolCallContext::new("session"))
        .await
}

/// The text of `result`, which must be an error result.
#[track_caller]
fn error_text(result: ToolResult) -> String {
    assert!(result.is_error, "not an error result: {}", result.text);
    result.text
}

#[test]
fn a_duplicate_name_is_rejected_and_the_original_stays() {
    let registry = registry_with(vec![TestTool::new("plan", Behaviour::Echo)]);
    let mut second = TestTool::new("plan", Behaviour::Fail);
    second.description = "The impostor.";
    let error = registry.register(Arc::new(second)).err();
    assert_eq!(
        error,
        Some(ToolRegistryError::DuplicateTool {
            name: "plan".into()
        })
    );
    assert_eq!(
        error.map(|e| e.to_string()).as_deref(),
        Some("tool `plan` is already registered; tool names are unique")
    );
    assert_eq!(registry.names(), ["plan"]);
    assert_eq!(registry.schemas()[0].description, "A test tool.");
}

#[test]
fn an_invalid_name_is_rejected() {
    let registry = ToolRegistry::new();
    for name in ["", "has space", "dots.are.out"] {
        let error = registry
            .register(Arc::new(TestTool::new(name, Behaviour::Echo)))
            .err();
        assert_eq!(
            error,
            Some(ToolRegistryError::InvalidToolName { name: name.into() })
        );
    }
    assert!(registry.names().is_empty());
}

#[test]
fn an_invalid_schema_is_rejected() {
    struct BadSchema;
    #[async_trait]
    impl Tool for BadSchema {
        fn name(&self) -> &str {
            "bad"
        }
        fn description(&self) -> String {
            String::new()
        }
        fn parameters(&self) -> Value {
            json!({"type": "no-such-type"})
        }
        async fn execute(&self, _: Value, _: &ToolCallContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::new(""))
        }
    }
    let registry = ToolRegistry::new();
    let error = registry.register(Arc::new(BadSchema)).err();
    assert!(
        matches!(&error, Some(ToolRegistryError::InvalidSchema { tool, .. }) if tool == "bad"),
        "{error:?}"
    );
    assert!(registry.names().is_empty());
}

#[tokio::test]
async fn a_valid_call_runs_the_tool() {
    let registry = registry_with(vec![TestTool::new("plan", Behaviour::Echo)]);
    assert_eq!(
        call(&registry, "plan", GOOD).await,
        ToolResult::ok("ship: 1 steps")
    );
}

#[tokio::test]
async fn schema_violations_name_the_field_and_the_tool_never_runs() {
    let tool = TestTool::new("plan", Behaviour::Echo);
    let calls = Arc::clone(&tool.calls);
    let registry = registry_with(vec![tool]);
    let cases = [
        (
            r#"{"title": 7, "steps": []}"#,
            "invalid arguments for tool `plan`: `title`: 7 is not of type \"string\"",
        ),
        (
            r#"{"title": "t"}"#,
            "invalid arguments for tool `plan`: `steps`: required argument is missing",
        ),
        (
            r#"{"title": "t", "steps": [], "colour": "red"}"#,
            "invalid arguments for tool `plan`: `colour`: unknown argument; the schema allows no other properties",
        ),
        (
            r#"{"title": "t", "steps": [], "limit": 11}"#,
            "invalid arguments for tool `plan`: `limit`: 11 is greater than the maximum of 10",
        ),
        (
            r#"{"title": "t", "steps": [{"name": "a", "status": "done"}, {"name": "b", "status": "doing"}]}"#,
            "invalid arguments for tool `plan`: `steps[1].status`: \"doing\" is not one of \"pending\" or \"done\"",
        ),
    ];
    for (arguments, expected) in cases {
        let text = error_text(call(&registry, "plan", arguments).await);
        assert_eq!(text, expected, "{arguments}");
    }
    let both = call(&registry, "plan", r#"{"title": 7}"#).await;
    assert!(
        both.text.contains("`title`: 7 is not of type"),
        "{}",
        both.text
    );
    assert!(
        both.text.contains("`steps`: required argument is missing"),
        "{}",
        both.text
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn malformed_json_and_unknown_tools_are_error_results() {
    let registry = registry_with(vec![
        TestTool::new("plan", Behaviour::Echo),
        TestTool::new("fail", Behaviour::Fail),
    ]);
    let text = error_text(call(&registry, "plan", "{\"title\": ").await);
    assert!(
        text.starts_with("the arguments of tool `plan` are not valid JSON: "),
        "{text}"
    );

    let text = error_text(call(&registry, "plna", GOOD).await);
    assert_eq!(
        text,
        "there is no tool `plna`; available tools: `plan`, `fail`"
    );
}

#[tokio::test]
async fn empty_arguments_count_as_an_empty_object() {
    let registry = registry_with(vec![TestTool::new("plan", Behaviour::Echo)]);
    let text = error_text(call(&registry, "plan", "  ").await);
    assert!(
        text.contains("`title`: required argument is missing"),
        "{text}"
    );
}

#[tokio::test]
async fn a_tool_error_is_an_error_result() {
    let registry = registry_with(vec![TestTool::new("fail", Behaviour::Fail)]);
    let text = error_text(call(&registry, "fail", GOOD).await);
    assert_eq!(text, "tool `fail` failed: the disk is full");
}

#[tokio::test]
async fn a_panic_in_a_tool_is_an_error_result() {
    let registry = registry_with(vec![
        TestTool::new("boom", Behaviour::Panic),
        TestTool::new("plan", Behaviour::Echo),
    ]);
    let text = error_text(call(&registry, "boom", GOOD).await);
    assert_eq!(text, "tool `boom` panicked: index out of bounds in ship");
    // The registry is still usable afterwards.
    assert!(!call(&registry, "plan", GOOD).await.is_error);
}

#[tokio::test]
async fn cancellation_ends_a_call_that_does_not_return() {
    let registry = registry_with(vec![TestTool::new("hang", Behaviour::Hang)]);
    let cx = ToolCallContext::new("session");
    let cancel = cx.cancel.clone();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let result = tokio::time::timeout(Duration::from_secs(5), registry.call("hang", GOOD, &cx))
        .await
        .expect("cancellation ends the call");
    assert_eq!(
        error_text(result),
        "tool `hang` was cancelled before it finished"
    );
    canceller.await.expect("the canceller ran");

    // A call on a context that is already cancelled does not start.
    let tool = TestTool::new("plan", Behaviour::Echo);
    let calls = Arc::clone(&tool.calls);
    let registry = registry_with(vec![tool]);
    let result = registry.call("plan", GOOD, &cx).await;
    assert!(result.is_error);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[test]
fn install_provides_the_selected_tools_placed_by_the_tool_order()
-> Result<(), Box<dyn std::error::Error>> {
    let registry = registry_with(vec![
        TestTool::new("read", Behaviour::Echo),
        TestTool::new("bash", Behaviour::Echo),
    ]);
    let prompt = SystemPrompt::empty();
    let installed = registry.install(&prompt)?;
    let names = |cx: &AssembleContext| -> Vec<String> {
        prompt
            .assemble(cx)
            .tools
            .iter()
            .map(|tool| tool.name.clone())
            .collect()
    };

    // Neither registration order nor the selection's matters: without a
    // tool order, the assembly sorts the tools by name.
    assert_eq!(names(&AssembleContext::default()), ["bash", "read"]);
    let both = AssembleContext::new().with(ToolSelection::new(["read", "bash"]));
    assert_eq!(names(&both), ["bash", "read"]);
    let read_only = AssembleContext::new().with(ToolSelection::new(["read", "no-such-tool"]));
    assert_eq!(names(&read_only), ["read"]);

    // A tool registered after installation is in the next assembly.
    registry.register(Arc::new(TestTool::new("todo_write", Behaviour::Echo)))?;
    assert_eq!(
        names(&AssembleContext::default()),
        ["bash", "read", "todo_write"]
    );

    drop(installed);
    assert!(names(&AssembleContext::default()).is_empty());
    Ok(())
}

#[test]
fn a_section_bound_to_an_unselected_tool_does_not_render() -> Result<(), Box<dyn std::error::Error>>
{
    let registry = registry_with(vec![
        TestTool::new("read", Behaviour::Echo),
        TestTool::new("bash", Behaviour::Echo),
    ]);
    let prompt = SystemPrompt::empty();
    let _installed = registry.install(&prompt)?;
    let _habit = prompt
        .section(PromptSection::new("tool:bash", 105, "Check exit codes.").bound_to_tool("bash"))?;
    let with_bash = AssembleContext::new().with(ToolSelection::new(["read", "bash"]));
    assert_eq!(
        render_prompt(&prompt.assemble(&with_bash))?,
        "Check exit codes."
    );
    let without_bash = AssembleContext::new().with(ToolSelection::new(["read"]));
    assert_eq!(render_prompt(&prompt.assemble(&without_bash))?, "");
    Ok(())
}

#[test]
fn schemas_are_built_once_and_shared() -> Result<(), Box<dyn std::error::Error>> {
    let registry = registry_with(vec![TestTool::new("plan", Behaviour::Echo)]);
    let prompt = SystemPrompt::empty();
    let _installed = registry.install(&prompt)?;
    let first = prompt.assemble(&AssembleContext::default());
    let second = prompt.assemble(&AssembleContext::default());
    assert!(Arc::ptr_eq(&first.tools[0], &second.tools[0]));
    assert!(Arc::ptr_eq(&first.tools[0], &registry.schemas()[0]));

    let schema = &first.tools[0];
    assert_eq!(schema.parameters["type"], "object");
    assert_eq!(schema.parameters["additionalProperties"], false);
    assert_eq!(
        schema.parameters["properties"]["title"]["description"],
        "The plan's title."
    );
    assert!(
        schema.parameters.get("$defs").is_none(),
        "subschemas are inlined"
    );
    Ok(())
}

#[test]
fn check_selection_names_an_unknown_tool() {
    let registry = registry_with(vec![TestTool::new("read", Behaviour::Echo)]);
    assert_eq!(
        registry.check_selection(&ToolSelection::new(["read"])),
        Ok(())
    );
    let error = registry
        .check_selection(&ToolSelection::new(["read", "bsh"]))
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        error.as_deref(),
        Some("tool selection names unknown tool `bsh`; available tools: `read`")
    );
}

#[test]
fn the_registry_is_send_sync_and_cheap_to_clone() {
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<ToolRegistry>();
    assert_send_sync::<ToolCallContext>();
    let registry = registry_with(vec![TestTool::new("read", Behaviour::Echo)]);
    let clone = registry.clone();
    clone
        .register(Arc::new(TestTool::new("bash", Behaviour::Echo)))
        .expect("registers");
    assert_eq!(registry.names(), ["read", "bash"]);
}
