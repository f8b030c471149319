//! Instruction files on a real file system, registered into a real
//! registry with the tool crates linked, rendered as a step would.

use std::path::{Path, PathBuf};

use dsh_agent_loop::{Agent, AgentLoop, AgentOptions, Session};
use dsh_system_prompt::{Registration, SystemPrompt, render_prompt};
use dsh_tools::ToolRegistry;

use crate::facts::client_prompt::{ClientPrompt, ClientPromptMode};
use crate::facts::instructions::{
    InstructionFile, InstructionSource, Instructions, InstructionsConfig, InstructionsError,
    MIN_MAX_BYTES, SkipReason,
};

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
fn the_user_file_comes_first_and_is_spent_on_last() {
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

    // The smallest budget: the project's two files whole, and what is
    // left of it for the user's long file, its marker included.
    let long: String = (0..100).map(|n| format!("User line {n:03}.\n")).collect();
    write(&user, &long);
    let budget = config().with_max_bytes(MIN_MAX_BYTES);
    let found = Instructions::discover(&budget, &nested.cwd(), Some(&user)).expect("ok");
    let user_file = found.file("user:AGENTS.md").expect("the user's file, cut");
    assert!(user_file.is_cut() && user_file.kept > 0, "{user_file:?}");
    assert!(
        user_file.text.starts_with("User line 000.\n")
            && user_file.text.ends_with("for the rest]")
            && user_file
                .text
                .contains(&format!("of {} bytes of {}", long.len(), user.display())),
        "{}",
        user_file.text
    );
    assert!(found.files().iter().filter(|file| file.is_cut()).count() == 1);
    assert_eq!(found.left_out(), None);
    assert!(in_budget(&found) <= MIN_MAX_BYTES, "{}", in_budget(&found));
}

/// The bytes the instruction sections hold: every file's text and the
/// marker of the files left out.
fn in_budget(found: &Instructions) -> usize {
    found
        .files()
        .iter()
        .map(|file| file.text.len())
        .sum::<usize>()
        + found.left_out().map_or(0, |left_out| left_out.text.len())
}

#[test]
fn the_budget_is_spent_nearest_first_and_every_cut_is_marked() {
    let nested = Nested::new();
    let root_text: String = (1..=40).map(|n| format!("Root line {n:02}.\n")).collect();
    write(&nested.root().join("AGENTS.md"), &root_text);
    let sub = "Sub: never touch vendor/.\n";
    let budget = config().with_max_bytes(400);
    let found = Instructions::discover(&budget, &nested.cwd(), None).expect("discovered");
    // The nearest file whole, and whole lines of the root's.
    let sub_file = found.file("project:sub/AGENTS.md").expect("sub");
    assert!(!sub_file.is_cut());
    assert_eq!(sub_file.text, sub);
    let root_file = found.file("project:AGENTS.md").expect("root");
    assert!(root_file.is_cut());
    assert_eq!(root_file.bytes, root_text.len());
    assert_eq!(root_file.kept % "Root line 01.\n".len(), 0, "whole lines");
    let path = nested.root().join("AGENTS.md");
    assert_eq!(
        root_file.text,
        format!(
            "{}[dsh cut this instruction file to fit its budget: {} of {} bytes \
             of {} are above; use the read tool on that file from line {} for the rest]",
            &root_text[..root_file.kept],
            root_file.kept,
            root_text.len(),
            path.display(),
            root_file.kept / "Root line 01.\n".len() + 1
        )
    );
    // The marker counts: the budget holds the whole.
    assert!(in_budget(&found) <= 400, "{}", in_budget(&found));
    // The marker is in the prompt, where the model reads it.
    let started = start(&nested.cwd(), &found);
    assert!(
        started
            .render()
            .contains("use the read tool on that file from line")
    );
}

