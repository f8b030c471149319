//! The system prompt a step sends: persona first, then tool guidance, and
//! nothing else; `<<model>>` and `<<cwd>>` from the agent and its session;
//! a render failure contained in its turn.

use crate::support;

use std::sync::Arc;

use dsh_agent_loop::{
    Agent, AgentOptions, Event, LoopEvent, ModelResponse, ScriptedAdapter, Session, TurnEndReason,
    TurnError,
};
use dsh_system_prompt::{PromptSection, RenderError, render_prompt};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const ECHO_HABIT: &str = "Echo back what the user says before you answer.";

/// An agent whose persona says where it works, so it renders only in a
/// session with a working directory.
fn working_in_the_cwd() -> Agent {
    Agent::new(
        "coder",
        AgentOptions::new("m").with_persona("You work in <<cwd>>."),
    )
}

/// The system prompt of the one request a turn of `agent` in `session`
/// sends, through a loop with no tools.
async fn system_prompt_sent(
    agent: &Agent,
    mut session: Session,
) -> Result<Option<String>, Box<dyn std::error::Error>> {
    let adapter = Arc::new(ScriptedAdapter::new([ModelResponse::text("ok")]));
    let (agent_loop, _installed) = support::agent_loop(Vec::new(), adapter.clone())?;
    agent_loop
        .run_turn(agent, &mut session, "hi", &CancellationToken::new())
        .await?;
    Ok(adapter.requests()[0].system.clone())
}

#[tokio::test]
async fn the_system_prompt_is_the_persona_then_tool_guidance_and_nothing_else() -> TestResult {
    let (agent_loop, _installed, adapter) = support::echo_loop([ModelResponse::text("ok")])?;
    let _habit = agent_loop
        .prompt()
        .section(PromptSection::new("tool:echo", 105, ECHO_HABIT).bound_to_tool("echo"))?;
    // Guidance of a tool nobody installed must not render.
    let _orphan = agent_loop.prompt().section(
        PromptSection::new("tool:missing", 110, "Never shown.").bound_to_tool("missing"),
    )?;

    let agent = Agent::new(
        "coder",
        AgentOptions::new("model-1").with_persona("You are a test agent running <<model>>."),
    );
    let mut session = Session::new();
    support::turn(&agent_loop, &agent, &mut session, "hi").await?;

    let requests = adapter.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].model, "model-1");
    assert_eq!(
        requests[0].system.as_deref(),
        Some(format!("You are a test agent running model-1.\n\n{ECHO_HABIT}").as_str())
    );
    let tools: Vec<&str> = requests[0]
        .tools
        .iter()
        .map(|tool| tool.name.as_str())
        .collect();
    assert_eq!(tools, ["echo"]);
    Ok(())
}

#[tokio::test]
async fn the_persona_section_is_owned_by_this_crate_at_order_zero() -> TestResult {
    let adapter = Arc::new(ScriptedAdapter::default());
    let (agent_loop, _installed) = support::agent_loop(Vec::new(), adapter)?;
    let owner = agent_loop
        .prompt()
        .section_owner("agent:persona")
        .ok_or("section `agent:persona` is not registered")?;
    assert_eq!(owner.krate, "dsh-agent-loop");
    let variables = agent_loop.prompt().variable_names();
    assert!(
        variables.iter().any(|name| *name == "model"),
        "{variables:?}"
    );
    assert!(variables.iter().any(|name| *name == "cwd"), "{variables:?}");

    let agent = Agent::new("a", AgentOptions::new("m").with_persona("P"));
    let assembly = agent_loop.assemble(&agent, &Session::new());
    let persona = assembly
        .sections
        .get("agent:persona")
        .ok_or("no persona section in the assembly")?;
    assert_eq!(persona.order(), 0);
    assert_eq!(persona.text().as_str(), "P");
    Ok(())
}

