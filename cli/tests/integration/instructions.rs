//! The project's own instructions through the real `dsh`: `AGENTS.md`
//! files found from the working directory by `dsh prompt` and `dsh
//! check`, each session's own under `dsh acp`, the editor's
//! `systemPrompt` in both modes, and the duplicate-sentence warning.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, ImageContent, Implementation, InitializeRequest, InitializeResponse,
    NewSessionRequest, PromptRequest, SessionId, SystemPrompt, SystemPromptMode,
};
use agent_client_protocol::{Agent, Client, Error};
use serde_json::Value;

use common::{assert_status, command, stderr, stdout, write};

const TIMEOUT: Duration = Duration::from_secs(60);

fn mkdirs(path: &Path) {
    std::fs::create_dir_all(path).expect("create a directory");
}

/// A project in a temporary directory: `.git`, a root `AGENTS.md`, a
/// `sub/AGENTS.md`, the working directory `sub/deeper`, and beside the
/// project a deployment whose persona says `persona`.
struct Project {
    dir: tempfile::TempDir,
    config: String,
}

const ROOT_TEXT: &str = "Root: build with `make`.\n";
const SUB_TEXT: &str = "Sub: run `cat <<EOF` freely, and never edit <<model>> files.\n";

impl Project {
    fn new(tables: &str) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let root = dir.path().join("project");
        mkdirs(&root.join(".git"));
        mkdirs(&root.join("sub/deeper"));
        write(&root.join("AGENTS.md"), ROOT_TEXT);
        write(&root.join("sub/AGENTS.md"), SUB_TEXT);
        write(
            &dir.path().join("answers.toml"),
            "[[answers]]\ntext = \"one\"\n[[answers]]\ntext = \"two\"\n",
        );
        let config = common::config(
            dir.path(),
            &format!(
                "[adapter.scripted]\nanswers = \"answers.toml\"\nmodel = \"m\"\n{tables}\n\
                 [[agents]]\nid = \"coder\"\ntools = [\"read\", \"bash\"]\n\
                 persona = \"You are a careful agent. Always run the tests before you commit.\"\n"
            ),
        );
        Self { dir, config }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    fn cwd(&self) -> PathBuf {
        self.root().join("sub/deeper")
    }

    /// `dsh` with `args` and `--config`, run in `cwd`.
    fn dsh_in(&self, cwd: &Path, args: &[&str]) -> std::process::Output {
        let mut all = args.to_vec();
        all.extend(["--config", &self.config]);
        command(&all).current_dir(cwd).output().expect("dsh runs")
    }
}

#[test]
fn prompt_in_a_nested_directory_ends_with_both_files_in_order_verbatim() {
    let project = Project::new("");
    // From the current directory, with no `--cwd`.
    let output = project.dsh_in(&project.cwd(), &["prompt"]);
    assert_status(&output, 0);
    let text = stdout(&output);
    assert!(
        text.ends_with(&format!("{ROOT_TEXT}\n\n{SUB_TEXT}")),
        "{text}"
    );
    // `--cwd` says the same from anywhere.
    let cwd = project.cwd().display().to_string();
    let elsewhere = project.dsh_in(project.dir.path(), &["prompt", "--cwd", &cwd]);
    assert_eq!(stdout(&elsewhere), text);
}

#[test]
fn the_users_global_file_comes_before_the_projects() {
    let project = Project::new("");
    let config_home = project.dir.path().join("config");
    mkdirs(&config_home.join("dsh"));
    write(
        &config_home.join("dsh/AGENTS.md"),
        "User: answer briefly.\n",
    );
    let output = command(&["prompt", "--format", "json", "--config", &project.config])
        .current_dir(project.cwd())
        .env("XDG_CONFIG_HOME", &config_home)
        .output()
        .expect("dsh runs");
    assert_status(&output, 0);
    let json: Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    let sections: Vec<(&str, &str)> = json["instructions"]["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|file| {
            (
                file["section"].as_str().expect("section"),
                file["source"].as_str().expect("source"),
            )
        })
        .collect();
    assert_eq!(
        sections,
        [
            ("user:AGENTS.md", "user"),
            ("project:AGENTS.md", "project"),
            ("project:sub/AGENTS.md", "project")
        ]
    );
}

/// A `sub/AGENTS.md` of 40 lines of 21 bytes: longer than the smallest
/// budget.
fn long_sub_text() -> String {
    (1..=40)
        .map(|n| format!("Sub: rule number {n:02}.\n"))
        .collect()
}

