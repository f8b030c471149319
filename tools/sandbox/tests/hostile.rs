//! A hostile command against the sandbox, on the real kernel (as root,
//! as CI runs): what Landlock alone does not govern — other processes,
//! sockets, signals, device nodes, metadata, and the files that run later.
//!
//! Each refusal has its control: the same command outside the sandbox
//! succeeds, so a refusal is the sandbox's and not the machine's.

use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use dsh_sandbox::{Sandbox, SandboxMode, support};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("sandbox-hostile")
        .join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

fn policy(mode: SandboxMode) -> Sandbox {
    Sandbox::new(mode).with_temp_dir(scratch("temp"))
}

fn command(cwd: &Path, script: &str) -> Command {
    let mut command = Command::new("bash");
    command.args(["-c", script]).current_dir(cwd);
    command
}

fn run(sandbox: &Sandbox, cwd: &Path, script: &str) -> Output {
    let mut command = command(cwd, script);
    sandbox
        .confine(Some(cwd))
        .expect("this machine enforces the sandbox")
        .apply_to(&mut command);
    command.output().expect("bash runs")
}

fn unconfined(cwd: &Path, script: &str) -> Output {
    command(cwd, script).output().expect("bash runs")
}

fn is_root() -> bool {
    // SAFETY: `geteuid` has no precondition.
    unsafe { libc::geteuid() == 0 }
}

