//! The subagent tool: wording per provider, installation, what spawned and
//! forked children see, contained child failures, and disposal of every
//! run on every path.

#[path = "subagent/table.rs"]
mod table;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use dsh_agent_loop::{
    Agent, AgentLoop, AgentOptions, ContextBudget, Event, Message, ModelAdapter, ModelError,
    ModelRequest, ModelResponse, ScriptedAdapter, Session, TextSink, ToolCall, TurnError,
    TurnSummary, async_trait,
};
use dsh_system_prompt::{Registration, SystemPrompt};
use dsh_tool_subagent::{
    ChildAgentConfig, ForkProvider, SpawnProvider, SubagentCapabilities, SubagentError,
    SubagentProvider, SubagentProviders, SubagentRun, SubagentTask, SubagentTool,
    SubagentToolConfig,
};
use dsh_tools::{ToolCallContext, ToolRegistry, ToolResult};
use tokio_util::sync::CancellationToken;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn providers() -> Result<SubagentProviders, SubagentError> {
    let providers = SubagentProviders::new();
    providers.register(Arc::new(SpawnProvider::new()))?;
    providers.register(Arc::new(ForkProvider::new()))?;
    Ok(providers)
}

/// `(description, prompt parameter description)` of the tool named `name`.
fn wording(tools: &ToolRegistry, name: &str) -> Result<(String, String), String> {
    let schema = tools
        .schemas()
        .into_iter()
        .find(|schema| schema.name == name)
        .ok_or(format!("no tool `{name}`"))?;
    let prompt = schema.parameters["properties"]["prompt"]["description"]
        .as_str()
        .ok_or("no description of `prompt`")?
        .to_owned();
    Ok((schema.description.clone(), prompt))
}

#[test]
fn spawn_and_fork_are_worded_after_their_inherits_parent_context_flag() -> TestResult {
    let providers = providers()?;
    let tools = ToolRegistry::new();
    SubagentTool::install(&SubagentToolConfig::new("spawn"), &providers, &tools)?;
    // A second instance, under another tool name, binds another provider.
    SubagentTool::install(
        &SubagentToolConfig::new("fork").named("fork"),
        &providers,
        &tools,
    )?;
    assert_eq!(tools.names(), ["subagent", "fork"]);

    let (description, prompt) = wording(&tools, "subagent")?;
    assert!(
        description.contains("does not see this conversation"),
        "{description}"
    );
    assert!(
        description.contains("complete and self-contained"),
        "{description}"
    );
    assert!(!description.contains("already sees"), "{description}");
    assert!(prompt.contains("complete, self-contained"), "{prompt}");
    assert!(
        prompt.contains("does not see this conversation"),
        "{prompt}"
    );

    let (description, prompt) = wording(&tools, "fork")?;
    assert!(
        description.contains("already sees every completed turn"),
        "{description}"
    );
    assert!(description.contains("not the current one"), "{description}");
    assert!(!description.contains("does not see"), "{description}");
    assert!(
        prompt.contains("already sees the completed turns"),
        "{prompt}"
    );
    assert!(prompt.contains("state only what is new"), "{prompt}");

    let required = &tools.schemas()[0].parameters["required"];
    assert_eq!(required, &serde_json::json!(["prompt"]));
    Ok(())
}

#[test]
fn a_text_only_child_is_announced_as_such() -> TestResult {
    let providers = SubagentProviders::new();
    let child = ChildAgentConfig {
        tools: Some(Vec::new()),
        ..ChildAgentConfig::default()
    };
    let thinker = SpawnProvider::new().named("thinker").with_child(child);
    assert_eq!(thinker.capabilities(), SubagentCapabilities::TEXT_ONLY);
    providers.register(Arc::new(thinker))?;
    let tools = ToolRegistry::new();
    SubagentTool::install(&SubagentToolConfig::new("thinker"), &providers, &tools)?;
    let (description, _) = wording(&tools, "subagent")?;
    assert!(description.contains("cannot use tools"), "{description}");
    Ok(())
}

