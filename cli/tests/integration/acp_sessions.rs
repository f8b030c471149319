//! Recorded sessions over ACP, each request sent to a fresh `dsh acp`
//! process, as an editor does after a restart: `session/load` replays
//! what the live turn sent, `session/list`, `session/resume`,
//! `session/delete`, unknown ids, and a session another process has open.

use agent_client_protocol::v1::schema::{
    DeleteSessionRequest, ListSessionsRequest, LoadSessionRequest, ResumeSessionRequest,
};

use super::*;

/// A turn with thoughts, text, a plan (todo_write), a bash call and a
/// call of a tool the agent lacks (which never runs), then an answer.
const ANSWERS: &str = "[[answers]]\ntext = \"Planning.\"\n\
     thoughts = [\"A plan first.\", \"Then the command.\"]\n\
     [[answers.tool_calls]]\nname = \"todo_write\"\n\
     arguments = { todos = [{ content = \"Say hi\", status = \"in_progress\" }] }\n\
     [[answers]]\ntext = \"Running.\"\n\
     [[answers.tool_calls]]\nname = \"bash\"\narguments = { command = \"echo hi\" }\n\
     [[answers.tool_calls]]\nname = \"read\"\narguments = { path = \"notes.md\" }\n\
     [[answers]]\ntext = \"Done.\"\nthoughts = [\"It ran.\"]\n";

fn updates(seen: Vec<Seen>) -> Vec<SessionUpdate> {
    seen.into_iter()
        .map(|item| match item {
            Seen::Update(_, update) => update,
            Seen::Permission(request) => panic!("no permission was asked: {request:?}"),
        })
        .collect()
}