#[test]
fn explain_and_json_list_each_file_with_bytes_tokens_and_what_was_kept() {
    let project = Project::new("[instructions]\nmax_bytes = 400\n");
    let sub_text = long_sub_text();
    write(&project.root().join("sub/AGENTS.md"), &sub_text);
    let output = project.dsh_in(&project.cwd(), &["prompt", "--format", "explain"]);
    assert_status(&output, 0);
    let explain = stdout(&output);
    let root_file = project.root().join("AGENTS.md").display().to_string();
    let sub_file = project.root().join("sub/AGENTS.md").display().to_string();
    let line = |start: &str, source: &str| {
        explain
            .lines()
            .find(|line| line.starts_with(start) && line.contains(source))
            .unwrap_or_else(|| panic!("no row for {start} in:\n{explain}"))
            .to_owned()
    };
    // The nearest file is served first, and cut; the root's has nothing
    // left, and one marker says so, within the 400 bytes.
    let sub = line("project:sub/AGENTS.md", "project  /");
    let cut = format!(" of {} bytes", sub_text.len());
    assert!(sub.contains(&sub_file) && sub.contains(&cut), "{sub}");
    let marker = line("project::left-out", "budget");
    assert!(marker.contains("(1 file left out)"), "{marker}");
    assert!(
        explain.contains(&format!(
            "left out to fit the budget (1 file, said by section `project::left-out`):\n  \
             {root_file} ({} bytes)",
            ROOT_TEXT.len()
        )),
        "{explain}"
    );

    let output = project.dsh_in(&project.cwd(), &["prompt", "--format", "json"]);
    assert_status(&output, 0);
    let json: Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    let instructions = &json["instructions"];
    let files = instructions["files"].as_array().expect("files");
    assert_eq!(files.len(), 1, "{files:?}");
    let file = &files[0];
    assert_eq!(file["section"], "project:sub/AGENTS.md");
    assert_eq!(file["bytes"], sub_text.len());
    assert_eq!(file["cut"], true);
    assert!(file["kept"].as_u64().expect("kept") > 0, "{file}");
    assert!(file["tokens"].as_u64().expect("tokens") > 0, "{file}");
    let left_out = &instructions["left_out"];
    assert_eq!(left_out["files"][0]["path"], root_file);
    let in_prompt = file["prompt_bytes"].as_u64().expect("bytes")
        + left_out["prompt_bytes"].as_u64().expect("bytes");
    assert!(in_prompt <= 400, "{in_prompt}");
    assert_eq!(instructions["max_bytes"], 400);
}

#[test]
fn check_warns_for_each_cut_and_left_out_file_and_still_passes() {
    let project = Project::new("[instructions]\nmax_bytes = 400\n");
    write(&project.root().join("sub/AGENTS.md"), &long_sub_text());
    let output = project.dsh_in(&project.cwd(), &["check"]);
    assert_status(&output, 0);
    let err = stderr(&output);
    let path = |file: &str| project.root().join(file).display().to_string();
    assert!(
        err.contains(&format!(
            "warning: instruction file `{}` is cut",
            path("sub/AGENTS.md")
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "warning: instruction file `{}` is left out to fit the budget",
            path("AGENTS.md")
        )),
        "{err}"
    );
    assert!(err.contains("`max_bytes = 400`"), "{err}");
}

#[test]
fn a_link_out_of_the_project_is_skipped_and_explain_and_check_say_so() {
    let project = Project::new("");
    let secret = project.dir.path().join("secret.txt");
    write(&secret, "the deploy key is hunter2\n");
    let agents = project.root().join("sub/AGENTS.md");
    std::fs::remove_file(&agents).expect("removed");
    std::os::unix::fs::symlink(&secret, &agents).expect("a link");
    let prompt = stdout(&project.dsh_in(&project.cwd(), &["prompt"]));
    assert!(!prompt.contains("hunter2"), "{prompt}");
    assert!(prompt.ends_with(ROOT_TEXT), "{prompt}");
    let said = format!(
        "instruction file `{}`, whose real path `{}` is outside `{}`",
        agents.display(),
        secret.display(),
        project.root().display()
    );
    let explain = stdout(&project.dsh_in(&project.cwd(), &["prompt", "--format", "explain"]));
    assert!(
        explain.contains(&format!("skipped:\n  {said}")),
        "{explain}"
    );
    let output = project.dsh_in(&project.cwd(), &["check"]);
    assert_status(&output, 0);
    let err = stderr(&output);
    assert!(err.contains(&format!("warning: {said}")), "{err}");
}