#[test]
fn installing_a_tool_bound_to_a_missing_provider_fails_with_the_fix() -> TestResult {
    let providers = SubagentProviders::new();
    providers.register(Arc::new(SpawnProvider::new()))?;
    let tools = ToolRegistry::new();
    let error = SubagentTool::install(&SubagentToolConfig::new("fork"), &providers, &tools)
        .err()
        .ok_or("installation should fail")?;
    assert_eq!(
        error,
        SubagentError::UnknownProvider {
            tool: "subagent".into(),
            provider: "fork".into(),
            registered: vec!["spawn".into()],
        }
    );
    assert_eq!(
        error.to_string(),
        "subagent tool `subagent` is bound to provider `fork`, which is not registered; \
         register the provider before installing the tool (registered providers: `spawn`)"
    );
    assert!(tools.names().is_empty(), "nothing was installed");
    Ok(())
}

#[test]
fn two_tools_of_one_name_are_rejected() -> TestResult {
    let providers = providers()?;
    let tools = ToolRegistry::new();
    SubagentTool::install(&SubagentToolConfig::new("spawn"), &providers, &tools)?;
    let error = SubagentTool::install(&SubagentToolConfig::new("fork"), &providers, &tools)
        .err()
        .ok_or("the second `subagent` should be rejected")?;
    assert!(matches!(error, SubagentError::Tool(_)), "{error:?}");
    Ok(())
}

