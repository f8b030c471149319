//! The tool crates' guidance reaches the prompt exactly when their tools
//! do: `tool:read` (order 100) before `tool:bash` (order 105), and a
//! section disappears with its tool from an agent's tool set.

use std::sync::Arc;

use dsh_system_prompt::{AssembleContext, SystemPrompt, render_prompt};
use dsh_tool_bash::{BashTool, EXIT_CODE_HABIT};
use dsh_tool_fs::{READ_HABIT, ReadTool};
use dsh_tools::{ToolRegistry, ToolSelection};

/// The registry as a binary builds it: every static contribution of the
/// linked crates.
fn prompt() -> SystemPrompt {
    let prompt = SystemPrompt::new().expect("the static contributions install");
    // `inventory` links only crates the binary references; this test names
    // both tool crates, so both must have registered their sections.
    for (name, krate) in [("tool:read", "dsh-tool-fs"), ("tool:bash", "dsh-tool-bash")] {
        let owner = prompt.section_owner(name);
        assert_eq!(
            owner.as_ref().map(|owner| owner.krate.as_ref()),
            Some(krate),
            "section `{name}` is not registered by {krate}"
        );
    }
    prompt
}

/// The registry of both tools.
fn tools() -> ToolRegistry {
    crate::registry(&[Arc::new(ReadTool::new()), Arc::new(BashTool::new())])
}

fn render_for(prompt: &SystemPrompt, selection: &[&str]) -> String {
    let cx = AssembleContext::new().with(ToolSelection::new(selection.iter().copied()));
    render_prompt(&prompt.assemble(&cx)).expect("the prompt renders")
}

#[test]
fn read_guidance_renders_before_bash_guidance() {
    let prompt = prompt();
    let _installed = tools().install(&prompt).expect("the tools install");
    let rendered = render_for(&prompt, &["read", "bash"]);
    let read = rendered.find(READ_HABIT).expect("tool:read renders");
    let bash = rendered.find(EXIT_CODE_HABIT).expect("tool:bash renders");
    assert!(read < bash, "{rendered}");
    assert!(rendered.contains(&format!("{READ_HABIT}\n\n{EXIT_CODE_HABIT}")));

    let assembly = prompt.assemble(&AssembleContext::default());
    for (name, order, tool) in [("tool:read", 100, "read"), ("tool:bash", 105, "bash")] {
        let section = assembly
            .sections
            .get(name)
            .expect("the section is assembled");
        assert_eq!(section.order(), order, "{name}");
        assert_eq!(
            section.tool().map(|tool| tool.as_ref()),
            Some(tool),
            "{name}"
        );
    }
    assert_eq!(
        prompt
            .assemble(&AssembleContext::default())
            .tools
            .iter()
            .map(|tool| tool.name.as_str())
            .collect::<Vec<_>>(),
        ["bash", "read"],
        "without a tool order, by name"
    );
}

#[test]
fn bash_guidance_leaves_with_bash() {
    let prompt = prompt();
    let _installed = tools().install(&prompt).expect("the tools install");
    let rendered = render_for(&prompt, &["read"]);
    assert!(rendered.contains(READ_HABIT), "{rendered}");
    assert!(!rendered.contains(EXIT_CODE_HABIT), "{rendered}");

    let rendered = render_for(&prompt, &[]);
    assert!(!rendered.contains(READ_HABIT), "{rendered}");
    assert!(!rendered.contains(EXIT_CODE_HABIT), "{rendered}");
}

#[test]
fn guidance_needs_the_tool_registered_not_only_selected() {
    let prompt = prompt();
    let rendered = render_for(&prompt, &["read", "bash"]);
    assert!(!rendered.contains(READ_HABIT), "{rendered}");
    assert!(!rendered.contains(EXIT_CODE_HABIT), "{rendered}");
}
