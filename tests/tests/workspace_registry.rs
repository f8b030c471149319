//! Every crate of the workspace linked into one binary: the static registry
//! they contribute together builds, and holds exactly the sections and
//! variables expected, each with its owner — crate, item, file and line.
//!
//! This binary declares no contribution of its own, and links no fixture
//! crate (`tests/fixtures/` are test data: the duplicate pair exists to
//! fail). A crate whose only contributions are static is linked with
//! `use that_crate as _;`, as a deployment would link it.

use std::collections::BTreeSet;

use dsh_system_prompt::{AssembleContext, Owner, SystemPrompt};
use dsh_tools::Tool;

use dsh_agent_loop as _;
use dsh_agent_types as _;
use dsh_deployment as _;
use dsh_http as _;
use dsh_prompt_template as _;
use dsh_sandbox as _;
use dsh_session_store as _;
use dsh_tool_bash as _;
use dsh_tool_fs as _;
use dsh_tool_mcp as _;
use dsh_tool_subagent as _;
use dsh_tool_todo as _;
use dsh_tools as _;

/// How this test reaches a workspace member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// A library: a dev-dependency of this crate, linked above.
    Linked,
    /// The proc-macro crate: it runs in the compiler, and its output is in
    /// the crates that use it; it has nothing to link.
    ProcMacro,
    /// A binary with no library target (`dsh`): nothing can link it, so it
    /// must declare no static contribution (checked below); `cli/tests`
    /// checks what it prints.
    Binary,
    /// This crate.
    ThisCrate,
    /// The benchmarks (`dsh-benches`): test data and timing, never part of
    /// a deployment. Its library is empty (checked below), and what its
    /// benchmarks link, the 1,000-section fixture, exists to be timed.
    Benchmarks,
    /// The MCP test server (`dsh-mcp-test-server`): a fixture the tests
    /// start as a process, never part of a deployment, so it must declare
    /// no static contribution (checked below).
    TestServer,
    /// The macros' UI tests (`dsh-macros-ui-tests`): its library is empty
    /// (checked below), and its cases are test data that trybuild compiles
    /// one by one, never linked into anything.
    UiTests,
}

/// Every member of the workspace, by path, with its package name.
const MEMBERS: &[(&str, &str, Reach)] = &[
    ("template", "dsh-prompt-template", Reach::Linked),
    ("core", "dsh-system-prompt", Reach::Linked),
    ("macros", "dsh-system-prompt-macros", Reach::ProcMacro),
    ("macros/ui", "dsh-macros-ui-tests", Reach::UiTests),
    ("agent-loop", "dsh-agent-loop", Reach::Linked),
    ("agent-loop/types", "dsh-agent-types", Reach::Linked),
    ("http", "dsh-http", Reach::Linked),
    ("tools/registry", "dsh-tools", Reach::Linked),
    ("tools/bash", "dsh-tool-bash", Reach::Linked),
    ("tools/fs", "dsh-tool-fs", Reach::Linked),
    ("tools/todo", "dsh-tool-todo", Reach::Linked),
    ("tools/subagent", "dsh-tool-subagent", Reach::Linked),
    ("tools/mcp", "dsh-tool-mcp", Reach::Linked),
    (
        "tools/mcp/test-server",
        "dsh-mcp-test-server",
        Reach::TestServer,
    ),
    ("tools/sandbox", "dsh-sandbox", Reach::Linked),
    ("store", "dsh-session-store", Reach::Linked),
    ("deployment", "dsh-deployment", Reach::Linked),
    ("cli", "dsh-cli", Reach::Binary),
    ("tests", "dsh-tests", Reach::ThisCrate),
    ("benches", "dsh-benches", Reach::Benchmarks),
];

const WORKSPACE_MANIFEST: &str = include_str!("../../Cargo.toml");
const THIS_MANIFEST: &str = include_str!("../Cargo.toml");
const THIS_FILE: &str = include_str!("workspace_registry.rs");

fn manifest(text: &str, path: &str) -> toml::Table {
    text.parse()
        .unwrap_or_else(|error| panic!("{path} is not TOML: {error}"))
}

fn package_name(member: &str) -> String {
    let path = format!("{}/../{member}/Cargo.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"));
    manifest(&text, &path)["package"]["name"]
        .as_str()
        .unwrap_or_else(|| panic!("{path} has no package.name"))
        .to_owned()
}