#[test]
fn the_tool_config_reads_from_toml() -> TestResult {
    let config: SubagentToolConfig = toml_like(r#"{"provider": "fork"}"#)?;
    assert_eq!(config, SubagentToolConfig::new("fork"));
    let child: ChildAgentConfig = toml_like(r#"{"model": "small", "tools": ["read"]}"#)?;
    assert_eq!(child.model.as_deref(), Some("small"));
    Ok(())
}

/// Configs are plain serde types; JSON stands in for TOML here.
fn toml_like<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    serde_json::from_str(text)
}

/// A loop whose tools are the subagent tools given.
fn agent_loop(
    configs: &[SubagentToolConfig],
    providers: &SubagentProviders,
    adapter: Arc<dyn ModelAdapter>,
) -> Result<(AgentLoop, Registration), Box<dyn std::error::Error>> {
    let tools = ToolRegistry::new();
    for config in configs {
        SubagentTool::install(config, providers, &tools)?;
    }
    let prompt = SystemPrompt::new()?;
    let installed = tools.install(&prompt)?;
    Ok((AgentLoop::new(prompt, tools, adapter), installed))
}

/// A loop whose one tool is the subagent, bound to a spawn provider whose
/// children are `child`.
fn spawning_loop(
    child: ChildAgentConfig,
    adapter: Arc<dyn ModelAdapter>,
) -> Result<(AgentLoop, Registration), Box<dyn std::error::Error>> {
    let providers = SubagentProviders::new();
    providers.register(Arc::new(SpawnProvider::new().with_child(child)))?;
    agent_loop(&[SubagentToolConfig::new("spawn")], &providers, adapter)
}

/// The model of a parent that answers a first question, and in the second
/// turn gives `task` to the subagent, which answers `child_answer`, then
/// says "done".
fn delegating_in_the_second_turn(task: &str, child_answer: &str) -> Arc<ScriptedAdapter> {
    Arc::new(ScriptedAdapter::new([
        ModelResponse::text("first answer"),
        subagent_call("subagent", task),
        ModelResponse::text(child_answer),
        ModelResponse::text("done"),
    ]))
}

/// Runs the two turns [`delegating_in_the_second_turn`] scripts, for
/// `agent` in a session in `/p`: the session, and the second turn's
/// summary.
async fn two_turns(
    agent_loop: &AgentLoop,
    agent: &Agent,
) -> Result<(Session, TurnSummary), TurnError> {
    let mut session = Session::new().with_cwd("/p");
    let cancel = CancellationToken::new();
    agent_loop
        .run_turn(agent, &mut session, "first question", &cancel)
        .await?;
    let summary = agent_loop
        .run_turn(agent, &mut session, "second question", &cancel)
        .await?;
    Ok((session, summary))
}

fn subagent_call(tool: &str, prompt: &str) -> ModelResponse {
    let arguments = serde_json::json!({ "prompt": prompt }).to_string();
    ModelResponse::default().with_tool_call(ToolCall::new("call_1", tool, arguments))
}

fn tool_results(session: &Session) -> Vec<(String, bool)> {
    session
        .events()
        .iter()
        .filter_map(|event| match event {
            Event::ToolResult { text, is_error, .. } => Some((text.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_fork_child_sees_the_completed_turns_but_not_the_current_one() -> TestResult {
    let adapter = delegating_in_the_second_turn("Summarize our talk.", "child answer");
    let (agent_loop, _installed) = agent_loop(
        &[SubagentToolConfig::new("fork")],
        &providers()?,
        adapter.clone(),
    )?;
    let agent = Agent::new(
        "coder",
        AgentOptions::new("m").with_persona("I am <<model>>."),
    );
    let (session, summary) = two_turns(&agent_loop, &agent).await?;
    assert_eq!(summary.answer, "done");

    let requests = adapter.requests();
    assert_eq!(requests.len(), 4);
    let child = &requests[2];
    assert_eq!(
        child.messages,
        [
            Message::User {
                text: "first question".into()
            },
            Message::Assistant {
                text: "first answer".into(),
                tool_calls: Vec::new(),
                thoughts: Vec::new(),
            },
            Message::User {
                text: "Summarize our talk.".into()
            },
        ],
        "the turn in flight (\"second question\") is not part of the fork"
    );
    assert_eq!(child.model, "m");
    assert_eq!(child.system.as_deref(), Some("I am m."));
    assert_eq!(tool_results(&session), [("child answer".to_owned(), false)]);
    Ok(())
}

#[tokio::test]
async fn a_spawned_child_starts_fresh_as_its_config_says() -> TestResult {
    let adapter = delegating_in_the_second_turn("Count to three.", "1 2 3");
    let child = ChildAgentConfig {
        model: Some("child-model".into()),
        persona: Some("I am a child on <<model>> in <<cwd>>.".into()),
        tools: Some(Vec::new()),
    };
    let (agent_loop, _installed) = spawning_loop(child, adapter.clone())?;
    let agent = Agent::new("coder", AgentOptions::new("parent-model"));
    let (session, _) = two_turns(&agent_loop, &agent).await?;

    let child = &adapter.requests()[2];
    assert_eq!(
        child.messages,
        [Message::User {
            text: "Count to three.".into()
        }]
    );
    assert_eq!(child.model, "child-model");
    assert_eq!(
        child.system.as_deref(),
        Some("I am a child on child-model in /p.")
    );
    assert!(child.tools.is_empty());
    assert_eq!(tool_results(&session), [("1 2 3".to_owned(), false)]);
    Ok(())
}

#[tokio::test]
async fn a_child_failure_is_an_error_result_and_the_parent_goes_on() -> TestResult {
    let adapter = Arc::new(ScriptedAdapter::new([
        subagent_call("subagent", "Do it."),
        ModelResponse::text("The subagent failed, so I did it myself."),
    ]));
    let child = ChildAgentConfig {
        persona: Some("I work in <<cwd>>.".into()),
        ..ChildAgentConfig::default()
    };
    let (agent_loop, _installed) = spawning_loop(child, adapter.clone())?;
    let agent = Agent::new("coder", AgentOptions::new("m"));
    // No working directory: the child's persona cannot render.
    let mut session = Session::new();
    let summary = agent_loop
        .run_turn(&agent, &mut session, "go", &CancellationToken::new())
        .await?;
    assert_eq!(summary.answer, "The subagent failed, so I did it myself.");
    assert_eq!(adapter.requests().len(), 2, "the child sent no request");
    let results = tool_results(&session);
    assert_eq!(results.len(), 1);
    let (text, is_error) = &results[0];
    assert!(is_error);
    assert!(text.contains("the subagent (spawn) failed"), "{text}");
    assert!(
        text.contains("`agent:persona`") && text.contains("`cwd`"),
        "{text}"
    );
    Ok(())
}

/// Answers the parent, hangs for the child, and records when the child's
/// request is dropped.
struct HangsForChildren {
    dropped: Arc<AtomicUsize>,
}

struct DropFlag(Arc<AtomicUsize>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl ModelAdapter for HangsForChildren {
    async fn complete(
        &self,
        request: &ModelRequest,
        _on_text: TextSink<'_>,
        _cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        if request.model == "parent" {
            return Ok(subagent_call("subagent", "Wait forever."));
        }
        let _flag = DropFlag(Arc::clone(&self.dropped));
        futures::future::pending().await
    }
}

#[tokio::test]
async fn cancelling_the_parent_stops_the_child() -> TestResult {
    let dropped = Arc::new(AtomicUsize::new(0));
    let child = ChildAgentConfig {
        model: Some("child".into()),
        ..ChildAgentConfig::default()
    };
    let adapter = Arc::new(HangsForChildren {
        dropped: Arc::clone(&dropped),
    });
    let (agent_loop, _installed) = spawning_loop(child, adapter)?;
    let agent_loop = agent_loop.with_cancel_grace(Duration::from_millis(100));
    let agent = Agent::new("coder", AgentOptions::new("parent"));
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            cancel.cancel();
        })
    };
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        agent_loop.run_turn(&agent, &mut Session::new(), "go", &cancel),
    )
    .await?;
    canceller.await?;
    assert!(matches!(result, Err(TurnError::Cancelled)), "{result:?}");
    for _ in 0..100 {
        if dropped.load(Ordering::SeqCst) == 1 {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Err("the child's request was never dropped".into())
}

/// How a probe run ends.
#[derive(Clone, Copy)]
enum Ending {
    Answer,
    Fail,
    Panic,
    Hang,
}

/// A provider whose runs end as told and count their disposals.
struct Probe {
    ending: Ending,
    started: Arc<AtomicUsize>,
    disposed: Arc<AtomicUsize>,
}

struct ProbeRun {
    ending: Ending,
    disposed: Arc<AtomicUsize>,
}

#[async_trait]
impl SubagentRun for ProbeRun {
    async fn finish(&mut self) -> Result<String, SubagentError> {
        match self.ending {
            Ending::Answer => Ok("the answer".into()),
            Ending::Fail => Err(SubagentError::ChildFailed {
                provider: "probe".into(),
                message: "it broke".into(),
            }),
            Ending::Panic => panic!("the probe run panicked"),
            Ending::Hang => futures::future::pending().await,
        }
    }

    fn dispose(&mut self) {
        self.disposed.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl SubagentProvider for Probe {
    fn name(&self) -> &str {
        "probe"
    }

    fn capabilities(&self) -> SubagentCapabilities {
        SubagentCapabilities::TEXT_ONLY
    }

    fn inherits_parent_context(&self) -> bool {
        false
    }

    async fn start(&self, _task: SubagentTask) -> Result<Box<dyn SubagentRun>, SubagentError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        Ok(Box::new(ProbeRun {
            ending: self.ending,
            disposed: Arc::clone(&self.disposed),
        }))
    }
}

/// A registry with the subagent tool bound to a probe, and the probe's
/// counts of runs started and disposed of.
struct Probed {
    tools: ToolRegistry,
    started: Arc<AtomicUsize>,
    disposed: Arc<AtomicUsize>,
}

/// The subagent tool bound to a probe that ends as told.
fn probe(ending: Ending) -> Result<Probed, SubagentError> {
    let started = Arc::new(AtomicUsize::new(0));
    let disposed = Arc::new(AtomicUsize::new(0));
    let providers = SubagentProviders::new();
    providers.register(Arc::new(Probe {
        ending,
        started: Arc::clone(&started),
        disposed: Arc::clone(&disposed),
    }))?;
    let tools = ToolRegistry::new();
    SubagentTool::install(&SubagentToolConfig::new("probe"), &providers, &tools)?;
    Ok(Probed {
        tools,
        started,
        disposed,
    })
}

const ARGUMENTS: &str = r#"{"prompt": "Do the thing."}"#;

/// One call of the probed subagent tool, in `cx`; asserts that the call
/// disposed of its run exactly once, and returns the call's result and how
/// many runs were started.
async fn disposed_once(probed: Probed, cx: &ToolCallContext) -> (ToolResult, usize) {
    let result = probed.tools.call("subagent", ARGUMENTS, cx).await;
    assert_eq!(
        probed.disposed.load(Ordering::SeqCst),
        1,
        "disposed of once"
    );
    (result, probed.started.load(Ordering::SeqCst))
}

#[tokio::test]
async fn the_run_is_disposed_on_success() -> TestResult {
    let (result, started) = disposed_once(probe(Ending::Answer)?, &ToolCallContext::new("s")).await;
    assert_eq!(
        (result.text.as_str(), result.is_error),
        ("the answer", false)
    );
    assert_eq!(started, 1);
    Ok(())
}

#[tokio::test]
async fn the_run_is_disposed_on_error() -> TestResult {
    let (result, _) = disposed_once(probe(Ending::Fail)?, &ToolCallContext::new("s")).await;
    assert!(result.is_error);
    assert!(result.text.contains("it broke"), "{}", result.text);
    Ok(())
}

#[tokio::test]
async fn the_run_is_disposed_when_the_child_panics_and_the_panic_is_an_error_result() -> TestResult
{
    let (result, _) = disposed_once(probe(Ending::Panic)?, &ToolCallContext::new("s")).await;
    assert!(result.is_error);
    // A child's panic is the call's failure, not a panic of the tool (which
    // would fail the caller's turn).
    assert!(
        result.text.starts_with(
            "tool `subagent` failed: the subagent (probe) panicked: the probe run panicked"
        ),
        "{}",
        result.text
    );
    Ok(())
}

#[tokio::test]
async fn the_run_is_disposed_on_cancel() -> TestResult {
    let probed = probe(Ending::Hang)?;
    let cx = ToolCallContext::new("s");
    let cancel = cx.cancel.clone();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let (result, _) =
        tokio::time::timeout(Duration::from_secs(10), disposed_once(probed, &cx)).await?;
    canceller.await?;
    assert!(result.is_error);
    assert!(result.text.contains("cancelled"), "{}", result.text);
    Ok(())
}

#[tokio::test]
async fn the_run_is_disposed_when_the_call_is_dropped() -> TestResult {
    let probed = probe(Ending::Hang)?;
    let cx = ToolCallContext::new("s");
    let call = probed.tools.call("subagent", ARGUMENTS, &cx);
    assert!(
        tokio::time::timeout(Duration::from_millis(50), call)
            .await
            .is_err()
    );
    assert_eq!(probed.started.load(Ordering::SeqCst), 1);
    assert_eq!(probed.disposed.load(Ordering::SeqCst), 1);
    Ok(())
}

#[tokio::test]
async fn in_process_providers_need_the_calling_turn() -> TestResult {
    let providers = providers()?;
    let tools = ToolRegistry::new();
    SubagentTool::install(&SubagentToolConfig::new("spawn"), &providers, &tools)?;
    let result = tools
        .call("subagent", ARGUMENTS, &ToolCallContext::new("s"))
        .await;
    assert!(result.is_error);
    assert!(
        result.text.contains("did not come from an agent loop turn"),
        "{}",
        result.text
    );
    Ok(())
}

/// The child rule's one owner gives the preset too: a spawned child joins
/// its parent's preset (and sees what it adds), under its own id.
#[test]
fn a_spawned_child_joins_its_parents_preset() {
    let parent = Agent::new("reviewer", AgentOptions::new("m")).with_preset("review");
    let child = SpawnProvider::new().named("task").child_agent(&parent);
    assert_eq!(child.preset(), Some("review"));
    assert_eq!(
        child.scope().to_string(),
        "global → preset:review → agent:reviewer/task"
    );
    let loner = SpawnProvider::new().child_agent(&Agent::new("coder", AgentOptions::new("m")));
    assert_eq!(loner.preset(), None);
}

/// A child on its parent's model has its parent's context budget (the
/// deployment's `context_window`); on another model, that model's.
#[test]
fn a_spawned_child_on_its_parents_model_has_its_budget() {
    let budget = ContextBudget::for_model("m", Some(4_000), None);
    let parent = Agent::new("coder", AgentOptions::new("m")).with_budget(budget);
    let child = SpawnProvider::new().named("task").child_agent(&parent);
    assert_eq!(child.budget(), &budget);
    let other = SpawnProvider::new()
        .named("review")
        .with_child(ChildAgentConfig {
            model: Some("gpt-4o".into()),
            ..ChildAgentConfig::default()
        })
        .child_agent(&parent);
    assert_eq!(other.budget().window(), Some(128_000));
}