#[tokio::test]
async fn session_load_replays_exactly_the_updates_of_the_live_turn() {
    let Fixture {
        project,
        config,
        recorded,
        ..
    } = &fixture(ANSWERS, WINDOWED, &["bash", "todo_write"]);
    let (id, live) = with_dsh(config, recorded, Answer::Allow, async |cx, rx| {
        let init = initialize(&cx).await?;
        let capabilities = init.agent_capabilities;
        assert!(capabilities.load_session);
        assert!(capabilities.session_capabilities.list.is_some());
        assert!(capabilities.session_capabilities.resume.is_some());
        assert!(capabilities.session_capabilities.delete.is_some());
        let session = new_session(&cx, project.path()).await?;
        assert_eq!(prompt(&cx, &session, "Say hi.").await?, StopReason::EndTurn);
        Ok((session, updates(drain(rx))))
    })
    .await;
    assert!(live.iter().any(|u| matches!(u, SessionUpdate::Plan(_))));
    // The thoughts reach the editor as `agent_thought_chunk`s, before the
    // answer's text; the replay below sends them in the same place.
    let said: Vec<String> = outline(
        &live
            .iter()
            .map(|update| Seen::Update(id.clone(), update.clone()))
            .collect::<Vec<_>>(),
    );
    let said: Vec<&str> = said
        .iter()
        .map(String::as_str)
        .filter(|line| line.starts_with("thought") || line.starts_with("text"))
        .collect();
    assert_eq!(
        said,
        [
            "thought A plan first.",
            "thought Then the command.",
            "text Planning.",
            "text Running.",
            "thought It ran.",
            "text Done."
        ]
    );
    // The pieces of one answer, thoughts and text, share a `messageId`;
    // the next answer's is another. (The replay below has the same ids.)
    let ids: Vec<(String, &str)> = (live.iter())
        .filter_map(|update| match update {
            SessionUpdate::AgentMessageChunk(chunk) | SessionUpdate::AgentThoughtChunk(chunk) => {
                let ContentBlock::Text(text) = &chunk.content else {
                    return None;
                };
                let id = chunk.message_id.as_ref().expect("a message id");
                Some((id.0.to_string(), text.text.as_str()))
            }
            _ => None,
        })
        .filter(|(_, text)| !text.starts_with('['))
        .collect();
    let answers: Vec<Vec<&str>> = ids
        .chunk_by(|a, b| a.0 == b.0)
        .map(|answer| answer.iter().map(|(_, text)| *text).collect())
        .collect();
    assert_eq!(
        answers,
        [
            vec!["A plan first.", "Then the command.", "Planning."],
            vec!["Running."],
            vec!["It ran.", "Done."]
        ]
    );
    let distinct: std::collections::HashSet<&String> = ids.iter().map(|(id, _)| id).collect();
    assert_eq!(distinct.len(), 3, "{ids:?}");
    assert!(
        live.iter()
            .any(|u| matches!(u, SessionUpdate::SessionInfoUpdate(_))),
        "the session got its title: {live:?}"
    );
    // Each call carries its tool's name beside its title.
    let names: Vec<Option<&str>> = (live.iter())
        .filter_map(|update| match update {
            SessionUpdate::ToolCall(call) => Some(call.name.as_deref()),
            _ => None,
        })
        .collect();
    assert_eq!(names, [Some("todo_write"), Some("bash"), Some("read")]);
    assert!(
        live.iter()
            .any(|u| matches!(u, SessionUpdate::ToolCallUpdate(update)
            if update.fields.status == Some(ToolCallStatus::Failed))),
        "the call of the tool the agent lacks failed: {live:?}"
    );

    // The editor restarted: a new process loads the session.
    let replayed = with_dsh(config, recorded, Answer::Allow, async |cx, rx| {
        initialize(&cx).await?;
        cx.send_request(LoadSessionRequest::new(id.clone(), project.path()))
            .block_task()
            .await?;
        Ok(updates(until_commands(rx).await))
    })
    .await;
    // The session's commands are announced after the answer to
    // `session/new` and to `session/load` alike; the turn's updates are
    // compared without them.
    let commands = |updates: &[SessionUpdate]| {
        updates
            .iter()
            .filter(|u| matches!(u, SessionUpdate::AvailableCommandsUpdate(_)))
            .count()
    };
    assert_eq!((commands(&live), commands(&replayed)), (1, 1));
    let without_commands = |updates: Vec<SessionUpdate>| -> Vec<SessionUpdate> {
        updates
            .into_iter()
            .filter(|u| !matches!(u, SessionUpdate::AvailableCommandsUpdate(_)))
            .collect()
    };
    let (live, replayed) = (without_commands(live), without_commands(replayed));
    let (first, rest) = replayed.split_first().expect("updates");
    assert!(
        matches!(first, SessionUpdate::UserMessageChunk(chunk)
            if chunk.content == ContentBlock::from("Say hi.")),
        "the user's message comes first: {first:?}"
    );
    // The one rule for usage: the store keeps none, so the live turn's
    // `usage_update`s (one per answer) are not replayed where they were;
    // the load ends with one, counted.
    let usage = |u: &&SessionUpdate| matches!(u, SessionUpdate::UsageUpdate(_));
    assert_eq!(live.iter().filter(usage).count(), 3, "{live:?}");
    let (last, rest) = rest.split_last().expect("updates");
    assert!(usage(&last), "the load ends with the usage: {last:?}");
    let live: Vec<_> = live.iter().filter(|u| !usage(u)).cloned().collect();
    assert_eq!(rest, live.as_slice(), "the live turn's updates, exactly");
}

#[tokio::test]
async fn a_resumed_session_continues_with_its_history() {
    let fixture = fixture("[[answers]]\ntext = \"one\"\n", "", &["bash"]);
    let Fixture {
        project,
        config,
        recorded,
        ..
    } = &fixture;
    let id = fixture
        .in_session(Answer::Allow, async |cx, session, _rx| {
            prompt(&cx, &session, "first").await?;
            Ok(session)
        })
        .await;
    std::fs::write(
        Path::new(config).with_file_name("answers.toml"),
        "[[answers]]\ntext = \"two\"\n",
    )
    .unwrap();
    let replayed = with_dsh(config, recorded, Answer::Allow, async |cx, rx| {
        initialize(&cx).await?;
        cx.send_request(ResumeSessionRequest::new(id.clone(), project.path()))
            .block_task()
            .await?;
        prompt(&cx, &id, "second").await?;
        Ok(outline(&drain(rx)))
    })
    .await;
    assert_eq!(
        replayed
            .iter()
            .filter(|line| !line.starts_with("other"))
            .collect::<Vec<_>>(),
        ["text two"],
        "resume replays nothing (it announces the session's commands)"
    );
    let requests = common::recorded_requests(recorded);
    let texts: Vec<&str> = requests[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["first", "one", "second"]);
}

