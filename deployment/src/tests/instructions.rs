//! Instruction files on a real file system, registered into a real
//! registry with the tool crates linked, rendered as a step would.

use std::path::{Path, PathBuf};

use crate::host::{
    ClientPrompt, ClientPromptMode, InstructionSource, Instructions, InstructionsConfig,
    InstructionsError,
};
use dsh_agent_loop::{Agent, AgentLoop, AgentOptions, Session};
use dsh_system_prompt::{Registration, SystemPrompt, render_prompt};
use dsh_tools::ToolRegistry;

use dsh_tool_bash as _;
use dsh_tool_fs as _;

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create the directory");
    }
    std::fs::write(path, text).expect("write the file");
}

/// The nested fixture: a project (with `.git`) whose root and `sub` hold
/// an `AGENTS.md`, and the working directory `sub/deeper`, which holds
/// none.
struct Nested {
    dir: tempfile::TempDir,
}

impl Nested {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::create_dir(dir.path().join(".git")).expect("a .git");
        write(&dir.path().join("AGENTS.md"), "Root: build with make.\n");
        write(
            &dir.path().join("sub/AGENTS.md"),
            "Sub: never touch vendor/.\n",
        );
        std::fs::create_dir_all(dir.path().join("sub/deeper")).expect("the working directory");
        Self { dir }
    }

    /// The same tree with no `.git` directory at its root.
    fn without_git_directory() -> Self {
        let nested = Self::new();
        std::fs::remove_dir(nested.root().join(".git")).expect("no .git directory");
        nested
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn cwd(&self) -> PathBuf {
        self.root().join("sub/deeper")
    }
}

fn config() -> InstructionsConfig {
    InstructionsConfig::default()
}

fn sections(found: &Instructions) -> Vec<(&str, i32)> {
    found
        .files()
        .iter()
        .map(|file| (file.section.as_str(), file.order))
        .collect()
}

/// The registry a deployment has (statics, the read and bash tools), an
/// agent, and a session in `cwd` whose instruction files are registered.
struct Started {
    prompt: SystemPrompt,
    agent: Agent,
    session: Session,
    _tools: Registration,
    _kept: Vec<Registration>,
}

fn start(cwd: &Path, found: &Instructions) -> Started {
    let prompt = SystemPrompt::new().expect("the registry builds");
    let tools = ToolRegistry::new();
    tools
        .register(std::sync::Arc::new(dsh_tool_fs::ReadTool::new()))
        .expect("read");
    tools
        .register(std::sync::Arc::new(dsh_tool_bash::BashTool::new()))
        .expect("bash");
    let installed = tools.install(&prompt).expect("installed");
    let session = Session::new().with_cwd(cwd);
    let kept = found
        .register(&prompt, session.id())
        .expect("the files register");
    Started {
        agent: Agent::new("coder", AgentOptions::new("m").with_persona("You are dsh.")),
        prompt,
        session,
        _tools: installed,
        _kept: kept,
    }
}

/// The instructions found from `nested`'s working directory.
fn discovered(nested: &Nested) -> Instructions {
    Instructions::discover(&config(), &nested.cwd(), None).expect("discovered")
}

/// A session started in `nested`'s working directory with the
/// instructions found from there.
fn started(nested: &Nested) -> Started {
    start(&nested.cwd(), &discovered(nested))
}

impl Started {
    /// Registers the prompt of client `zed`, `text` in `mode`, for this
    /// session.
    fn client_prompt(&self, mode: ClientPromptMode, text: &str) -> Vec<Registration> {
        ClientPrompt::new("zed", mode, text)
            .register(&self.prompt, self.session.id())
            .expect("registers")
    }

    fn render(&self) -> String {
        self.render_for(&self.session)
    }

    fn render_for(&self, session: &Session) -> String {
        let cx = AgentLoop::context(&self.agent, session);
        render_prompt(&self.prompt.assemble(&cx)).expect("the prompt renders")
    }

    fn section_names(&self) -> Vec<String> {
        let cx = AgentLoop::context(&self.agent, &self.session);
        self.prompt
            .assemble(&cx)
            .sections
            .iter()
            .map(|section| section.name().to_string())
            .collect()
    }
}

