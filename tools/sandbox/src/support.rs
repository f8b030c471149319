//! What the running kernel enforces of a sandbox: probed once, by asking
//! the kernel for the rulesets, the filter and the namespaces the sandbox
//! uses.

use std::fmt;
use std::sync::OnceLock;

use landlock::{ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, RulesetAttr, Scope};

/// What the running kernel enforces. A value of its own ([`Sandbox::with_kernel`])
/// stands for another kernel: how a policy behaves where a mechanism is
/// missing is tested with it.
///
/// [`Sandbox::with_kernel`]: crate::Sandbox::with_kernel
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// Writes are confined by Landlock (ABI 1 and later).
    pub filesystem: bool,
    /// Truncating a file outside the writable directories is refused too
    /// (Landlock ABI 3).
    pub truncate: bool,
    /// TCP `connect` and `bind` are refused by Landlock too (ABI 4).
    pub network: bool,
    /// Abstract Unix sockets are scoped without network (Landlock ABI 6).
    pub abstract_unix_sockets: bool,
    /// Signals to processes outside the sandbox are refused (Landlock ABI 6).
    pub signals: bool,
    /// System calls are filtered (seccomp): sockets without network,
    /// `ptrace`, device nodes, mounts.
    pub seccomp: bool,
    /// Namespaces: the command's own process tree and `/proc`, its own
    /// network, a read-only view of the file system but the writable
    /// directories (whose protected paths are read-only again).
    pub namespaces: bool,
}

/// What the running kernel enforces, probed on the first call.
pub fn support() -> Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    *SUPPORT.get_or_init(|| Support {
        filesystem: creates(|ruleset| ruleset.handle_access(AccessFs::from_all(ABI::V1))),
        truncate: creates(|ruleset| ruleset.handle_access(AccessFs::Truncate)),
        network: creates(|ruleset| ruleset.handle_access(AccessNet::from_all(ABI::V4))),
        abstract_unix_sockets: creates(|ruleset| ruleset.scope(Scope::AbstractUnixSocket)),
        signals: creates(|ruleset| ruleset.scope(Scope::Signal)),
        seccomp: crate::seccomp::filter(false).is_some() && seccomp_enabled(),
        namespaces: crate::isolate::probe(),
    })
}

/// Whether the kernel takes seccomp filters (`CONFIG_SECCOMP_FILTER`).
fn seccomp_enabled() -> bool {
    // SAFETY: `prctl(PR_GET_SECCOMP)` only reads the calling thread's mode.
    unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
}

/// Whether the kernel creates the ruleset `handle` makes, every right of
/// it required.
fn creates(
    handle: impl FnOnce(landlock::Ruleset) -> Result<landlock::Ruleset, landlock::RulesetError>,
) -> bool {
    let ruleset = landlock::Ruleset::default().set_compatibility(CompatLevel::HardRequirement);
    handle(ruleset).and_then(|ruleset| ruleset.create()).is_ok()
}

impl Support {
    /// What the sandbox needs and this kernel lacks, each with how to get
    /// it; empty when it enforces everything.
    pub(crate) fn missing(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if !self.filesystem {
            missing.push(
                "no Landlock, or it is not enabled (`lsm=landlock` on the kernel command line, \
                 Linux 5.13 or later)",
            );
        }
        if !self.seccomp {
            missing
                .push("no seccomp filters (`CONFIG_SECCOMP_FILTER`, x86_64, aarch64 or riscv64)");
        }
        if !self.namespaces {
            missing.push(
                "no namespaces for the command (run as root, or allow unprivileged user \
                 namespaces: `kernel.unprivileged_userns_clone = 1`, or on Ubuntu \
                 `kernel.apparmor_restrict_unprivileged_userns = 0`; Linux 5.12 or later)",
            );
        }
        missing
    }
}

impl fmt::Display for Support {
    /// One line: what is enforced, what is not.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut enforced = Vec::new();
        let mut not = Vec::new();
        let mut say = |has: bool, what: &'static str| {
            if has {
                enforced.push(what)
            } else {
                not.push(what)
            }
        };
        say(self.filesystem, "writes confined (Landlock)");
        say(self.signals, "signals outside refused (Landlock)");
        say(
            self.seccomp,
            "sockets, ptrace, device nodes and mounts filtered (seccomp)",
        );
        say(
            self.namespaces,
            "own processes, /proc and network, read-only mounts, protected paths (namespaces)",
        );
        if !enforced.is_empty() {
            write!(f, "enforced: {}", enforced.join(", "))?;
        }
        if !not.is_empty() {
            let separator = if enforced.is_empty() { "" } else { "; " };
            write!(f, "{separator}not enforced here: {}", not.join(", "))?;
        }
        Ok(())
    }
}