#[test]
fn explain_says_what_was_imported_from_where() {
    let project = Project::new("[instructions]\nfiles = [\"CLAUDE.md\"]\n");
    write(&project.root().join("CLAUDE.md"), "@AGENTS.md\n");
    let output = project.dsh_in(&project.cwd(), &["prompt"]);
    assert_status(&output, 0);
    let prompt = stdout(&output);
    assert!(
        prompt.ends_with(&format!("@AGENTS.md\n\n\n{ROOT_TEXT}")),
        "{prompt}"
    );
    let explain = stdout(&project.dsh_in(&project.cwd(), &["prompt", "--format", "explain"]));
    let claude = project.root().join("CLAUDE.md").display().to_string();
    let row = explain
        .lines()
        .find(|line| line.starts_with("project:AGENTS.md "))
        .unwrap_or_else(|| panic!("no row in:\n{explain}"));
    assert!(
        row.contains(&format!("`@AGENTS.md` in {claude}:1")),
        "{row}"
    );
}

#[test]
fn check_warns_when_two_owners_state_the_same_sentence() {
    let project = Project::new("");
    write(
        &project.root().join("sub/AGENTS.md"),
        "- Always run the  tests before you COMMIT.\n",
    );
    let output = project.dsh_in(&project.cwd(), &["check"]);
    assert_status(&output, 0);
    // The report wraps long lines; read them joined.
    let err = stderr(&output).replace("\n  │ ", "");
    let sub_file = project.root().join("sub/AGENTS.md").display().to_string();
    assert!(
        err.contains(&format!(
            "the same sentence is stated by the persona of agent `coder` and by instruction \
             file `{sub_file}`: \"Always run the tests before you commit.\""
        )),
        "{err}"
    );
    // It points into the deployment file, at the persona's sentence.
    assert!(err.contains("dsh.toml:"), "{err}");
    assert!(err.contains("stated here"), "{err}");
    assert!(err.contains("one fact, one owner"), "{err}");
}

#[test]
fn a_file_repeated_whole_in_another_is_one_warning_for_the_pair() {
    let project = Project::new("");
    let text: String = (1..=66)
        .map(|n| format!("Rule {n}: keep module {n} free of cycles.\n"))
        .collect();
    write(&project.root().join("AGENTS.md"), &text);
    write(&project.root().join("sub/AGENTS.md"), &text);
    let output = project.dsh_in(&project.cwd(), &["check"]);
    assert_status(&output, 0);
    let err = stderr(&output);
    let file = |path: &str| project.root().join(path).display().to_string();
    assert_eq!(err.matches("warning:").count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "warning: 66 sentences of instruction file `{}` are repeated in instruction file \
             `{}`, such as \"Rule 1: keep module 1 free of cycles.\" and \"Rule 2: keep module \
             2 free of cycles.\"",
            file("AGENTS.md"),
            file("sub/AGENTS.md")
        )),
        "{err}"
    );
    assert!(!err.contains("fix these first"), "{err}");
}

#[test]
fn claude_md_is_the_fallback_and_enabled_false_reads_nothing() {
    let project = Project::new("");
    std::fs::remove_file(project.root().join("sub/AGENTS.md")).expect("removed");
    write(&project.root().join("sub/CLAUDE.md"), "From CLAUDE.md.\n");
    let output = project.dsh_in(&project.cwd(), &["prompt"]);
    assert!(stdout(&output).ends_with(&format!("{ROOT_TEXT}\n\nFrom CLAUDE.md.\n")));

    let disabled = Project::new("[instructions]\nenabled = false\n");
    let output = disabled.dsh_in(&disabled.cwd(), &["prompt"]);
    assert_status(&output, 0);
    let text = stdout(&output);
    assert!(!text.contains("Root:") && !text.contains("Sub:"), "{text}");
    let explain = stdout(&disabled.dsh_in(&disabled.cwd(), &["prompt", "--format", "explain"]));
    assert!(
        explain.contains("(none: `enabled = false` in [instructions])"),
        "{explain}"
    );
}

#[test]
fn a_file_name_that_is_a_path_is_a_config_error() {
    let project = Project::new("[instructions]\nfiles = [\"AGENTS.md\", \"docs/AGENTS.md\"]\n");
    let output = project.dsh_in(&project.cwd(), &["check"]);
    common::assert_fails_saying(
        &output,
        "`files[1]` of [instructions] is `docs/AGENTS.md`, which is not a file name",
    );
}

