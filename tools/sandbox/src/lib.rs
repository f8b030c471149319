//! What a process dsh starts may change: a [Landlock] sandbox for `bash`
//! commands and stdio MCP servers, and the prompt section that tells the
//! model the policy in force.
//!
//! A [`Sandbox`] is a policy: a [`SandboxMode`], whether the network is
//! reachable, the directories writable besides the session's, and whether
//! a machine that cannot enforce it may run commands anyway. It is a value
//! a host decides once (from its deployment, a command-line override) and
//! hands to every kind of child; this crate only applies it:
//!
//! - [`Sandbox::confine`] prepares the kernel's ruleset in the parent, and
//!   [`Confinement::apply_to`] makes a [`Command`](std::process::Command)
//!   enter it between `fork` and `exec` (Landlock restricts the calling
//!   thread and everything it then starts; the child is single-threaded
//!   there, and nothing is allocated: the ruleset was built before).
//! - [`Sandbox::may_write`] is the same writable set for tools that write
//!   in dsh's own process (`write`, `edit`), which Landlock cannot confine
//!   without confining dsh.
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
//! let status = command.status()?; // `touch` is refused: /etc is not writable
//! assert!(!status.success());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [Landlock]: https://docs.kernel.org/userspace-api/landlock.html
#![deny(missing_docs)]

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
