//! A session at the library's boundary, in-process: the scripted adapter
//! answers, a scripted person answers questions, a real store records.
//! What is tested here is the session's rule, whatever front end drives
//! it (the terminal and the editor both run on it).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_agent_loop::async_trait;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::host::{Host, HostOptions};
use crate::policy::always::tests::CHAINED_ONTO_LS;
use crate::session::{
    Answer, HostedSession, Knob, OpenError, Opening, Person, Prompted, Question, Reach,
    SessionEvent, Sessions,
};

/// Answers each question with the next of its answers (then no), and
/// keeps what it was asked and shown.
#[derive(Default)]
struct ScriptedPerson {
    answers: Mutex<VecDeque<Answer>>,
    /// The commands (or tools) of the calls it was asked about, and the
    /// "always" label each offered.
    asked: Mutex<Vec<(String, String)>>,
    shown: Mutex<Vec<SessionEvent>>,
}

impl ScriptedPerson {
    fn answering(answers: impl IntoIterator<Item = Answer>) -> Arc<Self> {
        Arc::new(Self {
            answers: Mutex::new(answers.into_iter().collect()),
            ..Self::default()
        })
    }

    fn asked(&self) -> Vec<String> {
        self.asked
            .lock()
            .iter()
            .map(|(asked, _)| asked.clone())
            .collect()
    }
}

#[async_trait]
impl Person for ScriptedPerson {
    fn show(&self, event: SessionEvent) {
        self.shown.lock().push(event);
    }

    async fn ask(&self, question: Question<'_>, _cancel: &CancellationToken) -> Answer {
        if let Question::Call { call, always, .. } = question {
            let command = call.input["command"].as_str().unwrap_or(&call.tool);
            self.asked
                .lock()
                .push((command.to_owned(), always.to_owned()));
        }
        self.answers.lock().pop_front().unwrap_or(Answer::No)
    }
}

/// A deployment in `dir` whose scripted model makes one `bash` call for
/// each of `commands`, in turn, and then answers; `bash` asks first, and
/// sessions are recorded in `dir`.
fn deployment(dir: &Path, commands: &[&str]) -> PathBuf {
    let mut answers = String::new();
    for command in commands {
        let arguments = serde_json::json!({ "command": command }).to_string();
        answers.push_str(&format!(
            "[[answers]]\n[[answers.tool_calls]]\nname = \"bash\"\narguments = {arguments:?}\n"
        ));
    }
    answers.push_str("[[answers]]\ntext = \"done\"\n");
    std::fs::write(dir.join("answers.toml"), answers).expect("written");
    let config = dir.join("dsh.toml");
    std::fs::write(
        &config,
        "[adapter.scripted]\nanswers = \"answers.toml\"\nmodel = \"m\"\nmodels = [\"m\", \"m2\"]\n\
         [sessions]\npath = \"sessions.db\"\n\
         [tools.bash]\npermission = \"ask\"\n\
         [[agents]]\nid = \"a\"\ntools = [\"bash\"]\npersona = \"A test agent in <<cwd>>.\"\n",
    )
    .expect("written");
    config
}

/// The host of `config`, checked in `cwd`.
fn host(config: &Path, cwd: &Path) -> Arc<Host> {
    let options = HostOptions {
        config: Some(config.to_owned()),
        ..HostOptions::default()
    };
    Arc::new(Host::load(&options, cwd).unwrap_or_else(|problems| panic!("{problems:?}")))
}

/// Opens a session of `host` for `person`, as a terminal would: one
/// session, every question its.
fn open(
    host: &Arc<Host>,
    opening: Opening,
    person: Arc<ScriptedPerson>,
) -> Result<Arc<HostedSession>, OpenError> {
    let reach = Reach {
        samples: true,
        only_session: true,
        ..Reach::default()
    };
    let (session, _notes) = Sessions::new(Arc::clone(host), reach).open(opening, person)?;
    Ok(session)
}

/// Runs one prompt of `session` on the host's runtime.
fn prompt(host: &Host, session: &Arc<HostedSession>, text: &str) -> Prompted {
    let outcome = host.serve(async |_started, _ending| {
        let mut attached = crate::session::Attachments::default();
        let cancel = CancellationToken::new();
        let prompted = session.prompt(text, &mut attached, &cancel).await;
        prompted.map_err(|error| vec![crate::Problem::new(error.to_string())])
    });
    outcome.unwrap_or_else(|problems| panic!("{problems:?}"))
}