/// Runs `op` as a client named `zed` of `dsh acp --config config`,
/// recording the model requests to `recorded`, with no user file.
async fn with_dsh<T>(
    config: &str,
    recorded: &Path,
    op: impl AsyncFnOnce(ConnectionTo<Agent>) -> Result<T, Error>,
) -> T {
    let agent = common::recording_acp_agent(config, recorded);
    let run = Client
        .v1()
        .connect_with(agent, async |cx: ConnectionTo<Agent>| op(cx).await);
    tokio::time::timeout(TIMEOUT, run)
        .await
        .expect("the session finishes in time")
        .expect("the client side succeeds")
}

async fn initialize(cx: &ConnectionTo<Agent>) -> Result<InitializeResponse, Error> {
    cx.send_request(
        InitializeRequest::new(ProtocolVersion::V1)
            .client_info(Implementation::new("zed", "0.200.0")),
    )
    .block_task()
    .await
}

async fn session(
    cx: &ConnectionTo<Agent>,
    cwd: &Path,
    system_prompt: Option<SystemPrompt>,
) -> Result<SessionId, Error> {
    let request = NewSessionRequest::new(cwd).system_prompt(system_prompt);
    Ok(cx.send_request(request).block_task().await?.session_id)
}

async fn hello(cx: &ConnectionTo<Agent>, session: &SessionId) -> Result<(), Error> {
    let request = PromptRequest::new(session.clone(), vec![ContentBlock::from("hello")]);
    cx.send_request(request).block_task().await?;
    Ok(())
}

fn text_prompt(mode: SystemPromptMode, text: &str) -> SystemPrompt {
    SystemPrompt::new(vec![ContentBlock::from(text)]).mode(mode)
}

#[tokio::test]
async fn two_acp_sessions_in_two_projects_get_their_own_files() {
    let (one, two) = (Project::new(""), Project::new(""));
    write(&two.root().join("AGENTS.md"), "Project two: use tabs.\n");
    std::fs::remove_file(two.root().join("sub/AGENTS.md")).expect("removed");
    let recorded = one.dir.path().join("requests.jsonl");
    with_dsh(&one.config, &recorded, async |cx| {
        initialize(&cx).await?;
        let first = session(&cx, &one.cwd(), None).await?;
        let second = session(&cx, &two.cwd(), None).await?;
        hello(&cx, &first).await?;
        hello(&cx, &second).await?;
        Ok(())
    })
    .await;
    let systems = common::recorded_systems(&recorded);
    assert!(
        systems[0].ends_with(&format!("{ROOT_TEXT}\n\n{SUB_TEXT}")),
        "{}",
        systems[0]
    );
    assert!(!systems[0].contains("Project two"), "{}", systems[0]);
    assert!(
        systems[1].ends_with("Project two: use tabs.\n"),
        "{}",
        systems[1]
    );
    assert!(!systems[1].contains("Root:"), "{}", systems[1]);
}

#[tokio::test]
async fn an_appended_system_prompt_follows_the_persona_verbatim() {
    let project = Project::new("");
    let recorded = project.dir.path().join("requests.jsonl");
    let advertised = with_dsh(&project.config, &recorded, async |cx| {
        let init = initialize(&cx).await?;
        let id = session(
            &cx,
            &project.cwd(),
            Some(text_prompt(
                SystemPromptMode::Append,
                "Zed says: <<keep>> this.",
            )),
        )
        .await?;
        hello(&cx, &id).await?;
        Ok(init.agent_capabilities.session_capabilities.system_prompt)
    })
    .await;
    let advertised = serde_json::to_value(advertised).expect("JSON");
    assert_eq!(
        advertised,
        serde_json::json!({ "mode": { "override": {} } })
    );
    let system = &common::recorded_systems(&recorded)[0];
    assert!(
        system.starts_with(
            "You are a careful agent. Always run the tests before you commit.\n\n\
             Zed says: <<keep>> this.\n\n"
        ),
        "{system}"
    );
    // Everything else stays: the tools' guidance, the project's files.
    assert!(
        system.contains("`read`") || system.contains("read"),
        "{system}"
    );
    assert!(system.ends_with(SUB_TEXT), "{system}");
}

#[tokio::test]
async fn an_override_replaces_the_persona_and_guidance_and_keeps_the_projects_files() {
    let project = Project::new("");
    let recorded = project.dir.path().join("requests.jsonl");
    with_dsh(&project.config, &recorded, async |cx| {
        initialize(&cx).await?;
        let system_prompt = SystemPrompt::new(vec![
            ContentBlock::from("You are Zed's agent."),
            ContentBlock::from("Be terse."),
        ])
        .mode(SystemPromptMode::Override);
        let id = session(&cx, &project.cwd(), Some(system_prompt)).await?;
        hello(&cx, &id).await?;
        Ok(())
    })
    .await;
    let requests = common::recorded_requests(&recorded);
    assert_eq!(
        requests[0]["system"],
        format!("You are Zed's agent.\n\nBe terse.\n\n{ROOT_TEXT}\n\n{SUB_TEXT}")
    );
    // The tools are still offered: an override changes instructions only.
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(tools, ["bash", "read"]);
}

