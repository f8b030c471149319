//! What a process dsh starts may change and reach: a sandbox for `bash`
//! commands and stdio MCP servers — namespaces, [Landlock] and a seccomp
//! filter, all from the kernel, nothing installed — and the prompt section
//! that tells the model the policy in force.
//!
//! A [`Sandbox`] is a policy: a [`SandboxMode`], whether the network is
//! reachable, the directories writable besides the session's, and whether
//! a machine that cannot enforce it may run commands anyway. It is a value
//! a host decides once (from its deployment, a command-line override) and
//! hands to every kind of child; this crate only applies it:
//!
//! - [`Sandbox::confine`] prepares everything in the parent, and
//!   [`Confinement::apply_to`] makes a [`Command`](std::process::Command)
//!   enter it between `fork` and `exec`, where the child is
//!   single-threaded and allocates nothing:
//!   - its own PID namespace with a fresh `/proc` (it sees and signals
//!     only its own processes; a small first process reaps, and reports
//!     the command's status to the process the caller waits for), a mount
//!     namespace in which every mount is read-only but the writable
//!     directories, whose [protected paths](PROTECTED) are read-only again,
//!     and without network a network namespace of its own (user namespace
//!     too, where dsh is not root);
//!   - Landlock: writes confined to the writable set, no device node,
//!     signals and abstract Unix sockets scoped;
//!   - seccomp: without network every socket but a local Unix pair
//!     refused, and always `ptrace`, `process_vm_*`, device nodes and
//!     mounts.
//!
//!   [`support`] says what the running kernel enforces;
//!   [`Sandbox::with_kernel`] applies a policy as on a kernel lacking
//!   some of it (how the refusals are tested).
//! - [`Sandbox::may_write`] is the same writable set, protected paths
//!   aside ([`Sandbox::protection`]), for tools that write in dsh's own
//!   process (`write`, `edit`), which the kernel cannot confine without
//!   confining dsh.
//! - Section `sandbox` (order 106, bound to the `bash` tool) renders the
//!   policy of the [`Sandbox`] in the assembly's context, as far as the
//!   running kernel enforces it ([`support`]).
//!
//! ```no_run
//! use dsh_sandbox::{Sandbox, SandboxMode};
//!
//! let sandbox = Sandbox::new(SandboxMode::WorkspaceWrite);
//! let confinement = sandbox.confine(Some("/work/project".as_ref()))?;
//! let mut command = std::process::Command::new("bash");
//! command.args(["-c", "touch /etc/nope"]);
//! confinement.apply_to(&mut command);
//! let status = command.status()?; // `touch` is refused: /etc is read-only
//! assert!(!status.success());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [Landlock]: https://docs.kernel.org/userspace-api/landlock.html
#![deny(missing_docs)]

mod caps;
mod isolate;
mod policy;
mod protect;
mod seccomp;
mod section;
mod support;
mod table;

pub use crate::policy::{Confinement, Sandbox, SandboxError, SandboxMode, UnknownMode};
pub use crate::protect::PROTECTED;
pub use crate::support::{Support, support};
pub use crate::table::{DEFAULT_MODE, SandboxTable};

pub use crate::section::SANDBOX_SECTION;