/// The table above is the workspace, and every library in it is linked
/// here: a new member fails this test until it is added, so "every crate"
/// stays true.
#[test]
fn the_test_reaches_every_member_of_the_workspace() {
    let workspace = manifest(WORKSPACE_MANIFEST, "Cargo.toml");
    let members: Vec<&str> = workspace["workspace"]["members"]
        .as_array()
        .expect("workspace.members is an array")
        .iter()
        .map(|member| member.as_str().expect("a member is a path"))
        .collect();
    let listed: Vec<&str> = MEMBERS.iter().map(|(path, ..)| *path).collect();
    assert_eq!(
        listed, members,
        "MEMBERS must list the workspace's members, in the order of Cargo.toml"
    );

    let this = manifest(THIS_MANIFEST, "tests/Cargo.toml");
    let dev_dependencies = this["dev-dependencies"]
        .as_table()
        .expect("tests/Cargo.toml has dev-dependencies");
    for (path, package, reach) in MEMBERS {
        assert_eq!(package_name(path), *package, "the package at {path}");
        if *reach == Reach::Linked {
            assert!(
                dev_dependencies.contains_key(*package),
                "{package} is not a dev-dependency of dsh-tests"
            );
            let ident = package.replace('-', "_");
            let links = |line: &str| {
                line == format!("use {ident} as _;") || line.starts_with(&format!("use {ident}::"))
            };
            assert!(
                THIS_FILE.lines().any(links),
                "this file does not link {package}: add `use {ident} as _;`"
            );
        }
        if matches!(
            reach,
            Reach::Binary | Reach::Benchmarks | Reach::UiTests | Reach::TestServer
        ) {
            assert_no_static_contributions(path);
        }
    }
}

/// A crate nothing can link must declare no static contribution: it would
/// never be installed. Reads every `.rs` file under `<member>/src`.
fn assert_no_static_contributions(member: &str) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(member)
        .join("src");
    let mut dirs = vec![root];
    let mut files = 0;
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|error| panic!("{dir:?}: {error}")) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files += 1;
                let text = std::fs::read_to_string(&path).expect("a source file");
                for attribute in ["prompt_section", "prompt_variable"] {
                    assert!(
                        !text.contains(&format!("#[{attribute}"))
                            && !text.contains(&format!("::{attribute}(")),
                        "{path:?} declares a #[{attribute}], but {member} is a binary that nothing \
                         links: move it to a library crate"
                    );
                }
            }
        }
    }
    assert!(files > 0, "no source files under {member}/src");
}

/// What a contribution's owner must be: crate, item, and the file and the
/// text of the line that declares it.
struct Expected {
    krate: &'static str,
    item: &'static str,
    file: &'static str,
    source: &'static str,
    declaration: &'static str,
}

const PROMPT_RS: &str = include_str!("../../agent-loop/src/prompt.rs");
const BASH_RS: &str = include_str!("../../tools/bash/src/lib.rs");
const SANDBOX_RS: &str = include_str!("../../tools/sandbox/src/section.rs");
const FS_RS: &str = include_str!("../../tools/fs/src/lib.rs");
const COMPACTION_RS: &str = include_str!("../../agent-loop/src/compaction.rs");

const fn agent_loop(item: &'static str, declaration: &'static str) -> Expected {
    Expected {
        krate: "dsh-agent-loop",
        item,
        file: "agent-loop/src/prompt.rs",
        source: PROMPT_RS,
        declaration,
    }
}

impl Expected {
    /// The 1-based line of the one line of `source` that contains
    /// `declaration`.
    fn line(&self) -> u32 {
        let lines: Vec<usize> = self
            .source
            .lines()
            .enumerate()
            .filter(|(_, line)| line.contains(self.declaration))
            .map(|(at, _)| at + 1)
            .collect();
        match lines[..] {
            [line] => u32::try_from(line).expect("a short file"),
            _ => panic!(
                "{:?} is on lines {lines:?} of {}: expected one",
                self.declaration, self.file
            ),
        }
    }

    fn check(&self, what: &str, owner: &Owner) {
        assert_eq!(
            (
                owner.krate.as_str(),
                owner.item.as_str(),
                owner.file.as_str(),
                owner.line
            ),
            (self.krate, self.item, self.file, self.line()),
            "the owner of {what}"
        );
    }
}