/// `dsh acp --config config --trace trace`, as an editor starts it.
fn traced(config: &str, trace: &Path) -> agent_client_protocol::AcpAgent {
    let trace = trace.display().to_string();
    common::acp_agent(&["acp", "--config", config, "--trace", &trace])
}

#[tokio::test]
async fn a_resumed_sessions_first_request_compares_with_the_one_it_recorded() {
    let answers = "[[answers]]\ntext = \"one\"\n[[answers]]\ntext = \"two\"\n";
    let Fixture {
        project, config, ..
    } = &fixture(answers, "", &["bash"]);
    let trace = project.path().join("trace.jsonl");
    let id = with_agent(traced(config, &trace), Answer::Allow, async |cx, _rx| {
        initialize(&cx).await?;
        let session = new_session(&cx, project.path()).await?;
        prompt(&cx, &session, "first").await?;
        Ok(session)
    })
    .await;
    let resumed = with_agent(traced(config, &trace), Answer::Allow, async |cx, _rx| {
        initialize(&cx).await?;
        cx.send_request(ResumeSessionRequest::new(id.clone(), project.path()))
            .block_task()
            .await?;
        prompt(&cx, &id, "second").await?;
        Ok(())
    });
    resumed.await;
    let line: serde_json::Value = std::fs::read_to_string(&trace)
        .expect("the second process's trace")
        .lines()
        .next()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .expect("a line");
    // The store kept the first process's prefix: this process's first
    // request shares it, and nothing broke (the deployment is the same).
    assert_eq!(line["session"], id.0.to_string());
    assert!(line["shared_prefix_bytes"].as_u64() > Some(0), "{line}");
    assert_eq!(line["prefix_broke_in"], serde_json::Value::Null, "{line}");
}

#[tokio::test]
async fn sessions_are_listed_by_cwd_a_page_at_a_time_and_deleted() {
    let fixture = &fixture("answers = []\n", "", &["bash"]);
    let project = &fixture.project;
    let elsewhere = tempfile::tempdir().unwrap();
    fixture
        .client(Answer::Allow, async |cx, _rx| {
            let other = new_session(&cx, elsewhere.path()).await?;
            // Older by at least a millisecond than every session after it.
            tokio::time::sleep(Duration::from_millis(3)).await;
            let mut ids = Vec::new();
            for _ in 0..51 {
                ids.push(new_session(&cx, project.path()).await?);
            }
            let list = |cursor: Option<String>| {
                let mut request = ListSessionsRequest::new();
                request.cwd = Some(project.path().to_owned());
                request.cursor = cursor;
                cx.send_request(request).block_task()
            };
            let first = list(None).await?;
            assert_eq!(first.sessions.len(), 50);
            assert!(first.sessions.iter().all(|s| s.cwd == project.path()));
            assert!(first.sessions.iter().all(|s| s.updated_at.is_some()));
            let second = list(first.next_cursor.clone()).await?;
            assert_eq!(second.sessions.len(), 1);
            assert_eq!(second.next_cursor, None);
            let mut listed: Vec<_> = first
                .sessions
                .iter()
                .chain(&second.sessions)
                .map(|s| s.session_id.0.to_string())
                .collect();
            listed.sort();
            let mut ids: Vec<String> = ids.iter().map(|id| id.0.to_string()).collect();
            ids.sort();
            assert_eq!(listed, ids, "every session once, none of the other cwd");
            // Unfiltered, the oldest (the other cwd's) is on the second page.
            let all = cx
                .send_request(ListSessionsRequest::new())
                .block_task()
                .await?;
            assert!(!all.sessions.iter().any(|s| s.session_id == other));
            let rest = cx
                .send_request(ListSessionsRequest::new().cursor(all.next_cursor))
                .block_task()
                .await?;
            assert_eq!(rest.sessions.len(), 2);
            assert_eq!(rest.sessions[1].session_id, other, "the oldest last");

            cx.send_request(DeleteSessionRequest::new(other.clone()))
                .block_task()
                .await?;
            let error = cx
                .send_request(LoadSessionRequest::new(other.clone(), elsewhere.path()))
                .block_task()
                .await
                .expect_err("a deleted session is gone");
            assert_error(&error, -32002, |message| {
                message.contains(&other.0.to_string())
            });
            Ok(())
        })
        .await;
}