#[test]
fn a_thousand_nested_files_cost_the_budget_and_one_marker() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::create_dir(dir.path().join(".git")).expect("a .git");
    let text = format!(
        "{}\n",
        "Keep the build green; run the whole test suite before each commit. "
            .repeat(2)
            .trim_end()
    );
    let mut cwd = dir.path().to_path_buf();
    for depth in 0..1_500 {
        if depth > 0 {
            cwd.push("d");
        }
        write(&cwd.join("AGENTS.md"), &text);
    }
    let found = Instructions::discover(&config(), &cwd, None).expect("discovered");
    let max = config().max_bytes;
    assert!(in_budget(&found) <= max, "{} > {max}", in_budget(&found));
    let left_out = found.left_out().expect("files left out");
    assert_eq!(found.files().len() + left_out.files.len(), 1_500);
    assert!(found.files().iter().filter(|file| file.is_cut()).count() <= 1);
    // One marker, first, naming how many and from where to where.
    assert_eq!(left_out.order, 200);
    assert_eq!(found.files()[0].order, 201);
    // The nearest of them has a path of 3,000 bytes: the marker names the
    // farthest only, and spends the rest of the budget on files.
    let first = &left_out.files[0].path;
    assert_eq!(first, &dir.path().join("AGENTS.md"));
    assert!(
        left_out.text.starts_with(&format!(
            "[dsh left out {} instruction files to fit their budget: {} and {} more nearer the \
             working directory; use the read tool on them",
            left_out.files.len(),
            first.display(),
            left_out.files.len() - 1
        )),
        "{}",
        left_out.text
    );
    // The prompt holds the nearest files, and nothing cut-marked but one.
    let started = start(&cwd, &found);
    let prompt = started.render();
    assert_eq!(
        prompt.matches("[dsh cut").count() + prompt.matches("[dsh left out").count(),
        1 + usize::from(found.files().iter().any(InstructionFile::is_cut))
    );
    assert!(prompt.len() < max + 8 * 1024, "{}", prompt.len());
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
    std::fs::remove_file(nested.root().join("AGENTS.md")).expect("removed");
    std::fs::remove_file(nested.root().join("sub/AGENTS.md")).expect("removed");
    // A megabyte of `é` (two bytes each) after a first line, and a byte
    // that is not UTF-8 far past the budget: only the budget is read, and
    // the read stops inside a character, which is not an error.
    let mut bytes = b"First line.\n".to_vec();
    bytes.extend("é".repeat(512 * 1024).as_bytes());
    bytes.push(0xff);
    std::fs::write(nested.cwd().join("AGENTS.md"), &bytes).expect("write");
    let budget = config().with_max_bytes(MIN_MAX_BYTES + 1);
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
}

/// `link` made a symbolic link to `target`, replacing what was there.
fn link(target: &Path, link: &Path) {
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(target, link).expect("a symbolic link");
}

#[test]
fn a_link_to_a_file_outside_the_project_is_skipped_and_said() {
    let nested = Nested::new();
    let outside = tempfile::tempdir().expect("another directory");
    let secret = outside.path().join("passwd");
    write(&secret, "root:x:0:0:the secret:/root:/bin/sh\n");
    let agents = nested.root().join("sub/AGENTS.md");
    link(&secret, &agents);
    let found = discovered(&nested);
    assert_eq!(sections(&found), [("project:AGENTS.md", 200)]);
    let skipped = found.skipped();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].path, agents);
    let real = std::fs::canonicalize(&secret).expect("a real path");
    assert_eq!(
        skipped[0].reason,
        SkipReason::Outside {
            real: real.clone(),
            allowed: vec![nested.root().to_path_buf()],
        }
    );
    assert!(skipped[0].is_warning());
    let said = skipped[0].to_string();
    for part in [agents.display(), real.display(), nested.root().display()] {
        assert!(said.contains(&format!("`{part}`")), "{said}");
    }
    assert!(!start(&nested.cwd(), &found).render().contains("the secret"));

    // A link inside the project is read, and so is one into the user's
    // config directory.
    write(&nested.root().join("docs/sub.md"), "Shared: use tabs.\n");
    link(&nested.root().join("docs/sub.md"), &agents);
    let found = discovered(&nested);
    assert_eq!(
        found
            .file("project:sub/AGENTS.md")
            .map(|file| file.text.as_str()),
        Some("Shared: use tabs.\n")
    );
    let home = tempfile::tempdir().expect("a config dir");
    let user = home.path().join("dsh/AGENTS.md");
    write(
        &home.path().join("dsh/project.md"),
        "From the user's directory.\n",
    );
    link(&home.path().join("dsh/project.md"), &agents);
    let found = Instructions::discover(&config(), &nested.cwd(), Some(&user)).expect("found");
    assert!(found.skipped().is_empty(), "{:?}", found.skipped());
    assert_eq!(
        found
            .file("project:sub/AGENTS.md")
            .map(|file| file.text.as_str()),
        Some("From the user's directory.\n")
    );
}