#[test]
fn the_full_static_registry_builds_with_the_expected_owners() {
    let prompt = SystemPrompt::new().expect("the workspace's statics install together");
    let assembly = prompt.assemble(&AssembleContext::new());

    // Sections, in render order: name, order, tool, owner.
    let sections = [
        (
            "agent:persona",
            0,
            None,
            agent_loop("dsh_agent_loop::prompt::persona", "fn persona("),
        ),
        // Empty, so not active, but in every assembly: the compaction
        // request's instruction (`dsh_agent_loop::compaction`).
        (
            "compaction:instruction",
            0,
            None,
            Expected {
                krate: "dsh-agent-loop",
                item: "dsh_agent_loop::compaction::compaction_instruction",
                file: "agent-loop/src/compaction.rs",
                source: COMPACTION_RS,
                declaration: "fn compaction_instruction(",
            },
        ),
        (
            "tool:read",
            100,
            Some("read"),
            Expected {
                krate: "dsh-tool-fs",
                item: "dsh_tool_fs::READ_HABIT",
                file: "tools/fs/src/lib.rs",
                source: FS_RS,
                declaration: "pub const READ_HABIT: &str",
            },
        ),
        (
            "tool:write",
            101,
            Some("write"),
            Expected {
                krate: "dsh-tool-fs",
                item: "dsh_tool_fs::WRITE_HABIT",
                file: "tools/fs/src/lib.rs",
                source: FS_RS,
                declaration: "pub const WRITE_HABIT: &str",
            },
        ),
        (
            "tool:edit",
            102,
            Some("edit"),
            Expected {
                krate: "dsh-tool-fs",
                item: "dsh_tool_fs::EDIT_HABIT",
                file: "tools/fs/src/lib.rs",
                source: FS_RS,
                declaration: "pub const EDIT_HABIT: &str",
            },
        ),
        (
            "tool:bash",
            105,
            Some("bash"),
            Expected {
                krate: "dsh-tool-bash",
                item: "dsh_tool_bash::EXIT_CODE_HABIT",
                file: "tools/bash/src/lib.rs",
                source: BASH_RS,
                declaration: "pub const EXIT_CODE_HABIT: &str",
            },
        ),
        // Empty without a sandbox in the context, but in every assembly.
        (
            "sandbox",
            106,
            Some("bash"),
            Expected {
                krate: "dsh-sandbox",
                item: "dsh_sandbox::section::sandbox",
                file: "tools/sandbox/src/section.rs",
                source: SANDBOX_RS,
                declaration: "fn sandbox(",
            },
        ),
    ];
    let names: Vec<&str> = assembly
        .sections
        .iter()
        .map(|section| section.name().as_str())
        .collect();
    let expected_names: Vec<&str> = sections.iter().map(|(name, ..)| *name).collect();
    assert_eq!(
        names, expected_names,
        "the static sections, in render order"
    );
    for (name, order, tool, owner) in &sections {
        let section = assembly.sections.get(name).expect("listed above");
        assert_eq!(section.order(), *order, "the order of {name}");
        assert_eq!(
            section.tool().map(|tool| tool.as_str()),
            *tool,
            "the tool of {name}"
        );
        owner.check(name, section.owner());
        assert_eq!(
            prompt.section_owner(name).as_ref(),
            Some(section.owner()),
            "the registry and the assembly agree on the owner of {name}"
        );
    }

    let variables = [
        (
            "cwd",
            agent_loop("dsh_agent_loop::prompt::cwd", "pub fn cwd("),
        ),
        (
            "model",
            agent_loop("dsh_agent_loop::prompt::model", "pub fn model("),
        ),
    ];
    let names: Vec<&str> = assembly.variables.names().collect();
    let expected_names: Vec<&str> = variables.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, expected_names, "the static variables");
    for (name, owner) in &variables {
        owner.check(name, assembly.variables.owner(name).expect("listed above"));
    }
}

/// A section bound to a tool names a tool that a linked crate provides,
/// under the name that crate's tool really has: otherwise its guidance
/// could never render.
#[test]
fn every_tool_bound_section_names_a_tool_of_the_workspace() {
    let prompt = SystemPrompt::new().expect("install");
    let assembly = prompt.assemble(&AssembleContext::new());
    // The subagent tool is left out: it is built per deployment, bound to
    // a provider, under a name the deployment chooses.
    let tools: Vec<Box<dyn Tool>> = vec![
        Box::new(dsh_tool_bash::BashTool::new()),
        Box::new(dsh_tool_fs::ReadTool::new()),
        Box::new(dsh_tool_fs::WriteTool::new()),
        Box::new(dsh_tool_fs::EditTool::new()),
        Box::new(dsh_tool_todo::TodoWriteTool::new()),
    ];
    let provided: BTreeSet<&str> = tools.iter().map(|tool| tool.name()).collect();
    let bound: Vec<(&str, &str)> = assembly
        .sections
        .iter()
        .filter_map(|section| Some((section.name().as_str(), section.tool()?.as_str())))
        .collect();
    assert!(!bound.is_empty(), "the tool crates declare bound sections");
    for (section, tool) in bound {
        assert!(
            provided.contains(tool),
            "section {section} is bound to `{tool}`, which no tool of the workspace is \
             named (tools: {provided:?})"
        );
    }
}