#[test]
fn always_on_ls_covers_ls_and_asks_again_for_each_chained_form() {
    let dir = tempfile::tempdir().expect("a directory");
    let mut commands = vec!["ls -la", "ls src"];
    commands.extend(CHAINED_ONTO_LS);
    let config = deployment(dir.path(), &commands);
    let host = host(&config, dir.path());
    let person = ScriptedPerson::answering([Answer::Always]);
    let session = open(&host, Opening::new(dir.path()), person.clone()).expect("opened");
    prompt(&host, &session, "go");
    let mut expected = vec!["ls -la".to_owned()];
    expected.extend(CHAINED_ONTO_LS.iter().map(|chained| (*chained).to_owned()));
    assert_eq!(
        person.asked(),
        expected,
        "`ls src` ran unasked, every chain asked"
    );
    let label = &person.asked.lock()[0].1;
    assert!(
        label.contains("`ls`"),
        "the label says what is covered: {label}"
    );
}

#[test]
fn always_on_a_script_does_not_cover_the_interpreter_given_code() {
    let dir = tempfile::tempdir().expect("a directory");
    let commands = [
        "python3 build.py",
        "python3 build.py",
        "python3 -c 'print(1)'",
    ];
    let config = deployment(dir.path(), &commands);
    let host = host(&config, dir.path());
    let person = ScriptedPerson::answering([Answer::Always]);
    let session = open(&host, Opening::new(dir.path()), person.clone()).expect("opened");
    prompt(&host, &session, "go");
    assert_eq!(
        person.asked(),
        ["python3 build.py", "python3 -c 'print(1)'"]
    );
}

#[test]
fn a_continued_session_keeps_its_mode_model_and_answers() {
    let dir = tempfile::tempdir().expect("a directory");
    let config = deployment(dir.path(), &["cargo test", "cargo test --workspace"]);
    let first = host(&config, dir.path());
    let person = ScriptedPerson::answering([Answer::Always]);
    let session = open(&first, Opening::new(dir.path()), person.clone()).expect("opened");
    session.steer(Knob::Mode, "ask").expect("a mode");
    session.steer(Knob::Model, "m2").expect("a model");
    prompt(&first, &session, "go");
    assert_eq!(person.asked(), ["cargo test"]);
    let id = session.id().to_string();
    drop(session);
    // `--continue`, then `--resume ID`: each a new process would be.
    for opening in [Opening::latest(dir.path()), Opening::recorded(&id, None)] {
        let config = deployment(dir.path(), &["cargo test --lib", "rm -rf target"]);
        let host = host(&config, dir.path());
        let again = ScriptedPerson::answering([Answer::Once]);
        let resumed = open(&host, opening, again.clone()).expect("resumed");
        let steering = resumed.steering();
        assert_eq!((steering.mode.id, steering.model.as_str()), ("ask", "m2"));
        prompt(&host, &resumed, "again");
        assert_eq!(
            again.asked(),
            ["rm -rf target"],
            "`cargo test` is remembered"
        );
        drop(resumed);
    }
}

#[test]
fn a_session_shows_its_turn_as_events_a_front_end_renders() {
    let dir = tempfile::tempdir().expect("a directory");
    let config = deployment(dir.path(), &["echo hi"]);
    let host = host(&config, dir.path());
    let person = ScriptedPerson::answering([Answer::Once]);
    let session = open(&host, Opening::new(dir.path()), person.clone()).expect("opened");
    assert_eq!(
        prompt(&host, &session, "go"),
        Prompted::Turn(Default::default())
    );
    let kinds: Vec<String> = (person.shown.lock().iter())
        .map(|event| serde_json::to_value(event).expect("serializes")["type"].to_string())
        .collect();
    for kind in [
        "call_made",
        "call_running",
        "call_ended",
        "text",
        "turn_ended",
    ] {
        assert!(kinds.contains(&format!("\"{kind}\"")), "{kind}: {kinds:?}");
    }
    let ended = (person.shown.lock().iter()).find_map(|event| match event {
        SessionEvent::CallEnded(end) => end.command.clone(),
        _ => None,
    });
    let ended = ended.expect("the command's end, as data");
    assert_eq!((ended.output.as_str(), ended.exit.code), ("hi\n", Some(0)));
}