/// A project whose directories' file is `CLAUDE.md` (the only name
/// listed), found from its root.
fn claude_project() -> (tempfile::TempDir, InstructionsConfig) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::create_dir(dir.path().join(".git")).expect("a .git");
    (dir, config().with_files(["CLAUDE.md"]))
}

#[test]
fn a_claude_md_that_imports_agents_md_brings_it_as_its_own_section() {
    let (dir, config) = claude_project();
    let root = dir.path();
    write(&root.join("CLAUDE.md"), "@AGENTS.md\n");
    let agents: String = (0..200)
        .map(|n| format!("Convention {n}: keep it.\n"))
        .collect();
    write(&root.join("AGENTS.md"), &agents);
    let found = Instructions::discover(&config, root, None).expect("found");
    assert_eq!(
        sections(&found),
        [("project:CLAUDE.md", 200), ("project:AGENTS.md", 201)]
    );
    let imported = found.file("project:AGENTS.md").expect("imported");
    assert_eq!(imported.text, agents);
    assert_eq!(
        imported.owner().item.to_string(),
        root.join("AGENTS.md").display().to_string()
    );
    let site = imported.imported_by.as_ref().expect("an import");
    assert_eq!(
        (site.file.as_path(), site.written.as_str(), site.line),
        (root.join("CLAUDE.md").as_path(), "AGENTS.md", 1)
    );
    let prompt = start(root, &found).render();
    assert!(
        prompt.ends_with(&format!("@AGENTS.md\n\n\n{agents}")),
        "{prompt}"
    );
}

#[test]
fn imports_follow_claude_codes_rules_and_go_five_hops_deep() {
    let (dir, config) = claude_project();
    let root = dir.path();
    // Relative to the importing file; not in code; not a handle.
    write(
        &root.join("CLAUDE.md"),
        "See @docs/one.md but not `@docs/two.md`, nor @alice.\n\n```\n@docs/two.md\n```\n",
    );
    write(&root.join("docs/one.md"), "One.\n@hop2.md\n");
    write(&root.join("docs/two.md"), "Two.\n");
    for hop in 2..=6 {
        write(
            &root.join(format!("docs/hop{hop}.md")),
            &format!("Hop {hop}.\n@hop{}.md\n", hop + 1),
        );
    }
    write(&root.join("docs/hop7.md"), "Hop 7.\n");
    let found = Instructions::discover(&config, root, None).expect("found");
    let names: Vec<&str> = found
        .files()
        .iter()
        .map(|file| file.section.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "project:CLAUDE.md",
            "project:docs/one.md",
            "project:docs/hop2.md",
            "project:docs/hop3.md",
            "project:docs/hop4.md",
            "project:docs/hop5.md",
        ]
    );
    // `hop5.md` is the fifth hop; its import would be the sixth.
    let skipped = found.skipped();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].reason, SkipReason::TooDeep);
    assert_eq!(skipped[0].path, root.join("docs/hop6.md"));
    assert!(
        skipped[0].to_string().contains("5 hops deep"),
        "{}",
        skipped[0]
    );
}

#[test]
fn an_import_cycle_is_read_once_and_said() {
    let (dir, config) = claude_project();
    let root = dir.path();
    write(&root.join("CLAUDE.md"), "Top.\n@a.md\n");
    write(&root.join("a.md"), "A.\n@b.md\n");
    write(&root.join("b.md"), "B.\n@a.md\n@CLAUDE.md\n");
    let found = Instructions::discover(&config, root, None).expect("found");
    assert_eq!(
        sections(&found),
        [
            ("project:CLAUDE.md", 200),
            ("project:a.md", 201),
            ("project:b.md", 202)
        ]
    );
    let reasons: Vec<(&Path, &SkipReason)> = found
        .skipped()
        .iter()
        .map(|skipped| (skipped.path.as_path(), &skipped.reason))
        .collect();
    assert_eq!(
        reasons,
        [
            (root.join("a.md").as_path(), &SkipReason::Cycle),
            (root.join("CLAUDE.md").as_path(), &SkipReason::Cycle)
        ]
    );
    assert!(found.skipped()[0].to_string().contains("import cycle"));
}

