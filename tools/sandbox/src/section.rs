//! Section `sandbox`: the policy in force, told to the model where it
//! decides what to run — bound to the `bash` tool, so it renders only for
//! an agent that has it.

use std::fmt::Write as _;

use dsh_system_prompt::{AssembleContext, prompt_section};

use crate::{Sandbox, SandboxMode, Support, support};

/// The name of the section the crate owns.
pub const SANDBOX_SECTION: &str = "sandbox";

/// Section `sandbox`, order 106 (after `tool:bash`'s habit): what `bash`
/// commands may write and whether they have a network, from the
/// [`Sandbox`] in the context; nothing without one. The working directory
/// is named, not shown: where it is, is the agent loop's fact (`<<cwd>>`).
#[prompt_section(name = "sandbox", order = 106, tool = "bash")]
fn sandbox(cx: &AssembleContext) -> String {
    cx.get::<Sandbox>()
        .map(Sandbox::describe)
        .unwrap_or_default()
}

impl Sandbox {
    /// What section `sandbox` says of this policy on the running kernel:
    /// what `bash` commands may write, whether they have a network.
    pub fn describe(&self) -> String {
        describe(self, support())
    }
}

/// The section's text for `sandbox` on a kernel that enforces `support`.
pub(crate) fn describe(sandbox: &Sandbox, support: Support) -> String {
    let mode = sandbox.mode();
    if mode == SandboxMode::FullAccess {
        return "Commands you run with bash are not sandboxed: they can change anything the \
                user can, and reach the network."
            .to_owned();
    }
    let mut text = if support.filesystem {
        format!("Commands you run with bash are sandboxed (`{mode}`): ")
    } else {
        format!(
            "Commands you run with bash should stay within a `{mode}` sandbox, which this \
             machine cannot enforce, so keep to it yourself: "
        )
    };
    match mode {
        SandboxMode::ReadOnly => text.push_str("they can read files but write none."),
        _ => {
            // The temporary directory is named as the commands see it
            // (`$TMPDIR`), not by where this machine keeps it: the prompt
            // says the policy, the same on every machine.
            text.push_str("they can write only under the session's working directory");
            let roots = sandbox.writable_roots(None);
            for directory in roots.split_last().map_or(&[][..], |(_, others)| others) {
                let _ = write!(text, ", {}", directory.display());
            }
            text.push_str(" and the temporary directory (`$TMPDIR`, else /tmp); everything else is read-only.");
            let protected: Vec<String> = (crate::PROTECTED.iter())
                .map(|path| format!("`{path}`"))
                .collect();
            let protected = protected.join(", ");
            let _ = write!(
                text,
                " Inside those, {protected} {} read-only: what runs later is not theirs to change.",
                if support.namespaces {
                    "are"
                } else {
                    "must stay"
                }
            );
        }
    }
    if support.namespaces {
        text.push_str(" They see only their own processes and can signal no other.");
    } else if support.signals {
        text.push_str(" They can signal no process but their own.");
    }
    if !sandbox.network() {
        text.push_str(if support.seccomp {
            " They have no network: every socket but a local Unix pair (`socketpair`) is \
             refused — TCP, UDP, raw, packet and netlink sockets, and connecting to any Unix \
             socket."
        } else {
            " They must not use the network."
        });
    }
    text.push_str(
        " Do not try to get around the sandbox: when a task needs more, say what and why.",
    );
    text
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    const ENFORCED: Support = Support {
        filesystem: true,
        truncate: true,
        network: true,
        abstract_unix_sockets: true,
        signals: true,
        seccomp: true,
        namespaces: true,
    };

    #[test]
    fn each_mode_says_what_commands_may_write_and_reach() {
        let workspace =
            Sandbox::new(SandboxMode::WorkspaceWrite).with_writable([PathBuf::from("/srv/cache")]);
        assert_eq!(
            describe(&workspace, ENFORCED),
            format!(
                "Commands you run with bash are sandboxed (`workspace-write`): they can write \
                 only under the session's working directory, /srv/cache and the temporary \
                 directory (`$TMPDIR`, else /tmp); everything else is read-only. Inside those, \
                 `.git/hooks`, `.git/config`, `.dsh`, `dsh.toml`, `.cursor`, `.claude`, \
                 `.github/instructions`, `.vscode` are read-only: what runs later is not theirs \
                 to change. They see only their own processes and can signal no other. They \
                 have no network: every socket but a local Unix pair (`socketpair`) is refused \
                 — TCP, UDP, raw, packet and netlink sockets, and connecting to any Unix \
                 socket. Do not try to get around the sandbox: when a task needs more, say what \
                 and why."
            )
        );
        let read_only = describe(
            &Sandbox::new(SandboxMode::ReadOnly).with_network(true),
            ENFORCED,
        );
        assert!(read_only.contains("(`read-only`): they can read files but write none."));
        assert!(!read_only.contains("network"), "{read_only}");
        assert!(!read_only.contains(".git/hooks"), "{read_only}");
        let full = describe(&Sandbox::new(SandboxMode::FullAccess), ENFORCED);
        assert!(full.contains("not sandboxed"), "{full}");
    }

    #[test]
    fn a_kernel_that_cannot_enforce_is_not_claimed_to() {
        let none = Support {
            filesystem: false,
            truncate: false,
            network: false,
            abstract_unix_sockets: false,
            signals: false,
            seccomp: false,
            namespaces: false,
        };
        let text = describe(&Sandbox::new(SandboxMode::WorkspaceWrite), none);
        assert!(text.contains("which this machine cannot enforce"), "{text}");
        assert!(text.contains("must not use the network"), "{text}");
        assert!(text.contains("must stay read-only"), "{text}");
        assert!(!text.contains("only their own processes"), "{text}");
    }

    #[test]
    fn the_section_renders_from_the_context_and_not_without_it() {
        assert_eq!(sandbox(&AssembleContext::new()), "");
        let cx = AssembleContext::new().with(Sandbox::new(SandboxMode::ReadOnly));
        assert!(sandbox(&cx).contains("`read-only`"));
    }
}