#[test]
fn nested_files_render_root_to_working_directory_after_the_tool_guidance() {
    let nested = Nested::new();
    let found = discovered(&nested);
    assert_eq!(found.root(), Some(nested.root()));
    assert_eq!(
        sections(&found),
        [("project:AGENTS.md", 200), ("project:sub/AGENTS.md", 201)]
    );
    let owners: Vec<(String, String)> = found
        .files()
        .iter()
        .map(|file| {
            (
                file.owner().krate.to_string(),
                file.owner().item.to_string(),
            )
        })
        .collect();
    assert_eq!(
        owners,
        [
            (
                "project".to_owned(),
                nested.root().join("AGENTS.md").display().to_string()
            ),
            (
                "project".to_owned(),
                nested.root().join("sub/AGENTS.md").display().to_string()
            ),
        ]
    );

    let started = start(&nested.cwd(), &found);
    let names = started.section_names();
    assert_eq!(
        names,
        [
            "agent:persona",
            // Registered, but active only in a compaction request.
            "compaction:instruction",
            "tool:read",
            "tool:write",
            "tool:edit",
            "tool:bash",
            "sandbox",
            "project:AGENTS.md",
            "project:sub/AGENTS.md"
        ]
    );
    let text = started.render();
    assert!(
        text.ends_with("Root: build with make.\n\n\nSub: never touch vendor/.\n"),
        "{text}"
    );
}

#[test]
fn without_git_the_working_directory_alone_is_the_project() {
    let nested = Nested::without_git_directory();
    write(&nested.cwd().join("AGENTS.md"), "Deeper only.\n");
    let found = discovered(&nested);
    assert_eq!(found.root(), Some(nested.cwd().as_path()));
    assert_eq!(sections(&found), [("project:AGENTS.md", 200)]);
    assert_eq!(found.files()[0].text, "Deeper only.\n");
}

#[test]
fn a_git_file_marks_the_root_as_a_git_directory_does() {
    let nested = Nested::without_git_directory();
    // A worktree's or submodule's `.git` is a file.
    write(&nested.root().join("sub/.git"), "gitdir: /elsewhere\n");
    let found = discovered(&nested);
    assert_eq!(found.root(), Some(nested.root().join("sub").as_path()));
    assert_eq!(sections(&found), [("project:AGENTS.md", 200)]);
}

#[test]
fn claude_md_counts_where_there_is_no_agents_md() {
    let nested = Nested::new();
    std::fs::remove_file(nested.root().join("sub/AGENTS.md")).expect("removed");
    write(&nested.root().join("sub/CLAUDE.md"), "From CLAUDE.md.\n");
    // Where both are present, the first name listed wins.
    write(&nested.root().join("CLAUDE.md"), "Never read.\n");
    let found = discovered(&nested);
    assert_eq!(
        sections(&found),
        [("project:AGENTS.md", 200), ("project:sub/CLAUDE.md", 201)]
    );
    assert_eq!(found.files()[1].text, "From CLAUDE.md.\n");

    let rules_only: InstructionsConfig = toml::from_str("files = [\"CLAUDE.md\"]").expect("toml");
    let found = Instructions::discover(&rules_only, &nested.cwd(), None).expect("discovered");
    assert_eq!(
        sections(&found),
        [("project:CLAUDE.md", 200), ("project:sub/CLAUDE.md", 201)]
    );
}

