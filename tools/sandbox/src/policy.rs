//! The policy ([`Sandbox`]) and its application to a child process
//! ([`Confinement`]).

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, RulesetError, Scope, path_beneath_rules,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::isolate::Isolation;
use crate::protect::protected_in;
use crate::support::{Support, support};

/// The Landlock ABI whose rights the sandbox handles: file system rights
/// up to truncation (v3), TCP bind and connect (v4). On an older kernel
/// the rights it lacks are left unhandled (best effort), which
/// [`support`] reports.
const FS_ABI: ABI = ABI::V4;

/// How much a sandboxed process may change; ordered by how much (a
/// ceiling is compared with `<=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Reads anywhere; writes nowhere but `/dev/null`.
    ReadOnly,
    /// Reads anywhere; writes under the session's working directory, the
    /// directories the front end adds, `writable`, and the temporary
    /// directory.
    WorkspaceWrite,
    /// No sandbox: the process may change what the user may.
    FullAccess,
}

impl SandboxMode {
    /// Every mode, in the order of how much they allow.
    pub const ALL: [Self; 3] = [Self::ReadOnly, Self::WorkspaceWrite, Self::FullAccess];

    /// The mode's name as a deployment writes it: `workspace-write`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::FullAccess => "full-access",
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is no [`SandboxMode`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is no sandbox mode; choose `read-only`, `workspace-write` or `full-access`")]
pub struct UnknownMode(pub String);

impl FromStr for SandboxMode {
    type Err = UnknownMode;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|mode| mode.as_str() == name)
            .ok_or_else(|| UnknownMode(name.to_owned()))
    }
}

/// A sandbox policy: what a command or server dsh starts may change, and
/// whether it may reach the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    mode: SandboxMode,
    network: bool,
    writable: Vec<PathBuf>,
    required: bool,
    /// The temporary directory `workspace-write` lets a process write.
    temp: PathBuf,
    /// Files protected besides those in every writable directory: the
    /// deployment's own.
    protected: Vec<PathBuf>,
    /// The kernel the policy is applied on, when it is not the running
    /// one's probe (a test's).
    kernel: Option<Support>,
}

impl Sandbox {
    /// A policy of `mode`, its network the mode's default (reachable in
    /// `full-access` only), no directory writable besides the session's,
    /// and required: where the kernel cannot enforce it, nothing runs.
    pub fn new(mode: SandboxMode) -> Self {
        Self {
            mode,
            network: mode == SandboxMode::FullAccess,
            writable: Vec::new(),
            required: true,
            temp: std::env::temp_dir(),
            protected: Vec::new(),
            kernel: None,
        }
    }

    /// The policy with `files` read-only to commands, servers and the file
    /// tools even inside a writable directory (the deployment file), unless
    /// `writable` names a directory holding them inside a writable root.
    pub fn with_protected(mut self, files: impl IntoIterator<Item = PathBuf>) -> Self {
        self.protected.extend(files);
        self
    }

    /// The policy applied as on a kernel that enforces `support` (at most
    /// what the running one does): how a machine lacking a mechanism is
    /// tested.
    pub fn with_kernel(mut self, support: Support) -> Self {
        self.kernel = Some(support);
        self
    }

    /// What the kernel the policy is applied on enforces.
    pub fn kernel(&self) -> Support {
        self.kernel.unwrap_or_else(support)
    }