/// An outside process that holds a secret in its environment.
fn outside_process(secret: &str) -> Child {
    Command::new("sleep")
        .arg("60")
        .env("DSH_TEST_SECRET", secret)
        .stdin(Stdio::null())
        .spawn()
        .expect("sleep starts")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn no_environment_of_another_process_is_readable() {
    let secret = format!("hunter2-{}", std::process::id());
    let mut outside = outside_process(&secret);
    let workspace = scratch("environ");
    let script = format!(
        "cat /proc/$PPID/environ /proc/{me}/environ /proc/{other}/environ /proc/*/environ \
         2>/dev/null | tr '\\0' '\\n' | grep -c {secret}; ls /proc | grep -c '^[0-9]'",
        me = std::process::id(),
        other = outside.id(),
    );
    // Control: outside the sandbox, the secret is there to read.
    let control = unconfined(&workspace, &script);
    assert!(!control.stdout.starts_with(b"0"), "control: {control:?}");
    let output = run(&policy(SandboxMode::WorkspaceWrite), &workspace, &script);
    let lines: Vec<&str> = std::str::from_utf8(&output.stdout)
        .expect("text")
        .lines()
        .collect();
    assert_eq!(lines[0], "0", "the secret was read: {output:?}");
    // Its own processes only: bash, its pipeline, `ls`, `grep`.
    let processes: usize = lines[1].parse().expect("a count");
    assert!(processes < 10, "{processes} processes visible: {output:?}");
    let output = run(
        &policy(SandboxMode::ReadOnly),
        &workspace,
        &format!("test -e /proc/{}/environ", outside.id()),
    );
    assert!(!output.status.success(), "the outside process is visible");
    outside.kill().expect("kill");
    outside.wait().expect("reaped");
}

#[test]
fn no_signal_reaches_a_process_outside() {
    let mut outside = outside_process("x");
    let workspace = scratch("signals");
    let script = format!("kill -TERM {} || echo refused", outside.id());
    let output = run(&policy(SandboxMode::WorkspaceWrite), &workspace, &script);
    assert!(text(&output).contains("refused"), "{output:?}");
    // `$PPID` names dsh from a command it starts: outside the command's
    // own PID namespace it reads as 0, and its group's processes outside
    // the sandbox (this test, here) are beyond its signals.
    let output = run(
        &policy(SandboxMode::ReadOnly),
        &workspace,
        "kill -TERM $PPID; echo alive",
    );
    assert!(text(&output).contains("alive"), "{output:?}");
    assert!(
        outside.try_wait().expect("status").is_none(),
        "the outside process was killed"
    );
    outside.kill().expect("kill");
    outside.wait().expect("reaped");
}

/// A Perl script trying one kind of socket: `ok` when it could.
const SOCKETS: &[(&str, &str)] = &[
    (
        "udp",
        "socket(my $s, PF_INET, SOCK_DGRAM, 0) or die $!; \
         send($s, 'x', 0, pack_sockaddr_in(PORT, inet_aton('127.0.0.1'))) or die $!",
    ),
    ("raw", "socket(my $s, PF_INET, SOCK_RAW, 1) or die $!"),
    ("packet", "socket(my $s, 17, SOCK_RAW, 0) or die $!"),
    ("netlink", "socket(my $s, 16, SOCK_RAW, 0) or die $!"),
    (
        "unix",
        "socket(my $s, PF_UNIX, SOCK_STREAM, 0) or die $!; \
         connect($s, pack_sockaddr_un('SOCKET')) or die $!",
    ),
    (
        "unix-datagram",
        "socket(my $s, PF_UNIX, SOCK_DGRAM, 0) or die $!",
    ),
];

#[test]
fn without_network_every_socket_but_a_local_pair_is_refused() {
    let workspace = scratch("sockets");
    let outside = scratch("sockets-outside");
    let path = outside.join("open.sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).expect("a Unix socket");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp");
    let port = udp.local_addr().expect("address").port().to_string();
    let sandbox = policy(SandboxMode::ReadOnly);
    for (name, script) in SOCKETS {
        let script = script
            .replace("PORT", &port)
            .replace("SOCKET", &path.display().to_string());
        std::fs::write(
            workspace.join("probe.pl"),
            format!("use Socket; {script}; print 'ok'"),
        )
        .expect("probe");
        let script = "perl probe.pl";
        if is_root() || !["raw", "packet"].contains(name) {
            let control = unconfined(&workspace, script);
            assert_eq!(control.stdout, b"ok", "control {name}: {control:?}");
        }
        let output = run(&sandbox, &workspace, script);
        assert!(!output.status.success(), "{name} was allowed: {output:?}");
        assert!(
            text(&output).contains("not permitted"),
            "{name}: {output:?}"
        );
    }
    let output = run(
        &sandbox,
        &workspace,
        "perl -MSocket -e 'socketpair(my $a, my $b, PF_UNIX, SOCK_STREAM, 0) or die $!; \
         syswrite($a, \"pair\"); sysread($b, my $x, 4); print $x'",
    );
    assert_eq!(output.stdout, b"pair", "{output:?}");
    drop(listener);
}

#[test]
fn no_device_node_and_no_metadata_change_outside() {
    let workspace = scratch("devices");
    let outside = scratch("metadata-outside");
    let file = outside.join("file");
    std::fs::write(&file, "x").expect("file");
    let sandbox = policy(SandboxMode::WorkspaceWrite);
    if is_root() {
        let control = unconfined(&outside, "mknod kmsg c 1 11 && rm kmsg");
        assert!(control.status.success(), "control: {control:?}");
    }
    let output = run(&sandbox, &workspace, "mknod kmsg c 1 11");
    assert!(!output.status.success(), "{output:?}");
    assert!(!workspace.join("kmsg").exists());
    for change in [
        "chmod 777",
        "chown 65534",
        "touch -d 2001-01-01",
        "setfattr -n user.x -v y",
    ] {
        let script = format!("{change} {}", file.display());
        if change.starts_with("setfattr")
            && !unconfined(&outside, "which setfattr").status.success()
        {
            continue;
        }
        let output = run(&sandbox, &workspace, &script);
        assert!(
            !output.status.success(),
            "`{change}` was allowed: {output:?}"
        );
    }
    let output = run(
        &sandbox,
        &workspace,
        "touch mine && chmod 600 mine && echo ok",
    );
    assert_eq!(output.stdout, b"ok\n", "{output:?}");
}

/// A git repository in a fresh workspace, with one commit.
fn repository(name: &str) -> PathBuf {
    let workspace = scratch(name);
    let output = unconfined(
        &workspace,
        "git init -q . && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m init",
    );
    assert!(output.status.success(), "{output:?}");
    workspace
}

#[test]
fn what_runs_later_is_read_only_inside_the_workspace() {
    let workspace = repository("protected");
    let deployment = workspace.join("agent.toml");
    std::fs::write(&deployment, "").expect("deployment file");
    std::fs::create_dir_all(workspace.join(".vscode")).expect(".vscode");
    let sandbox = policy(SandboxMode::WorkspaceWrite).with_protected([deployment.clone()]);
    for target in [
        ".git/hooks/pre-commit",
        ".git/config",
        "agent.toml",
        ".vscode/tasks.json",
    ] {
        let output = run(
            &sandbox,
            &workspace,
            &format!("echo 'rm -rf ~' >> {target}"),
        );
        assert!(!output.status.success(), "{target} was written: {output:?}");
        assert!(
            text(&output).contains("Read-only file system"),
            "{output:?}"
        );
    }
    let output = run(
        &sandbox,
        &workspace,
        "echo fn main > main.rs && git add main.rs && \
         git -c user.name=t -c user.email=t@t commit -q -m 'a file' && git log --oneline | wc -l",
    );
    assert_eq!(output.stdout, b"2\n", "{output:?}");
    // Named in `writable`, `.git` is the command's to change.
    let lifted = sandbox.with_writable([workspace.join(".git")]);
    let output = run(&lifted, &workspace, "echo '# ok' >> .git/config && echo ok");
    assert_eq!(output.stdout, b"ok\n", "{output:?}");
}

#[test]
fn the_file_tools_refuse_a_protected_path_and_say_which() {
    let workspace = repository("may-write");
    let real = std::fs::canonicalize(&workspace).expect("canonical");
    let sandbox = policy(SandboxMode::WorkspaceWrite);
    assert!(sandbox.may_write(&real.join("src/lib.rs"), Some(&workspace)));
    let hook = real.join(".git/hooks/pre-commit");
    assert!(!sandbox.may_write(&hook, Some(&workspace)));
    assert_eq!(
        sandbox.protection(&hook, Some(&workspace)),
        Some(real.join(".git/hooks"))
    );
    assert!(!sandbox.may_write(&real.join(".claude/settings.json"), Some(&workspace)));
}

#[test]
fn shared_memory_is_the_commands_own() {
    let workspace = scratch("shm");
    let marker = format!("dsh-sandbox-shm-{}", std::process::id());
    let output = run(
        &policy(SandboxMode::ReadOnly),
        &workspace,
        &format!("echo x > /dev/shm/{marker} && ls /dev/shm"),
    );
    assert_eq!(
        output.stdout,
        format!("{marker}\n").as_bytes(),
        "{output:?}"
    );
    assert!(
        !Path::new("/dev/shm").join(&marker).exists(),
        "written to the host's"
    );
}

#[test]
fn cargo_test_of_a_real_crate_runs_inside() {
    // A crate of its own, written here rather than by `cargo new`: under
    // a target directory inside this repository, `cargo new` would add
    // it to the repository's workspace, and `cargo test` would write the
    // repository's lock file. Its own `[workspace]` makes it the root.
    let probe = scratch("cargo").join("probe");
    std::fs::create_dir_all(probe.join("src")).expect("the probe's directory");
    std::fs::write(
        probe.join("Cargo.toml"),
        "[package]\nname = \"probe\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .expect("its manifest");
    std::fs::write(
        probe.join("src/lib.rs"),
        "#[test]\nfn adds() {\n    assert_eq!(1 + 1, 2);\n}\n",
    )
    .expect("its source");
    let output = run(
        &policy(SandboxMode::WorkspaceWrite),
        &probe,
        &format!(
            "TMPDIR={} CARGO_TARGET_DIR=target cargo test -q --offline 2>&1",
            scratch("temp").display()
        ),
    );
    assert!(output.status.success(), "{output:?}");
    assert!(text(&output).contains("1 passed"), "{output:?}");
}

#[test]
fn an_unprivileged_user_is_isolated_too() {
    if !is_root() {
        // Run as any user, the other tests are this one.
        return;
    }
    let mut command = command(Path::new("/"), "ls /proc | grep -c '^[0-9]'; id -u");
    command.uid(65534).gid(65534);
    policy(SandboxMode::ReadOnly)
        .confine(Some(Path::new("/")))
        .expect("confined")
        .apply_to(&mut command);
    let output = command.output().expect("bash runs");
    assert!(output.status.success(), "{output:?}");
    let out = String::from_utf8_lossy(&output.stdout);
    let mut lines = out.lines();
    let processes: usize = lines.next().and_then(|n| n.parse().ok()).expect("count");
    assert!(processes < 10, "{out}");
    assert_eq!(lines.next(), Some("65534"), "{out}");
}

#[test]
fn a_kernel_lacking_a_mechanism_refuses_or_runs_with_what_it_has() {
    let full = support();
    assert!(
        full.filesystem && full.seccomp && full.namespaces,
        "{full:?}"
    );
    let workspace = scratch("kernels");
    let outside = scratch("kernels-outside");
    let target = outside.join("escaped");
    let cases = [
        (
            "Landlock",
            dsh_sandbox::Support {
                filesystem: false,
                network: false,
                ..full
            },
        ),
        (
            "namespaces",
            dsh_sandbox::Support {
                namespaces: false,
                ..full
            },
        ),
        (
            "seccomp",
            dsh_sandbox::Support {
                seccomp: false,
                ..full
            },
        ),
    ];
    for (lacking, kernel) in cases {
        let sandbox = policy(SandboxMode::WorkspaceWrite).with_kernel(kernel);
        let error = sandbox
            .confine(Some(&workspace))
            .expect_err(lacking)
            .to_string();
        assert!(error.contains("required = false"), "{error}");
        assert!(
            sandbox
                .on_this_machine()
                .contains("every command will fail"),
            "{lacking}"
        );
        let best_effort = sandbox.with_required(false);
        assert!(best_effort.on_this_machine().contains("required = false"));
        // What the kernel still has still holds: no write outside, no
        // network where seccomp or a network namespace refuses it.
        let output = run(
            &best_effort,
            &workspace,
            &format!("echo x > {}", target.display()),
        );
        assert!(!output.status.success(), "{lacking}: {output:?}");
        assert!(!target.exists(), "{lacking}");
        let output = run(
            &best_effort,
            &workspace,
            "exec 3<>/dev/udp/127.0.0.1/9 && echo sent",
        );
        assert!(!output.status.success(), "{lacking}: {output:?}");
    }
    // Landlock without its network rights: seccomp refuses the network.
    let sandbox = policy(SandboxMode::WorkspaceWrite).with_kernel(dsh_sandbox::Support {
        network: false,
        ..full
    });
    let output = run(
        &sandbox,
        &workspace,
        "exec 3<>/dev/tcp/127.0.0.1/9 && echo connected",
    );
    assert!(text(&output).contains("not permitted"), "{output:?}");
}

/// The host's pids of the processes whose command line is `cmdline`.
fn pids_of(cmdline: &[u8]) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|line| line == cmdline)
        })
        .collect()
}