#[tokio::test]
async fn an_unknown_session_is_an_error_naming_it() {
    let fixture = &fixture("answers = []\n", "", &["bash"]);
    let project = &fixture.project;
    fixture
        .client(Answer::Allow, async |cx, _rx| {
            for error in [
                cx.send_request(LoadSessionRequest::new("no-such-session", project.path()))
                    .block_task()
                    .await
                    .expect_err("unknown"),
                cx.send_request(ResumeSessionRequest::new("no-such-session", project.path()))
                    .block_task()
                    .await
                    .expect_err("unknown"),
                cx.send_request(DeleteSessionRequest::new("no-such-session"))
                    .block_task()
                    .await
                    .expect_err("unknown"),
            ] {
                assert_error(&error, -32002, |message| {
                    message.contains("`no-such-session`")
                });
            }
            Ok(())
        })
        .await;
}

/// Two editors, one session: the second process is refused while the
/// first has it open, and the first goes on undisturbed.
#[tokio::test]
async fn a_session_open_in_another_process_is_refused() {
    let fixture = fixture(
        "[[answers]]\ntext = \"one\"\n[[answers]]\ntext = \"two\"\n",
        "",
        &["bash"],
    );
    let Fixture {
        project,
        config,
        recorded,
        ..
    } = &fixture;
    with_dsh(config, recorded, Answer::Allow, async |cx, rx| {
        initialize(&cx).await?;
        let session = new_session(&cx, project.path()).await?;
        prompt(&cx, &session, "first").await?;
        let other_recorded = recorded.with_file_name("other.jsonl");
        let refused = with_dsh(config, &other_recorded, Answer::Allow, async |other, _| {
            initialize(&other).await?;
            let load = other
                .send_request(LoadSessionRequest::new(session.clone(), project.path()))
                .block_task()
                .await;
            let delete = other
                .send_request(DeleteSessionRequest::new(session.clone()))
                .block_task()
                .await;
            Ok((load.map(|_| ()), delete.map(|_| ())))
        })
        .await;
        for error in [refused.0.expect_err("load"), refused.1.expect_err("delete")] {
            assert!(
                error.message.contains("open in another dsh process"),
                "{}",
                error.message
            );
        }
        drain(rx);
        prompt(&cx, &session, "second").await?;
        assert_eq!(outline(&drain(rx)), ["text two"], "undisturbed");
        Ok(())
    })
    .await;
}

#[test]
fn no_store_advertises_and_serves_no_sessions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = deployment(dir.path(), "answers = []\n", "", &["bash"]);
    let mut child = common::spawn(&["acp", "--config", &config, "--no-store"]);
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut next = || -> Value {
        let line = lines.next().expect("a line").expect("readable");
        serde_json::from_str(&line).expect("JSON")
    };
    let request = |id: u32, method: &str, params: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
    };
    send(
        &mut stdin,
        &request(0, "initialize", json!({"protocolVersion": 1})),
    );
    let init = next();
    assert_eq!(
        init["result"]["agentCapabilities"]["loadSession"], false,
        "{init}"
    );
    send(&mut stdin, &request(1, "session/list", json!({})));
    let list = next();
    assert!(
        list["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("records no sessions")),
        "{list}"
    );
    drop(stdin);
    child.wait().expect("dsh acp ends");
    assert!(!dir.path().join("sessions.db").exists());
}

/// A `session/new` refused (here, an empty `systemPrompt`) leaves no
/// session in the store.
#[tokio::test]
async fn a_refused_new_session_is_not_recorded() {
    let fixture = &fixture("answers = []\n", "", &["bash"]);
    let project = &fixture.project;
    fixture
        .client(Answer::Allow, async |cx, _rx| {
            let mut request = NewSessionRequest::new(project.path());
            request.system_prompt = Some(agent_client_protocol::v1::schema::SystemPrompt::new(
                Vec::new(),
            ));
            let refused = cx.send_request(request).block_task().await;
            assert!(refused.is_err(), "an empty systemPrompt is refused");
            let listed = cx
                .send_request(ListSessionsRequest::new())
                .block_task()
                .await?;
            assert!(listed.sessions.is_empty(), "{:?}", listed.sessions);
            Ok(())
        })
        .await;
}