#[test]
fn the_user_file_comes_first_and_is_cut_last() {
    let nested = Nested::new();
    let home = tempfile::tempdir().expect("a config dir");
    let user = home.path().join("dsh/AGENTS.md");
    write(&user, "User: be brief.\n");
    let found = Instructions::discover(&config(), &nested.cwd(), Some(&user)).expect("ok");
    assert_eq!(
        sections(&found),
        [
            ("user:AGENTS.md", 200),
            ("project:AGENTS.md", 201),
            ("project:sub/AGENTS.md", 202)
        ]
    );
    assert_eq!(found.files()[0].source, InstructionSource::User);
    assert_eq!(found.files()[0].owner().krate, "user");

    // A budget of the two project files exactly: the user's file has
    // nothing left, and says so.
    let budget = config()
        .with_max_bytes("Root: build with make.\n".len() + "Sub: never touch vendor/.\n".len());
    let found = Instructions::discover(&budget, &nested.cwd(), Some(&user)).expect("ok");
    let cut: Vec<&str> = found
        .files()
        .iter()
        .filter(|file| file.is_cut())
        .map(|file| file.section.as_str())
        .collect();
    assert_eq!(cut, ["user:AGENTS.md"]);
    let user_text = &found.files()[0].text;
    assert!(
        user_text.starts_with("[dsh cut this instruction file")
            && user_text.contains(&format!("0 of 16 bytes of {}", user.display())),
        "{user_text}"
    );
}

#[test]
fn the_budget_is_spent_nearest_first_and_every_cut_is_marked() {
    let nested = Nested::new();
    write(
        &nested.root().join("AGENTS.md"),
        "Root line one.\nRoot line two.\nRoot line three.\n",
    );
    let sub = "Sub: never touch vendor/.\n";
    // The nearest file whole, and one line of the root's.
    let budget = config().with_max_bytes(sub.len() + "Root line one.\n".len() + 3);
    let found = Instructions::discover(&budget, &nested.cwd(), None).expect("discovered");
    let sub_file = found.file("project:sub/AGENTS.md").expect("sub");
    assert!(!sub_file.is_cut());
    assert_eq!(sub_file.text, sub);
    let root_file = found.file("project:AGENTS.md").expect("root");
    assert!(root_file.is_cut());
    assert_eq!((root_file.kept, root_file.bytes), (15, 47));
    let path = nested.root().join("AGENTS.md");
    assert_eq!(
        root_file.text,
        format!(
            "Root line one.\n[dsh cut this instruction file to fit its budget: 15 of 47 bytes \
             of {} are above; use the read tool on that file from line 2 for the rest]",
            path.display()
        )
    );
    // The marker is in the prompt, where the model reads it.
    let started = start(&nested.cwd(), &found);
    assert!(
        started
            .render()
            .contains("use the read tool on that file from line 2")
    );
}

#[test]
fn instruction_text_renders_verbatim_whatever_it_holds() {
    let nested = Nested::new();
    let malformed = [
        "cat <<EOF",
        "<<model>>",
        "<<cwd>>",
        "<<<x>>>",
        "<< a >>",
        "<<Model>>",
        "<<>>",
        "<<a-b>>",
        r"\<<",
        r"a \\<< b",
        "a << b << c >> d",
        "std::cout << x;",
        "ends with <<",
        "ends with \\",
    ];
    let text = malformed.join("\n") + "\n";
    write(&nested.cwd().join("AGENTS.md"), &text);
    let started = started(&nested);
    let rendered = started.render();
    assert!(rendered.ends_with(&format!("\n\n{text}")), "{rendered}");
    for line in malformed {
        assert!(
            rendered.contains(line),
            "`{line}` is not literal in:\n{rendered}"
        );
    }
}

#[test]
fn a_disabled_config_reads_no_file() {
    let nested = Nested::new();
    let disabled: InstructionsConfig = toml::from_str("enabled = false").expect("toml");
    let found = Instructions::discover(&disabled, &nested.cwd(), None).expect("discovered");
    assert!(found.files().is_empty());
    assert_eq!(found.root(), None);
    let started = start(&nested.cwd(), &found);
    assert!(!started.render().contains("Root:"));
}

