//! No process a sandboxed command can see holds dsh's environment: the
//! secret is in this test process's own environment, as the model
//! adapter's key is in dsh's, and the command is started without it.
//!
//! The kernel shows a process's environment as it was when the process
//! started (`/proc/<pid>/environ`): the test runs itself again with the
//! secret in that environment, and checks from there.

use std::path::Path;
use std::process::Command;

use dsh_sandbox::{Sandbox, SandboxMode};

const SECRET: &str = "hunter2-of-the-parent";

#[test]
fn no_process_in_the_sandbox_shows_the_parents_environment_or_memory() {
    if std::env::var_os("DSH_TEST_PARENT_SECRET").is_none() {
        let output = Command::new(std::env::current_exe().expect("this test"))
            .args([
                "--exact",
                "no_process_in_the_sandbox_shows_the_parents_environment_or_memory",
                "--nocapture",
            ])
            .env("DSH_TEST_PARENT_SECRET", SECRET)
            .output()
            .expect("the test runs again");
        assert!(output.status.success(), "{output:?}");
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("1 passed"),
            "{output:?}"
        );
        return;
    }
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("environ-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("directory");
    let script = r#"cat /proc/$PPID/environ /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -c 'hunter[2]'
for f in /proc/[0-9]*/environ; do
  tr '\0' '\n' < $f 2>/dev/null | grep -q 'hunter[2]' && echo "in $f"
done
for p in /proc/[0-9]*; do head -c 1 $p/mem >/dev/null 2>&1 && echo "mem $p"; done
grep CapEff /proc/self/status"#;
    let run = |sandbox: Option<&Sandbox>| {
        let mut command = Command::new("bash");
        command
            .args(["-c", script])
            .current_dir(&dir)
            .env_remove("DSH_TEST_PARENT_SECRET");
        if let Some(sandbox) = sandbox {
            sandbox
                .confine(Some(&dir))
                .expect("confined")
                .apply_to(&mut command);
        }
        let output = command.output().expect("bash runs");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    // Control: outside, the parent's environment is there to read.
    let control = run(None);
    assert!(!control.starts_with("0\n"), "control: {control}");
    for mode in [SandboxMode::ReadOnly, SandboxMode::WorkspaceWrite] {
        let seen = run(Some(&Sandbox::new(mode).with_temp_dir(&dir)));
        assert!(
            seen.starts_with("0\n"),
            "{mode}: the secret was read: {seen}"
        );
        assert!(
            !seen.contains("mem /proc/1"),
            "{mode}: the first process's memory: {seen}"
        );
        // No `CAP_SYS_PTRACE` (bit 19), `CAP_SYS_ADMIN` (21), `CAP_DAC_READ_SEARCH` (2).
        let effective = seen
            .lines()
            .find_map(|line| line.strip_prefix("CapEff:"))
            .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
            .expect("CapEff");
        assert_eq!(
            effective & (1 << 19 | 1 << 21 | 1 << 2),
            0,
            "{mode}: {seen}"
        );
    }
}