#[test]
fn always_reject_holds_in_a_mode_that_asks_nothing() {
    let dir = tempfile::tempdir().expect("a directory");
    let config = deployment(dir.path(), &["rm -rf target"]);
    // A second turn: `rm x`, then an answer.
    let answers = std::fs::read_to_string(dir.path().join("answers.toml")).expect("written");
    let second = answers.replace("rm -rf target", "rm x");
    std::fs::write(dir.path().join("answers.toml"), answers + &second).expect("written");
    let host = host(&config, dir.path());
    let person = ScriptedPerson::answering([Answer::Never]);
    let session = open(&host, Opening::new(dir.path()), person.clone()).expect("opened");
    prompt(&host, &session, "go");
    assert_eq!(person.asked(), ["rm -rf target"]);
    // Full access asks nothing; the rejection holds all the same.
    session.steer(Knob::Mode, "full-access").expect("a mode");
    prompt(&host, &session, "again");
    assert_eq!(person.asked(), ["rm -rf target"], "not asked again");
    let ran: Vec<bool> = (person.shown.lock().iter())
        .filter_map(|event| match event {
            SessionEvent::CallEnded(end) => Some(!end.never_ran),
            _ => None,
        })
        .collect();
    assert_eq!(
        ran,
        [false, false],
        "`rm x` refused unasked, in full access"
    );
}

#[test]
fn a_command_leaves_what_was_attached_for_the_turn_and_a_refusal_is_said() {
    let dir = tempfile::tempdir().expect("a directory");
    let config = deployment(dir.path(), &[]);
    let host = host(&config, dir.path());
    let person = ScriptedPerson::answering([]);
    let session = open(&host, Opening::new(dir.path()), person.clone()).expect("opened");
    let mut attached = crate::session::Attachments {
        texts: vec!["<context>notes</context>".to_owned()],
        images: Vec::new(),
    };
    let outcome = host.serve(async |_started, _ending| {
        let cancel = CancellationToken::new();
        let refused = session.prompt("/model nope", &mut attached, &cancel).await;
        let steered = session.prompt("/mode ask", &mut attached, &cancel).await;
        assert_eq!(attached.texts.len(), 1, "commands leave the attachments");
        let turn = session.prompt("hello", &mut attached, &cancel).await;
        Ok((refused.ok(), steered.ok(), turn.ok()))
    });
    let (refused, steered, turn) = outcome.expect("served");
    assert_eq!(refused, Some(Prompted::Refused));
    assert_eq!(steered, Some(Prompted::NoTurn));
    assert!(matches!(turn, Some(Prompted::Turn(_))), "{turn:?}");
    assert!(attached.texts.is_empty(), "the turn took them");
    assert_eq!(session.steering().mode.id, "ask");
}

#[test]
fn a_turn_begun_can_be_cancelled_before_it_runs() {
    let dir = tempfile::tempdir().expect("a directory");
    let config = deployment(dir.path(), &["ls"]);
    let host = host(&config, dir.path());
    let person = ScriptedPerson::answering([]);
    let session = open(&host, Opening::new(dir.path()), person.clone()).expect("opened");
    let cancel = CancellationToken::new();
    let running = session.begin(&cancel).expect("begun");
    assert!(session.is_running());
    assert!(
        session.begin(&CancellationToken::new()).is_err(),
        "one turn at a time"
    );
    assert!(session.cancel(), "the begun turn is cancelled");
    let outcome = host.serve(async |_started, _ending| {
        let mut attached = crate::session::Attachments::default();
        Ok(running
            .run("go", &mut attached)
            .await
            .err()
            .map(|error| error.to_string()))
    });
    let error = outcome.expect("served").expect("the turn was cancelled");
    assert!(error.contains("cancel"), "{error}");
    assert!(!session.is_running(), "and is over");
}

/// A person who says yes to every call, and before the call numbered
/// `switch_at` (from 1) switches the session to read-only.
struct SwitchingPerson {
    session: Mutex<Option<std::sync::Weak<HostedSession>>>,
    asked: Mutex<usize>,
    switch_at: usize,
}

#[async_trait]
impl Person for SwitchingPerson {
    fn show(&self, _event: SessionEvent) {}

    async fn ask(&self, _question: Question<'_>, _cancel: &CancellationToken) -> Answer {
        let asked = {
            let mut asked = self.asked.lock();
            *asked += 1;
            *asked
        };
        if asked == self.switch_at {
            let session = self.session.lock().as_ref().and_then(|weak| weak.upgrade());
            let session = session.expect("the session, while it runs");
            session
                .steer(Knob::Mode, "read-only")
                .expect("read-only is within every ceiling");
        }
        Answer::Once
    }
}