#[test]
fn an_import_from_outside_the_project_is_skipped() {
    let (dir, config) = claude_project();
    let outside = tempfile::tempdir().expect("another directory");
    write(&outside.path().join("notes.md"), "Not the project's.\n");
    let root = dir.path();
    write(
        &root.join("CLAUDE.md"),
        &format!(
            "@{}\n@../{}/notes.md\n",
            outside.path().join("notes.md").display(),
            outside
                .path()
                .file_name()
                .and_then(|name| name.to_str())
                .expect("a name")
        ),
    );
    let found = Instructions::discover(&config, root, None).expect("found");
    assert_eq!(sections(&found), [("project:CLAUDE.md", 200)]);
    let skipped = found.skipped();
    assert_eq!(
        skipped.len(),
        1 + usize::from(outside.path().parent() == root.parent())
    );
    assert!(
        skipped.iter().all(
            |skipped| matches!(skipped.reason, SkipReason::Outside { .. })
                && skipped.imported_by.is_some()
        ),
        "{skipped:?}"
    );
}

#[test]
fn imported_files_share_the_budget_nearest_first() {
    let (dir, config) = claude_project();
    let root = dir.path();
    let sub = root.join("sub");
    write(&root.join("CLAUDE.md"), "Root.\n");
    write(&sub.join("CLAUDE.md"), "Sub.\n@big.md\n");
    let big: String = (0..100).map(|n| format!("Big line {n:03}.\n")).collect();
    write(&sub.join("big.md"), &big);
    let found = Instructions::discover(&config.with_max_bytes(600), &sub, None).expect("found");
    // The working directory's file and its import come first; the import
    // is cut, and the root's file, farthest, is left out.
    assert_eq!(
        sections(&found),
        [("project:sub/CLAUDE.md", 201), ("project:sub/big.md", 202)]
    );
    assert!(
        found
            .file("project:sub/big.md")
            .is_some_and(InstructionFile::is_cut)
    );
    let left_out = found.left_out().expect("the root's file left out");
    assert_eq!(left_out.files.len(), 1);
    assert_eq!(left_out.files[0].path, root.join("CLAUDE.md"));
    assert_eq!(
        left_out.text,
        format!(
            "[dsh left out 1 instruction file to fit their budget: {}; use the read tool on it \
             for what it has to say]",
            root.join("CLAUDE.md").display()
        )
    );
    assert!(in_budget(&found) <= 600, "{}", in_budget(&found));
}

#[test]
fn the_files_left_out_are_named_from_the_farthest_to_the_nearest() {
    let nested = Nested::new();
    write(
        &nested.root().join("sub/deeper/AGENTS.md"),
        &"Deeper.\n".repeat(100),
    );
    let home = tempfile::tempdir().expect("a config dir");
    let user = home.path().join("dsh/AGENTS.md");
    write(&user, "User: be brief.\n");
    let budget = config().with_max_bytes(700);
    let found = Instructions::discover(&budget, &nested.cwd(), Some(&user)).expect("found");
    let left_out = found.left_out().expect("files left out");
    let paths: Vec<&Path> = left_out
        .files
        .iter()
        .map(|file| file.path.as_path())
        .collect();
    let (root, sub) = (
        nested.root().join("AGENTS.md"),
        nested.root().join("sub/AGENTS.md"),
    );
    assert_eq!(paths, [user.as_path(), root.as_path(), sub.as_path()]);
    assert!(
        left_out.text.starts_with(&format!(
            "[dsh left out 3 instruction files to fit their budget: from {} to {}; use the read tool on them",
            user.display(),
            sub.display()
        )),
        "{}",
        left_out.text
    );
    assert_eq!(sections(&found), [("project:sub/deeper/AGENTS.md", 201)]);
    assert!(in_budget(&found) <= 700, "{}", in_budget(&found));
}