    /// The policy with `dir` as the temporary directory processes may
    /// write in `workspace-write`, in place of the process's own
    /// (`TMPDIR`, else `/tmp`).
    pub fn with_temp_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.temp = dir.into();
        self
    }

    /// The policy with its network reachable (`true`) or not.
    pub fn with_network(mut self, network: bool) -> Self {
        self.network = network;
        self
    }

    /// The policy with `directories` writable too (in `workspace-write`),
    /// after those it had.
    pub fn with_writable(mut self, directories: impl IntoIterator<Item = PathBuf>) -> Self {
        self.writable.extend(directories);
        self
    }

    /// The policy, saying whether a machine whose kernel cannot enforce it
    /// refuses to run (`true`, the default) or runs without it.
    pub fn with_required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// The policy in another mode, the rest kept; the network follows the
    /// new mode's default only where it was the old one's.
    pub fn in_mode(&self, mode: SandboxMode) -> Self {
        let network = if self.network == Self::new(self.mode).network {
            Self::new(mode).network
        } else {
            self.network
        };
        Self {
            mode,
            network,
            ..self.clone()
        }
    }

    /// Its mode.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// Whether the network is reachable.
    pub fn network(&self) -> bool {
        self.network || self.mode == SandboxMode::FullAccess
    }

    /// Whether a machine that cannot enforce the policy refuses to run.
    pub fn required(&self) -> bool {
        self.required
    }

    /// The policy on this machine, in one line for a person: its mode,
    /// its network, and what the running kernel enforces of it (`dsh
    /// check`).
    pub fn on_this_machine(&self) -> String {
        let mode = self.mode;
        if mode == SandboxMode::FullAccess {
            return format!("sandbox: {mode} (commands and servers are not confined)");
        }
        let network = if self.network() {
            "network on"
        } else {
            "network off (every socket but a local Unix pair refused)"
        };
        let kernel = self.kernel();
        let missing = kernel.missing();
        let consequence = match (missing.is_empty(), self.required) {
            (true, _) => String::new(),
            (false, true) => format!(
                "; every command will fail here ({}): set `[sandbox] required = false` to run \
                 them with what this kernel enforces, or `mode = \"full-access\"`",
                missing.join("; ")
            ),
            (false, false) => {
                "; commands run with what this kernel enforces (`required = false`)".to_owned()
            }
        };
        format!("sandbox: {mode}, {network}; this kernel: {kernel}{consequence}")
    }

    /// The paths read-only even inside the writable directories for a
    /// session working in `cwd`: [`PROTECTED`](crate::PROTECTED) in each
    /// (the temporary directory aside), git's hooks and configuration
    /// where `.git` names a repository elsewhere, and the deployment's own
    /// files, but those a `writable` entry inside a writable root lifts.
    pub fn protected_paths(&self, cwd: Option<&Path>) -> Vec<PathBuf> {
        if self.mode != SandboxMode::WorkspaceWrite {
            return Vec::new();
        }
        let real = |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let roots: Vec<PathBuf> = (cwd.map(Path::to_path_buf).into_iter())
            .chain(self.writable.iter().cloned())
            .map(|root| real(&root))
            .collect();
        let lifting: Vec<PathBuf> = (self.writable.iter())
            .map(|entry| real(entry))
            .filter(|entry| {
                roots
                    .iter()
                    .any(|root| entry.starts_with(root) && entry != root)
            })
            .collect();
        let mut paths: Vec<PathBuf> = (roots.iter())
            .flat_map(|root| protected_in(root))
            .chain(self.protected.iter().map(|file| real(file)))
            .filter(|path| !lifting.iter().any(|entry| path.starts_with(entry)))
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }

    /// The protected path `real` (absolute, links resolved) is or lies
    /// under, for a session working in `cwd`: why a write there is refused.
    pub fn protection(&self, real: &Path, cwd: Option<&Path>) -> Option<PathBuf> {
        self.protected_paths(cwd)
            .into_iter()
            .find(|protected| real.starts_with(protected))
    }

    /// The directories under which a process may write, for a session
    /// working in `cwd`: none in `read-only`; `cwd`, the writable
    /// directories and the temporary directory in `workspace-write`; `/`
    /// in `full-access`.
    pub fn writable_roots(&self, cwd: Option<&Path>) -> Vec<PathBuf> {
        match self.mode {
            SandboxMode::ReadOnly => Vec::new(),
            SandboxMode::FullAccess => vec![PathBuf::from("/")],
            SandboxMode::WorkspaceWrite => cwd
                .map(Path::to_path_buf)
                .into_iter()
                .chain(self.writable.iter().cloned())
                .chain([self.temp.clone()])
                .collect(),
        }
    }

    /// Whether `real` (absolute, links resolved) is writable under the
    /// policy for a session working in `cwd`: what the `write` and `edit`
    /// tools, which run in dsh's own process, ask. A protected path is not.
    pub fn may_write(&self, real: &Path, cwd: Option<&Path>) -> bool {
        self.writable_roots(cwd)
            .iter()
            .map(|root| std::fs::canonicalize(root).unwrap_or_else(|_| root.clone()))
            .any(|root| real.starts_with(root))
            && self.protection(real, cwd).is_none()
    }

    /// What confines a child of the policy for a session working in
    /// `cwd`, prepared here to be entered by the child. `full-access` has
    /// nothing; a kernel lacking a mechanism the policy uses is an error
    /// when the policy is required, and otherwise the child is confined
    /// with what the kernel has (unconfined where it has nothing).
    pub fn confine(&self, cwd: Option<&Path>) -> Result<Confinement, SandboxError> {
        if self.mode == SandboxMode::FullAccess {
            return Ok(Confinement::none());
        }
        let kernel = self.kernel();
        let missing = kernel.missing();
        if self.required && !missing.is_empty() {
            return Err(SandboxError::Unsupported {
                mode: self.mode,
                reason: missing.join("; "),
            });
        }
        let ruleset = match kernel.filesystem {
            true => Some(
                self.ruleset(cwd, kernel)
                    .map_err(|error| SandboxError::Ruleset {
                        mode: self.mode,
                        message: error.to_string(),
                    })?,
            ),
            false => None,
        };
        let filter = kernel
            .seccomp
            .then(|| crate::seccomp::filter(self.network()))
            .flatten();
        let isolation = kernel.namespaces.then(|| {
            let real = |path: &PathBuf| std::fs::canonicalize(path).ok();
            let writable: Vec<PathBuf> = self.writable_roots(cwd).iter().filter_map(real).collect();
            let protected: Vec<PathBuf> =
                self.protected_paths(cwd).iter().filter_map(real).collect();
            Isolation::new(!self.network(), &writable, &protected)
        });
        // In its namespaces, `/dev/shm` is a tmpfs of the command's own,
        // which the child adds to the ruleset once it is mounted.
        let shm_access = isolation.is_some().then(|| writable_access().bits());
        Ok(Confinement {
            ruleset: ruleset.and_then(Into::into),
            shm_access,
            filter,
            isolation,
        })
    }

    fn ruleset(&self, cwd: Option<&Path>, kernel: Support) -> Result<RulesetCreated, RulesetError> {
        let mut ruleset = landlock::Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(FS_ABI))?;
        if kernel.signals {
            // Signals reach only processes in the sandbox (ABI 6): not dsh,
            // not another process of the user.
            ruleset = ruleset.scope(Scope::Signal)?;
        }
        if !self.network() {
            // Without network, abstract Unix sockets are scoped too (ABI
            // v6, where the kernel has it): such a socket reaches another
            // process (a session bus, an X server) without a path.
            ruleset = ruleset
                .handle_access(AccessNet::from_all(FS_ABI))?
                .scope(Scope::AbstractUnixSocket)?;
        }
        // No device node anywhere, not even in a writable directory.
        let writable = writable_access();
        ruleset
            .create()?
            .add_rules(path_beneath_rules(["/"], AccessFs::from_read(FS_ABI)))?
            .add_rules(path_beneath_rules(
                ["/dev/null"],
                AccessFs::from_file(FS_ABI),
            ))?
            .add_rules(path_beneath_rules(self.writable_roots(cwd), writable))
    }
}