#[tokio::test]
async fn cwd_resolves_from_the_session() -> TestResult {
    let session = Session::new().with_cwd("/srv/project");
    let system = system_prompt_sent(&working_in_the_cwd(), session).await?;
    assert_eq!(system.as_deref(), Some("You work in /srv/project."));
    Ok(())
}

#[tokio::test]
async fn an_empty_prompt_sends_no_system_message() -> TestResult {
    let agent = Agent::new("plain", AgentOptions::new("m"));
    assert_eq!(system_prompt_sent(&agent, Session::new()).await?, None);
    Ok(())
}

/// A step that cannot render says everything that is wrong with the
/// prompt and the contexts, not the first problem only.
#[tokio::test]
async fn a_render_failure_reports_every_problem_of_prompt_and_contexts() -> TestResult {
    let adapter = Arc::new(ScriptedAdapter::new([]));
    let (agent_loop, _installed) = support::agent_loop(Vec::new(), adapter.clone())?;
    let _todo =
        agent_loop
            .prompt()
            .context(PromptSection::new("test:todo", 10, "Due <<tomorrow>>."))?;
    let agent = Agent::new(
        "coder",
        AgentOptions::new("m").with_persona("You are <<modle>> in <<cwd>>."),
    );
    let error = support::turn(&agent_loop, &agent, &mut Session::new(), "hi")
        .await
        .err()
        .ok_or("the turn should fail to render")?;
    let TurnError::Render { source, .. } = &error else {
        return Err(format!("expected a render error, got {error:?}").into());
    };
    let problems: Vec<(&str, &str)> = source
        .iter()
        .map(|error| match error {
            RenderError::UnknownVariable { site, .. } => ("unknown", site.reference.as_str()),
            RenderError::ValuelessVariable { site, .. } => ("valueless", site.reference.as_str()),
            _ => ("other", error.section()),
        })
        .collect();
    assert_eq!(
        problems,
        [
            ("unknown", "modle"),
            ("valueless", "cwd"),
            ("unknown", "tomorrow")
        ]
    );
    let message = error.to_string();
    assert!(message.contains("`<<modle>>`"), "{message}");
    assert!(message.contains("context `test:todo`"), "{message}");
    assert!(message.contains("no working directory"), "{message}");
    assert!(adapter.requests().is_empty(), "no request may be sent");
    Ok(())
}

#[tokio::test]
async fn a_render_failure_sends_nothing_ends_the_turn_and_the_agent_goes_on() -> TestResult {
    let adapter = Arc::new(ScriptedAdapter::new([ModelResponse::text("fine")]));
    let (agent_loop, _installed) = support::agent_loop(Vec::new(), adapter.clone())?;
    let agent = working_in_the_cwd();

    let mut homeless = Session::new();
    let error = support::turn(&agent_loop, &agent, &mut homeless, "hi")
        .await
        .err()
        .ok_or("the turn should fail to render")?;
    assert!(adapter.requests().is_empty(), "no request may be sent");
    assert_eq!(error.reason(), TurnEndReason::Error);
    let TurnError::Render { source, .. } = &error else {
        return Err(format!("expected a render error, got {error:?}").into());
    };
    assert_eq!(source.len(), 1, "{source:?}");
    assert!(
        matches!(source.first(), RenderError::ValuelessVariable { site, .. }
            if site.section == "agent:persona" && site.reference == "cwd"),
        "{source:?}"
    );
    let message = error.to_string();
    assert!(message.contains("`agent:persona`"), "{message}");
    assert!(message.contains("`cwd`"), "{message}");
    match homeless.events().last() {
        Some(Event::TurnEnd {
            reason: TurnEndReason::Error,
            error: Some(logged),
        }) => assert_eq!(logged, &message),
        other => return Err(format!("expected an error turn end, got {other:?}").into()),
    }

    let mut housed = Session::new().with_cwd("/work");
    let summary = support::turn(&agent_loop, &agent, &mut housed, "hi again").await?;
    assert_eq!(summary.answer, "fine");
    assert_eq!(
        adapter.requests()[0].system.as_deref(),
        Some("You work in /work.")
    );
    Ok(())
}