#[tokio::test]
async fn a_loaded_session_keeps_its_mode_model_and_always_answers() {
    use agent_client_protocol::v1::schema::{
        SessionConfigOptionCategory as Category, SetSessionConfigOptionRequest,
        SetSessionModeRequest,
    };
    let call = "[[answers]]\n[[answers.tool_calls]]\nname = \"bash\"\n\
                arguments = { command = \"echo hi\" }\n";
    let Fixture {
        project,
        config,
        recorded,
        ..
    } = &fixture(
        &format!("{call}[[answers]]\ntext = \"one\"\n{call}[[answers]]\ntext = \"two\"\n"),
        "models = [\"scripted\", \"scripted-large\"]\n[sessions]\npath = \"sessions.db\"\n\
         [tools.bash]\npermission = \"ask\"\n",
        &["bash"],
    );
    let id = with_dsh(config, recorded, Answer::AllowAlways, async |cx, rx| {
        initialize(&cx).await?;
        let session = new_session(&cx, project.path()).await?;
        cx.send_request(SetSessionModeRequest::new(session.clone(), "ask"))
            .block_task()
            .await?;
        let model = SetSessionConfigOptionRequest::new(session.clone(), "model", "scripted-large");
        cx.send_request(model).block_task().await?;
        prompt(&cx, &session, "first").await?;
        let asked = drain(rx)
            .iter()
            .filter(|item| matches!(item, Seen::Permission(_)))
            .count();
        assert_eq!(asked, 1, "asked, and answered always");
        Ok(session)
    })
    .await;

    // Another process: the choices hold, and the same command runs unasked.
    let (options, seen) = with_dsh(config, recorded, Answer::Reject, async |cx, rx| {
        initialize(&cx).await?;
        let loaded = cx
            .send_request(LoadSessionRequest::new(id.clone(), project.path()))
            .block_task()
            .await?;
        drain(rx);
        prompt(&cx, &id, "second").await?;
        Ok((loaded.config_options.unwrap_or_default(), drain(rx)))
    })
    .await;
    assert_eq!(option_of(&options, Category::Mode).1, "ask");
    assert_eq!(option_of(&options, Category::Model).1, "scripted-large");
    assert!(
        !seen.iter().any(|item| matches!(item, Seen::Permission(_))),
        "the always answer held: {seen:#?}"
    );
    let requests = common::recorded_requests(recorded);
    assert_eq!(
        requests.last().expect("a request")["model"],
        "scripted-large"
    );
}

#[tokio::test]
async fn session_load_replays_the_diffs_of_write_and_edit() {
    let project = tempfile::tempdir().expect("project");
    let file = std::fs::canonicalize(project.path())
        .expect("canonical")
        .join("notes.md");
    let lines: String = (1..=12).map(|n| format!("line {n}\n")).collect();
    let answers = format!(
        "[[answers]]\ntext = \"Writing.\"\n\
         [[answers.tool_calls]]\nname = \"write\"\n\
         arguments = {{ file_path = {file:?}, content = {lines:?} }}\n\
         [[answers]]\ntext = \"Editing.\"\n\
         [[answers.tool_calls]]\nname = \"edit\"\n\
         arguments = {{ file_path = {file:?}, old_string = \"line 6\\n\", new_string = \"six\\n\" }}\n\
         [[answers]]\ntext = \"Done.\"\n"
    );
    let Fixture {
        config, recorded, ..
    } = &fixture(&answers, "", &["write", "edit"]);
    let only_updates = |seen: Vec<Seen>| -> Vec<SessionUpdate> {
        seen.into_iter()
            .filter_map(|item| match item {
                Seen::Update(_, SessionUpdate::AvailableCommandsUpdate(_)) => None,
                Seen::Update(_, update) => Some(update),
                Seen::Permission(_) => None,
            })
            .collect()
    };
    let (id, live) = with_dsh(config, recorded, Answer::Allow, async |cx, rx| {
        initialize(&cx).await?;
        let session = new_session(&cx, project.path()).await?;
        assert_eq!(prompt(&cx, &session, "Note.").await?, StopReason::EndTurn);
        Ok((session, only_updates(drain(rx))))
    })
    .await;
    let diffs: Vec<(Option<String>, String)> = live
        .iter()
        .filter_map(|update| match update {
            SessionUpdate::ToolCallUpdate(update) if update.fields.status.is_none() => {
                update.fields.content.as_ref()
            }
            _ => None,
        })
        .flatten()
        .filter_map(|content| match content {
            ToolCallContent::Diff(diff) => Some((diff.old_text.clone(), diff.new_text.clone())),
            _ => None,
        })
        .collect();
    // The new file whole; the edit's region, three lines around it.
    let region = |six: &str| format!("line 3\nline 4\nline 5\n{six}line 7\nline 8\nline 9\n");
    assert_eq!(
        diffs,
        [
            (None, lines.clone()),
            (Some(region("line 6\n")), region("six\n"))
        ],
        "{live:#?}"
    );

    // Another process loads it: the same updates, diffs included.
    std::fs::write(&file, "changed since\n").expect("write");
    let replayed = with_dsh(config, recorded, Answer::Allow, async |cx, rx| {
        initialize(&cx).await?;
        cx.send_request(LoadSessionRequest::new(id.clone(), project.path()))
            .block_task()
            .await?;
        Ok(only_updates(drain(rx)))
    })
    .await;
    let (first, rest) = replayed.split_first().expect("updates");
    assert!(
        matches!(first, SessionUpdate::UserMessageChunk(_)),
        "{first:?}"
    );
    assert_eq!(rest, live.as_slice(), "the live turn's updates, exactly");
}