#[tokio::test]
async fn an_unsupported_mode_or_block_is_an_error_and_no_session() {
    let project = Project::new("");
    let recorded = project.dir.path().join("requests.jsonl");
    let errors = with_dsh(&project.config, &recorded, async |cx| {
        initialize(&cx).await?;
        let mode: SystemPromptMode =
            serde_json::from_value(serde_json::json!("replace")).expect("an unknown mode");
        let unknown_mode = session(&cx, &project.cwd(), Some(text_prompt(mode, "x"))).await;
        let image = SystemPrompt::new(vec![
            ContentBlock::from("x"),
            ContentBlock::Image(ImageContent::new("aGk=", "image/png")),
        ]);
        let image = session(&cx, &project.cwd(), Some(image)).await;
        let empty = session(&cx, &project.cwd(), Some(SystemPrompt::new(Vec::new()))).await;
        Ok([unknown_mode, image, empty])
    })
    .await;
    let messages: Vec<(i32, String)> = errors
        .into_iter()
        .map(|result| {
            let error = result.expect_err("no session");
            (i32::from(error.code), error.message)
        })
        .collect();
    assert_eq!(messages[0].0, -32602);
    assert!(
        messages[0]
            .1
            .contains("`systemPrompt.mode` `replace` is not supported"),
        "{messages:?}"
    );
    assert!(
        messages[1]
            .1
            .contains("`systemPrompt.content[1]` is a `image` block"),
        "{messages:?}"
    );
    assert!(messages[2].1.contains("is empty"), "{messages:?}");
    assert!(messages.iter().all(|(code, _)| *code == -32602));
}

#[tokio::test]
async fn an_acp_session_reads_its_files_once_when_it_starts() {
    let project = Project::new("");
    write(
        &project.dir.path().join("answers.toml"),
        "[[answers]]\ntext = \"1\"\n[[answers]]\ntext = \"2\"\n[[answers]]\ntext = \"3\"\n",
    );
    let recorded = project.dir.path().join("requests.jsonl");
    let root_file = project.root().join("AGENTS.md");
    with_dsh(&project.config, &recorded, async |cx| {
        initialize(&cx).await?;
        let first = session(&cx, &project.cwd(), None).await?;
        hello(&cx, &first).await?;
        write(&root_file, "Root: changed.\n");
        // The running session keeps what it read: its prompt stays
        // byte-stable for the provider's cache.
        hello(&cx, &first).await?;
        // A new session reads the file as it is now.
        let second = session(&cx, &project.cwd(), None).await?;
        hello(&cx, &second).await?;
        Ok(())
    })
    .await;
    let systems = common::recorded_systems(&recorded);
    assert_eq!(systems[0], systems[1]);
    assert!(systems[1].contains(ROOT_TEXT), "{}", systems[1]);
    assert!(systems[2].contains("Root: changed.\n"), "{}", systems[2]);
}

#[tokio::test]
async fn the_older_meta_system_prompt_is_appended_like_the_stable_field() {
    let project = Project::new("");
    let recorded = project.dir.path().join("requests.jsonl");
    with_dsh(&project.config, &recorded, async |cx| {
        initialize(&cx).await?;
        for meta in [
            serde_json::json!({ "systemPrompt": "Meta as a string." }),
            serde_json::json!({ "systemPrompt": { "append": "Meta as append." } }),
        ] {
            let Value::Object(meta) = meta else {
                unreachable!("an object")
            };
            let request = NewSessionRequest::new(project.cwd()).meta(meta);
            let id = cx.send_request(request).block_task().await?.session_id;
            hello(&cx, &id).await?;
        }
        Ok(())
    })
    .await;
    let systems = common::recorded_systems(&recorded);
    let persona = "You are a careful agent. Always run the tests before you commit.\n\n";
    for (system, text) in systems.iter().zip(["Meta as a string.", "Meta as append."]) {
        assert!(
            system.starts_with(&format!("{persona}{text}\n\n")),
            "{system}"
        );
        assert!(system.ends_with(SUB_TEXT), "{system}");
    }
}