#[test]
fn a_background_process_outlives_the_command_and_dies_with_a_killed_one() {
    let workspace = scratch("background");
    let sandbox = policy(SandboxMode::WorkspaceWrite);
    let started = std::time::Instant::now();
    let output = run(
        &sandbox,
        &workspace,
        "sleep 31.25 > /dev/null 2>&1 & echo started",
    );
    assert_eq!(output.stdout, b"started\n", "{output:?}");
    assert!(
        started.elapsed().as_secs() < 10,
        "the call waited for the background"
    );
    // The background child may not have reached `exec` when the shell
    // answers: look for it for a few seconds (a loaded machine).
    let mut survivors = pids_of(b"sleep\x0031.25\x00");
    let looking = std::time::Instant::now();
    while survivors.is_empty() && looking.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(20));
        survivors = pids_of(b"sleep\x0031.25\x00");
    }
    assert_eq!(
        survivors.len(),
        1,
        "the background process did not outlive the call"
    );
    for pid in survivors {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    // Killed, the process the caller waits for takes its command along.
    let mut command = command(&workspace, "sleep 32.5");
    sandbox
        .confine(Some(&workspace))
        .expect("confined")
        .apply_to(&mut command);
    let mut child = command.spawn().expect("spawned");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(pids_of(b"sleep\x0032.5\x00").len(), 1, "the command runs");
    child.kill().expect("killed");
    child.wait().expect("reaped");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        pids_of(b"sleep\x0032.5\x00").is_empty(),
        "the command outlived its waiter"
    );
}