#[tokio::test]
async fn a_path_rule_fires_once_in_the_editor_and_a_loaded_session_is_not_sent_it_again() {
    let read = |path: &str| {
        format!(
            "[[answers]]\n[[answers.tool_calls]]\nname = \"read\"\n\
             arguments = {{ file_path = {path:?} }}\n[[answers]]\ntext = \"Read.\"\n"
        )
    };
    let Fixture {
        project,
        config,
        recorded,
        ..
    } = &fixture(&read("src/lib.rs"), "", &["read"]);
    let root = project.path();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join(".cursor/rules")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join(".cursor/rules/rust.mdc"),
        "---\nglobs: \"*.rs\"\n---\nRUST RULE: errors are typed.\n",
    )
    .unwrap();
    std::fs::write(root.join("src/lib.rs"), "pub fn lib() {}\n").unwrap();
    std::fs::write(root.join("src/other.rs"), "pub fn other() {}\n").unwrap();
    let said = "[rule `.cursor/rules/rust.mdc` applied: `src/lib.rs` matches `*.rs`]";
    let (id, live) = with_dsh(config, recorded, Answer::Allow, async |cx, rx| {
        initialize(&cx).await?;
        let session = new_session(&cx, root).await?;
        prompt(&cx, &session, "Read lib.").await?;
        Ok((session, outline(&drain(rx))))
    })
    .await;
    assert_eq!(
        live.iter().filter(|line| line.contains(said)).count(),
        1,
        "{live:#?}"
    );
    std::fs::write(
        Path::new(config).with_file_name("answers.toml"),
        read("src/other.rs"),
    )
    .unwrap();
    let replayed = with_dsh(config, recorded, Answer::Allow, async |cx, rx| {
        initialize(&cx).await?;
        cx.send_request(LoadSessionRequest::new(id.clone(), root))
            .block_task()
            .await?;
        let replayed = outline(&until_commands(rx).await);
        prompt(&cx, &id, "Read other.").await?;
        Ok(replayed)
    })
    .await;
    assert_eq!(
        replayed.iter().filter(|line| line.contains(said)).count(),
        1,
        "the load shows the rule that fired: {replayed:#?}"
    );
    // The loaded session's requests carry the rule once: from the history,
    // never again for `src/other.rs`.
    let requests = common::recorded_requests(recorded);
    let last = requests.last().expect("requests");
    let texts: String = (last["messages"].as_array().unwrap().iter())
        .map(|message| message["text"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(texts.matches("RUST RULE").count(), 1, "{texts}");
    assert!(texts.contains("pub fn other()"), "{texts}");
    assert!(!last["system"].as_str().unwrap().contains("RUST RULE"));
}

#[tokio::test]
async fn an_editor_that_shows_notices_gets_dshs_own_lines_as_notices() {
    use agent_client_protocol::v1::schema::{
        ClientCapabilities, ClientSessionCapabilities, NoticeCapabilities, NoticeSeverity,
    };
    let answers = "[[answers]]\n[[answers.tool_calls]]\nname = \"read\"\n\
                   arguments = { file_path = \"lib.rs\" }\n[[answers]]\ntext = \"Read.\"\n";
    let fixture = fixture(answers, "", &["read"]);
    let root = fixture.project.path();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join(".claude/rules")).unwrap();
    std::fs::write(
        root.join(".claude/rules/rust.md"),
        "---\npaths: [\"*.rs\"]\n---\nRUST RULE.\n",
    )
    .unwrap();
    std::fs::write(root.join("lib.rs"), "pub fn lib() {}\n").unwrap();
    let seen = with_dsh(
        &fixture.config,
        &fixture.recorded,
        Answer::Allow,
        async |cx, rx| {
            let capabilities = ClientCapabilities::new()
                .session(ClientSessionCapabilities::new().notices(NoticeCapabilities::new()));
            let request =
                InitializeRequest::new(ProtocolVersion::V1).client_capabilities(capabilities);
            cx.send_request(request).block_task().await?;
            let session = new_session(&cx, root).await?;
            prompt(&cx, &session, "Read it.").await?;
            Ok(updates(drain(rx)))
        },
    )
    .await;
    let notices: Vec<(&NoticeSeverity, &str)> = (seen.iter())
        .filter_map(|update| match update {
            SessionUpdate::Notice(notice) => Some((&notice.severity, notice.title.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        notices,
        [(
            &NoticeSeverity::Info,
            "rule `.claude/rules/rust.md` applied: `lib.rs` matches `*.rs`"
        )]
    );
    assert!(
        !format!("{seen:?}").contains("[rule"),
        "no bracketed text beside the notice: {seen:?}"
    );
}

#[tokio::test]
async fn an_editor_that_shows_compactions_gets_one_update_with_the_summary_live_and_on_load() {
    use agent_client_protocol::v1::schema::{
        ClientCapabilities, ClientSessionCapabilities, CompactionCapabilities, CompactionStatus,
    };
    let answers = "[[answers]]\ntext = \"one\"\n[[answers]]\ntext = \"SUMMARY of one\"\n";
    let Fixture {
        project,
        config,
        recorded,
        ..
    } = &fixture(answers, "", &["bash"]);
    let initialize = async |cx: &ConnectionTo<Agent>| {
        let capabilities = ClientCapabilities::new()
            .session(ClientSessionCapabilities::new().compaction(CompactionCapabilities::new()));
        let request = InitializeRequest::new(ProtocolVersion::V1).client_capabilities(capabilities);
        cx.send_request(request).block_task().await.map(|_| ())
    };
    let compactions = |seen: Vec<Seen>| -> Vec<(String, CompactionStatus, String)> {
        (updates(seen).into_iter())
            .filter_map(|update| match update {
                SessionUpdate::CompactionUpdate(update) => {
                    let summary = format!("{:?}", update.summary);
                    Some((update.compaction_id.0.to_string(), update.status, summary))
                }
                _ => None,
            })
            .collect()
    };
    let (id, live) = with_dsh(config, recorded, Answer::Allow, async |cx, rx| {
        initialize(&cx).await?;
        let session = new_session(&cx, project.path()).await?;
        prompt(&cx, &session, "first").await?;
        prompt(&cx, &session, "/compact").await?;
        Ok((session, compactions(drain(rx))))
    })
    .await;
    let [(compaction, status, summary)] = live.as_slice() else {
        panic!("one compaction update: {live:?}");
    };
    assert_eq!(status, &CompactionStatus::Completed);
    assert!(summary.contains("SUMMARY of one"), "{summary}");
    let replayed = with_dsh(config, recorded, Answer::Allow, async |cx, rx| {
        initialize(&cx).await?;
        cx.send_request(LoadSessionRequest::new(id.clone(), project.path()))
            .block_task()
            .await?;
        Ok(compactions(until_commands(rx).await))
    })
    .await;
    assert_eq!(replayed, live, "the load shows it again, with its id");
    assert!(compaction.starts_with(&format!("{id}/")), "{compaction}");
}

#[tokio::test]
async fn a_fork_over_acp_starts_on_its_parents_prefix_byte_for_byte() {
    use agent_client_protocol::v1::schema::ForkSessionRequest;
    let answers = "[[answers]]\ntext = \"one\"\n[[answers]]\ntext = \"two\"\n";
    let Fixture {
        project,
        config,
        recorded,
        ..
    } = &fixture(answers, "", &["bash"]);
    let (parent, fork, capabilities) =
        with_dsh(config, recorded, Answer::Allow, async |cx, _rx| {
            let init = initialize(&cx).await?;
            let parent = new_session(&cx, project.path()).await?;
            prompt(&cx, &parent, "first").await?;
            let request = ForkSessionRequest::new(parent.clone(), project.path());
            let fork = cx.send_request(request).block_task().await?.session_id;
            prompt(&cx, &fork, "second").await?;
            Ok((parent, fork, init.agent_capabilities.session_capabilities))
        })
        .await;
    assert!(capabilities.fork.is_some());
    assert_ne!(parent, fork);
    let requests = common::recorded_requests(recorded);
    let (first, forked) = (&requests[0], &requests[1]);
    assert_eq!(forked["system"], first["system"]);
    assert_eq!(forked["tools"], first["tools"]);
    let texts: Vec<&str> = (forked["messages"].as_array().unwrap().iter())
        .map(|message| message["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["first", "one", "second"]);
    // An unknown parent is the protocol's not-found, naming it.
    let error = with_dsh(config, recorded, Answer::Allow, async |cx, _rx| {
        initialize(&cx).await?;
        let request = ForkSessionRequest::new("no-such-session", project.path());
        Ok(cx
            .send_request(request)
            .block_task()
            .await
            .expect_err("no parent"))
    })
    .await;
    assert_error(&error, -32002, |message| {
        message.contains("no-such-session")
    });
}

/// `_meta.messageId` on `session/fork` forks at that message: the fork's
/// history is the parent's up to the answer it names. An id of another
/// session, or a place no message starts at, is refused, naming it.
#[tokio::test]
async fn a_fork_at_a_message_id_takes_the_history_up_to_that_answer() {
    use agent_client_protocol::v1::schema::ForkSessionRequest;
    let answers = "[[answers]]\ntext = \"one\"\n[[answers]]\ntext = \"two\"\n\
                   [[answers]]\ntext = \"three\"\n";
    let Fixture {
        project,
        config,
        recorded,
        ..
    } = &fixture(answers, "", &["bash"]);
    let fork_at = |parent: &SessionId, id: &str| {
        let meta = serde_json::json!({ "messageId": id });
        ForkSessionRequest::new(parent.clone(), project.path())
            .meta(meta.as_object().cloned().expect("an object"))
    };
    let errors = with_dsh(config, recorded, Answer::Allow, async |cx, rx| {
        initialize(&cx).await?;
        let parent = new_session(&cx, project.path()).await?;
        prompt(&cx, &parent, "first").await?;
        let one = (drain(rx).into_iter())
            .find_map(|seen| match seen {
                Seen::Update(_, SessionUpdate::AgentMessageChunk(chunk)) => chunk.message_id,
                _ => None,
            })
            .expect("the answer's id");
        prompt(&cx, &parent, "second").await?;
        let request = fork_at(&parent, &one.0);
        let fork = cx.send_request(request).block_task().await?.session_id;
        prompt(&cx, &fork, "third").await?;
        let mut errors = Vec::new();
        for id in ["another-session/1".to_owned(), format!("{}/999", parent.0)] {
            let request = fork_at(&parent, &id);
            errors.push(cx.send_request(request).block_task().await.expect_err(&id));
        }
        Ok(errors)
    })
    .await;
    let requests = common::recorded_requests(recorded);
    let texts: Vec<&str> = (requests[2]["messages"].as_array().unwrap().iter())
        .map(|message| message["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["first", "one", "third"]);
    assert_eq!(requests[2]["system"], requests[1]["system"]);
    assert_error(&errors[0], -32602, |message| {
        message.contains("another-session/1") && message.contains("no message id of session")
    });
    assert!(errors[1].message.contains("/999"), "{:?}", errors[1]);
    assert!(errors[1].message.contains("no message"), "{:?}", errors[1]);
}