#[test]
fn each_session_sees_its_own_project_only() {
    let (one, two) = (Nested::new(), tempfile::tempdir().expect("another project"));
    std::fs::create_dir(two.path().join(".git")).expect("a .git");
    write(&two.path().join("AGENTS.md"), "Project two.\n");
    let first = Instructions::discover(&config(), &one.cwd(), None).expect("one");
    let started = start(&one.cwd(), &first);
    let other = Session::new().with_cwd(two.path());
    let second = Instructions::discover(&config(), two.path(), None).expect("two");
    let _kept = second
        .register(&started.prompt, other.id())
        .expect("registers");

    let text_one = started.render();
    let text_two = started.render_for(&other);
    assert!(text_one.contains("Root: build with make.") && !text_one.contains("Project two."));
    assert!(text_two.contains("Project two.") && !text_two.contains("Root:"));
    // A session with nothing registered sees neither.
    let bare = started.render_for(&Session::new());
    assert!(!bare.contains("Root:") && !bare.contains("Project two."));
}

#[test]
fn files_are_read_once_when_the_session_starts() {
    let nested = Nested::new();
    let started = started(&nested);
    let before = started.render();
    write(&nested.root().join("AGENTS.md"), "Changed.\n");
    assert_eq!(started.render(), before);
}

#[test]
fn a_file_that_is_not_utf8_is_an_error_naming_it() {
    let nested = Nested::new();
    let path = nested.root().join("sub/AGENTS.md");
    std::fs::write(&path, b"ok \xff\xfe").expect("write");
    let error = Instructions::discover(&config(), &nested.cwd(), None).expect_err("refused");
    assert!(
        matches!(&error, InstructionsError::NotUtf8 { path: at, offset: 3 } if *at == path),
        "{error}"
    );
    assert!(error.to_string().contains("save it as UTF-8"), "{error}");
}

#[test]
fn a_client_append_follows_the_persona_verbatim() {
    let nested = Nested::new();
    let started = started(&nested);
    let _kept = started.client_prompt(ClientPromptMode::Append, "Use <<tabs>>.");
    let names = started.section_names();
    assert_eq!(names[..2], ["agent:persona", "client:system-prompt"]);
    assert!(names.contains(&"tool:bash".to_owned()));
    assert!(
        started
            .render()
            .starts_with("You are dsh.\n\nUse <<tabs>>.\n\n")
    );
}

#[test]
fn a_client_override_replaces_the_agents_instructions_and_keeps_the_projects() {
    let nested = Nested::new();
    let started = started(&nested);
    let kept = started.client_prompt(ClientPromptMode::Override, "Only this.");
    assert_eq!(
        started.section_names(),
        [
            "client:system-prompt",
            "project:AGENTS.md",
            "project:sub/AGENTS.md"
        ]
    );
    assert_eq!(
        started.render(),
        "Only this.\n\nRoot: build with make.\n\n\nSub: never touch vendor/.\n"
    );
    // The tools stay: an override changes instructions, not abilities.
    let cx = AgentLoop::context(&started.agent, &started.session);
    assert!(started.prompt.assemble(&cx).has_tool("bash"));
    // Dropped with the session: the agent's own prompt is back.
    drop(kept);
    assert!(started.render().starts_with("You are dsh."));
}

#[test]
fn a_huge_file_is_read_only_as_far_as_the_budget_reaches() {
    let nested = Nested::new();
    // A megabyte of `é` (two bytes each) after a first line, and a byte
    // that is not UTF-8 far past the budget: only the budget is read.
    let mut bytes = b"First line.\n".to_vec();
    bytes.extend("é".repeat(512 * 1024).as_bytes());
    bytes.push(0xff);
    std::fs::write(nested.cwd().join("AGENTS.md"), &bytes).expect("write");
    // 12 bytes of the first line, then 5 of the `é`s: the read stops
    // inside a character, which is not an error.
    let budget = config().with_max_bytes(12 + 5);
    let found = Instructions::discover(&budget, &nested.cwd(), None).expect("discovered");
    let file = found
        .file("project:sub/deeper/AGENTS.md")
        .expect("the file");
    assert_eq!((file.kept, file.bytes), (12, bytes.len()));
    assert!(
        file.text.starts_with("First line.\n[dsh cut"),
        "{}",
        file.text
    );
    assert!(
        file.text.contains(&format!("12 of {} bytes", bytes.len())),
        "{}",
        file.text
    );
    // The parents' files had no budget left.
    assert!(found.files().iter().all(|file| file.is_cut()));
}
