//! What the sandbox adds to starting a command: `true` spawned and waited
//! for unconfined, in Landlock alone (what the sandbox was before issue
//! 57), and in the whole sandbox (namespaces, a fresh `/proc`, read-only
//! mounts, Landlock, seccomp), in `workspace-write` without network (a
//! network namespace too) and with it.
//!
//! ```text
//! cargo bench -p dsh-benches --bench sandbox
//! ```

use std::process::Command;
use std::time::Duration;

use criterion::Criterion;
use dsh_sandbox::{Sandbox, SandboxMode, support};

fn sandbox(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let cwd = dir.path();
    let full = support();
    let landlock_only = dsh_sandbox::Support {
        seccomp: false,
        namespaces: false,
        ..full
    };
    let policies = [
        ("unconfined", None),
        (
            "landlock",
            Some(
                Sandbox::new(SandboxMode::WorkspaceWrite)
                    .with_kernel(landlock_only)
                    .with_required(false),
            ),
        ),
        ("sandbox", Some(Sandbox::new(SandboxMode::WorkspaceWrite))),
        (
            "sandbox_network_on",
            Some(Sandbox::new(SandboxMode::WorkspaceWrite).with_network(true)),
        ),
    ];
    let mut group = c.benchmark_group("sandbox");
    for (name, policy) in policies {
        group.bench_function(format!("true/{name}"), |b| {
            b.iter(|| {
                let mut command = Command::new("true");
                command.current_dir(cwd);
                if let Some(policy) = &policy {
                    let confinement = policy.confine(Some(cwd)).expect("confined here");
                    confinement.apply_to(&mut command);
                }
                let status = command.status().expect("true runs");
                assert!(status.success());
            });
        });
    }
    group.finish();
}

fn main() {
    dsh_benches::main(50, Duration::from_secs(3), &[sandbox]);
}