#[test]
fn a_switch_to_read_only_stops_the_running_turns_next_write() {
    let dir = tempfile::tempdir().expect("a directory");
    let config = deployment(dir.path(), &["touch first.txt", "touch second.txt"]);
    let host = host(&config, dir.path());
    let person = Arc::new(SwitchingPerson {
        session: Mutex::new(None),
        asked: Mutex::new(0),
        switch_at: 2,
    });
    let reach = Reach {
        samples: true,
        only_session: true,
        ..Reach::default()
    };
    let (switching, _notes) = Sessions::new(Arc::clone(&host), reach)
        .open(Opening::new(dir.path()), person.clone())
        .expect("opened");
    *person.session.lock() = Some(Arc::downgrade(&switching));
    prompt(&host, &switching, "go");
    assert!(
        dir.path().join("first.txt").exists(),
        "the first call ran in auto"
    );
    assert!(
        !dir.path().join("second.txt").exists(),
        "the call after the switch ran in the old sandbox"
    );
    assert_eq!(switching.steering().mode.id, "read-only");
}

#[test]
fn the_deployments_sandbox_is_the_ceiling_of_a_mode_switch() {
    let dir = tempfile::tempdir().expect("a directory");
    let config = deployment(dir.path(), &[]);
    let text = std::fs::read_to_string(&config).expect("written");
    std::fs::write(&config, format!("[sandbox]\nmode = \"read-only\"\n{text}")).expect("written");
    let host = host(&config, dir.path());
    assert_eq!(host.ceiling(), dsh_sandbox::SandboxMode::ReadOnly);
    let session = open(
        &host,
        Opening::new(dir.path()),
        Arc::new(ScriptedPerson::default()),
    )
    .expect("opened");
    let offered: Vec<String> = (crate::session::Steering::choices(&host, Knob::Mode).into_iter())
        .map(|choice| choice.id)
        .collect();
    assert_eq!(offered, ["read-only"]);
    for beyond in ["full-access", "auto", "ask"] {
        let refused = session.steer(Knob::Mode, beyond).expect_err(beyond);
        assert!(refused.contains("ceiling `read-only`"), "{refused}");
    }
    assert_eq!(session.steering().mode.id, "read-only");

    // `--sandbox read-only` over a deployment that allows more.
    let config = deployment(dir.path(), &[]);
    let options = HostOptions {
        config: Some(config),
        sandbox: Some(dsh_sandbox::SandboxMode::ReadOnly),
        ..HostOptions::default()
    };
    let host = Arc::new(Host::load(&options, dir.path()).expect("loaded"));
    assert_eq!(host.ceiling(), dsh_sandbox::SandboxMode::ReadOnly);
    let session = open(
        &host,
        Opening::new(dir.path()),
        Arc::new(ScriptedPerson::default()),
    )
    .expect("opened");
    let refused = session
        .steer(Knob::Mode, "full-access")
        .expect_err("beyond");
    assert!(refused.contains("ceiling `read-only`"), "{refused}");
}

#[test]
fn a_sessions_other_directories_are_writable_to_its_commands() {
    let dir = tempfile::tempdir().expect("a directory");
    // Outside the temporary directory, which every sandbox may write:
    // beside this test's binary, or else (a target directory under the
    // temporary one) in this crate's directory, or else in the home.
    let exe = std::env::current_exe().expect("this test");
    let temp = std::env::temp_dir();
    let base = [
        exe.parent().map(Path::to_path_buf),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR"))),
        std::env::var_os("HOME").map(PathBuf::from),
    ]
    .into_iter()
    .flatten()
    .find(|dir| !dir.starts_with(&temp))
    .expect("a directory outside the temporary one")
    .join(format!("session-dirs-{}", std::process::id()));
    let other = base.join(format!("other-{}", std::process::id()));
    let elsewhere = base.join(format!("elsewhere-{}", std::process::id()));
    for directory in [&other, &elsewhere] {
        std::fs::create_dir_all(directory).expect("a directory");
    }
    let touch = |path: &Path| format!("touch {}", path.join("x").display());
    let config = deployment(dir.path(), &[&touch(&other), &touch(&elsewhere)]);
    let host = host(&config, dir.path());
    let person = ScriptedPerson::answering([Answer::Once, Answer::Once]);
    let opening = Opening::new(dir.path()).with_roots(vec![other.clone()]);
    let session = open(&host, opening, person).expect("opened");
    prompt(&host, &session, "go");
    assert!(
        other.join("x").exists(),
        "the session's other directory is writable"
    );
    let written_elsewhere = elsewhere.join("x").exists();
    let _ = std::fs::remove_dir_all(&base);
    assert!(!written_elsewhere, "a directory of no session's is not");
}