#[tokio::test]
async fn an_observer_sees_exactly_the_prompt_each_step_sends() -> TestResult {
    let (agent_loop, _installed, adapter) = support::echo_loop([
        ModelResponse::default().with_tool_call(dsh_agent_loop::ToolCall::new(
            "c1",
            "echo",
            r#"{"text": "x"}"#,
        )),
        ModelResponse::text("done"),
    ])?;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent_loop = {
        let seen = Arc::clone(&seen);
        agent_loop.observed_by(Arc::new(move |event: LoopEvent<'_>| {
            if let LoopEvent::Step(step) = event {
                seen.lock()
                    .push((step.step, step.system.to_owned(), step.messages.len()));
            }
        }))
    };
    let agent = Agent::new(
        "coder",
        AgentOptions::new("m").with_persona("I am <<model>>."),
    );
    agent_loop
        .run_turn(&agent, &mut Session::new(), "hi", &CancellationToken::new())
        .await?;

    let seen = seen.lock().clone();
    let requests = adapter.requests();
    assert_eq!(seen.len(), 2);
    for ((step, system, messages), request) in seen.iter().zip(&requests) {
        assert_eq!(
            Some(system.as_str()),
            request.system.as_deref(),
            "step {step}"
        );
        assert_eq!(*messages, request.messages.len(), "step {step}");
    }
    Ok(())
}

#[test]
fn two_agents_assembling_concurrently_each_see_only_their_own_facts() -> TestResult {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()?;
    const TURNS: usize = 40;
    let adapter = Arc::new(ScriptedAdapter::new(
        (0..2 * TURNS).map(|_| ModelResponse::text("ok")),
    ));
    let (agent_loop, _installed) = support::agent_loop(Vec::new(), adapter.clone())?;
    let alpha = Agent::new(
        "alpha",
        AgentOptions::new("model-alpha").with_persona("I am alpha on <<model>> in <<cwd>>."),
    );
    let beta = Agent::new(
        "beta",
        AgentOptions::new("model-beta").with_persona("I am beta on <<model>> in <<cwd>>."),
    );

    runtime.block_on(async {
        let mut turns = Vec::new();
        for turn in 0..TURNS {
            for (agent, cwd) in [(&alpha, "/alpha"), (&beta, "/beta")] {
                let agent_loop = agent_loop.clone();
                let agent = agent.clone();
                turns.push(tokio::spawn(async move {
                    let mut session = Session::new().with_cwd(cwd);
                    agent_loop
                        .run_turn(
                            &agent,
                            &mut session,
                            format!("turn {turn}"),
                            &CancellationToken::new(),
                        )
                        .await
                        .map(|_| ())
                        .map_err(|error| error.to_string())
                }));
            }
        }
        for turn in turns {
            turn.await??;
        }
        Ok::<(), Box<dyn std::error::Error>>(())
    })?;

    let requests = adapter.requests();
    assert_eq!(requests.len(), 2 * TURNS);
    for request in &requests {
        let expected = match request.model.as_str() {
            "model-alpha" => "I am alpha on model-alpha in /alpha.",
            "model-beta" => "I am beta on model-beta in /beta.",
            other => return Err(format!("unexpected model {other}").into()),
        };
        assert_eq!(request.system.as_deref(), Some(expected));
    }

    // The same, straight on the registry from plain threads.
    std::thread::scope(|scope| {
        for (agent, cwd, expected) in [
            (&alpha, "/a", "I am alpha on model-alpha in /a."),
            (&beta, "/b", "I am beta on model-beta in /b."),
        ] {
            let agent_loop = &agent_loop;
            scope.spawn(move || {
                let session = Session::new().with_cwd(cwd);
                for _ in 0..500 {
                    assert_eq!(
                        render_prompt(&agent_loop.assemble(agent, &session)).as_deref(),
                        Ok(expected)
                    );
                }
            });
        }
    });
    Ok(())
}
