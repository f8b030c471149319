//! The sandbox against the running kernel's Landlock: real `bash`
//! processes, real files, a real TCP listener.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dsh_sandbox::{Sandbox, SandboxMode, support};

/// A directory outside the temporary directory (which `workspace-write`
/// allows): under the target directory cargo gives integration tests.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("sandbox-tests")
        .join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// A policy of `mode` whose temporary directory is a directory of the
/// tests' own: the directories they make elsewhere are outside it, even
/// where the target directory is under the system's temporary one.
fn policy(mode: SandboxMode) -> Sandbox {
    Sandbox::new(mode).with_temp_dir(scratch("temp"))
}

fn run(sandbox: &Sandbox, cwd: &Path, script: &str) -> Output {
    let mut command = Command::new("bash");
    command.args(["-c", script]).current_dir(cwd);
    sandbox
        .confine(Some(cwd))
        .expect("this machine enforces Landlock")
        .apply_to(&mut command);
    command.output().expect("bash runs")
}

fn succeeded(output: &Output) -> bool {
    output.status.success()
}

/// Whether the command failed as the kernel refusing it does: Landlock
/// (`EACCES`), a read-only mount (`EROFS`) or seccomp (`EPERM`).
fn refused(output: &Output) -> bool {
    let stderr = String::from_utf8_lossy(&output.stderr);
    !succeeded(output)
        && [
            "Permission denied",
            "Read-only file system",
            "Operation not permitted",
        ]
        .iter()
        .any(|word| stderr.contains(word))
}

#[test]
fn the_kernel_here_enforces_writes_and_the_network() {
    // The machines dsh is tested on have Landlock ABI 7, seccomp and
    // namespaces (as root): a test below that passed because nothing was
    // enforced would prove nothing.
    let support = support();
    assert!(support.filesystem && support.network, "{support:?}");
    assert!(
        support.signals && support.seccomp && support.namespaces,
        "{support:?}"
    );
}

#[test]
fn workspace_write_writes_in_the_workspace_and_temp_only() {
    let workspace = scratch("workspace");
    let outside = scratch("outside");
    let extra = scratch("extra");
    let sandbox = policy(SandboxMode::WorkspaceWrite).with_writable([extra.clone()]);
    let script = format!(
        "echo in > inside.txt && echo extra > {extra}/x.txt && echo tmp > {tmp}/dsh-sandbox-$$ \
         && rm {tmp}/dsh-sandbox-$$ && echo ok",
        extra = extra.display(),
        tmp = scratch("temp").display()
    );
    let output = run(&sandbox, &workspace, &script);
    assert!(succeeded(&output), "{output:?}");
    assert_eq!(output.stdout, b"ok\n");
    assert!(workspace.join("inside.txt").exists());

    let target = outside.join("escaped.txt");
    let output = run(
        &sandbox,
        &workspace,
        &format!("echo out > {}", target.display()),
    );
    assert!(refused(&output), "{output:?}");
    assert!(!target.exists());
    // A link out of the workspace does not open a way out.
    std::os::unix::fs::symlink(&outside, workspace.join("link")).expect("symlink");
    let output = run(&sandbox, &workspace, "echo out > link/through-link.txt");
    assert!(!succeeded(&output), "{output:?}");
    assert!(!outside.join("through-link.txt").exists());
}

#[test]
fn read_only_writes_nowhere_but_dev_null() {
    let workspace = scratch("read-only");
    let sandbox = policy(SandboxMode::ReadOnly);
    let output = run(
        &sandbox,
        &workspace,
        "cat /etc/hostname >/dev/null && echo readable",
    );
    assert!(succeeded(&output), "{output:?}");
    assert_eq!(output.stdout, b"readable\n");
    let output = run(&sandbox, &workspace, "echo x > written.txt");
    assert!(!succeeded(&output), "{output:?}");
    assert!(!workspace.join("written.txt").exists());
}

#[test]
fn without_network_a_tcp_connection_is_refused_and_with_it_made() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    let port = listener.local_addr().expect("address").port();
    let workspace = scratch("network");
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");

    let output = run(&policy(SandboxMode::WorkspaceWrite), &workspace, &connect);
    assert!(refused(&output), "{output:?}");

    let open = policy(SandboxMode::WorkspaceWrite).with_network(true);
    let output = run(&open, &workspace, &connect);
    assert!(succeeded(&output), "{output:?}");
    assert_eq!(output.stdout, b"connected\n");
}

#[test]
fn full_access_is_not_confined() {
    let outside = scratch("full");
    let sandbox = Sandbox::new(SandboxMode::FullAccess);
    assert!(!sandbox.confine(None).expect("no ruleset").is_confined());
    let target = outside.join("anywhere.txt");
    let output = run(
        &sandbox,
        Path::new("/"),
        &format!("echo x > {}", target.display()),
    );
    assert!(succeeded(&output), "{output:?}");
    assert!(target.exists());
}

#[test]
fn may_write_is_the_same_writable_set() {
    let workspace = scratch("may-write");
    let real = std::fs::canonicalize(&workspace).expect("canonical");
    let workspace_write = policy(SandboxMode::WorkspaceWrite);
    assert!(workspace_write.may_write(&real.join("a.txt"), Some(&workspace)));
    let temp = std::fs::canonicalize(scratch("temp")).expect("canonical");
    assert!(workspace_write.may_write(&temp.join("b"), Some(&workspace)));
    assert!(!workspace_write.may_write(Path::new("/etc/passwd"), Some(&workspace)));
    assert!(!policy(SandboxMode::ReadOnly).may_write(&real.join("a.txt"), Some(&workspace)));
    assert!(Sandbox::new(SandboxMode::FullAccess).may_write(Path::new("/etc/x"), None));
}