/// Why a policy cannot confine a process.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The running kernel cannot enforce the policy, and it is required.
    #[error(
        "commands run in a `{mode}` sandbox, which this machine cannot enforce ({reason}); \
         to run them anyway, set `[sandbox] mode = \"full-access\"` (or `dsh run --sandbox full-access`), \
         or `[sandbox] required = false` to run unsandboxed wherever the kernel cannot sandbox"
    )]
    Unsupported {
        /// The mode asked for.
        mode: SandboxMode,
        /// What the kernel lacks.
        reason: String,
    },
    /// The kernel refused the ruleset.
    #[error("the `{mode}` sandbox could not be prepared: {message}")]
    Ruleset {
        /// The mode asked for.
        mode: SandboxMode,
        /// The kernel's or the Landlock crate's word.
        message: String,
    },
}

/// What a process may do under a writable directory: everything but make
/// a device node.
fn writable_access() -> landlock::BitFlags<AccessFs> {
    AccessFs::from_all(FS_ABI) & !(AccessFs::MakeChar | AccessFs::MakeBlock)
}

/// Enters the Landlock ruleset `ruleset` (`no_new_privs` first, as the
/// kernel requires of an unprivileged process).
fn restrict_self(ruleset: std::os::fd::RawFd) -> io::Result<()> {
    // SAFETY: `prctl` with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `landlock_restrict_self` on a ruleset descriptor this process
    // holds, without flags.
    if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// What confines one child process, prepared in the parent: its
/// namespaces, its Landlock ruleset and its seccomp filter.
#[derive(Debug)]
pub struct Confinement {
    /// The Landlock ruleset's descriptor.
    ruleset: Option<OwnedFd>,
    /// The rights on the private `/dev/shm`, with namespaces.
    shm_access: Option<u64>,
    filter: Option<seccompiler::BpfProgram>,
    isolation: Option<Isolation>,
}

impl Confinement {
    /// No confinement: the child may do what the user may.
    pub fn none() -> Self {
        Self {
            ruleset: None,
            shm_access: None,
            filter: None,
            isolation: None,
        }
    }

    /// Whether the child will be confined.
    pub fn is_confined(&self) -> bool {
        self.ruleset.is_some() || self.filter.is_some() || self.isolation.is_some()
    }

    /// Makes `command`'s process enter the sandbox between `fork` and
    /// `exec`: what it then runs, and everything that starts, is
    /// confined. With namespaces, the process `command` starts waits for
    /// the command, which runs as the first process of its own PID
    /// namespace, and exits as it does. A spawn whose child cannot enter
    /// the sandbox fails with the kernel's error.
    pub fn apply_to(self, command: &mut std::process::Command) {
        use std::os::unix::process::CommandExt as _;
        if !self.is_confined() {
            return;
        }
        let Self {
            ruleset,
            shm_access,
            filter,
            isolation,
        } = self;
        let enter = move || {
            if let Some(isolation) = &isolation {
                isolation.enter()?;
            }
            crate::caps::drop_all_but_kept()?;
            // System calls on a ruleset built in the parent: nothing here
            // allocates.
            if let Some(ruleset) = &ruleset {
                if let Some(access) = shm_access {
                    crate::isolate::allow_private_shm(ruleset.as_raw_fd(), access);
                }
                restrict_self(ruleset.as_raw_fd())?;
            }
            if let Some(filter) = &filter {
                seccompiler::apply_filter(filter)
                    .map_err(|_| io::Error::from(io::ErrorKind::PermissionDenied))?;
            }
            Ok(())
        };
        // SAFETY: `enter` makes no allocation and takes no lock: it makes
        // system calls on what the parent prepared (namespaces, mounts,
        // the ruleset, the filter), which is what may run in a forked
        // child before `exec`.
        unsafe {
            command.pre_exec(enter);
        }
    }
}
