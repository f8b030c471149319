//! `[sandbox]`: the sandbox's table in a deployment file.

use std::borrow::Borrow;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::{Sandbox, SandboxMode};

/// `[sandbox]`: what the commands and MCP servers dsh starts may change.
///
/// ```toml
/// [sandbox]
/// mode = "workspace-write"      # or "read-only", "full-access"
/// network = false
/// writable = ["/var/cache/build"]
/// required = true
/// ```
///
/// `S` is how the table holds a string: `String`, or a type that also
/// keeps where the string was written (`toml::Spanned<String>`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, bound(deserialize = "S: Deserialize<'de>"))]
pub struct SandboxTable<S = String> {
    /// `"read-only"` (commands read anywhere and write nowhere),
    /// `"workspace-write"` (they write only under the session's working
    /// directory, the editor's additional directories, `writable` and the
    /// temporary directory) or `"full-access"` (no sandbox). The `write`
    /// and `edit` tools follow the same writable set. Default:
    /// `"workspace-write"`.
    pub mode: Option<SandboxMode>,
    /// Whether sandboxed commands may reach the network. `false` refuses
    /// every socket but a local Unix pair (TCP, UDP, raw, packet, netlink;
    /// `connect` to any socket). Default: `false`; `full-access` always
    /// has it.
    pub network: Option<bool>,
    /// More directories commands may write under in `workspace-write`,
    /// each an absolute path; one inside another writable directory lifts
    /// the protected paths under it (`"/work/project/.git"`). Default:
    /// none.
    #[serde(default)]
    pub writable: Vec<S>,
    /// `true` (the default): where the kernel lacks Landlock, seccomp or
    /// namespaces, a command fails saying what and how to choose; `false`:
    /// it runs with what the kernel enforces there.
    pub required: Option<bool>,
}

impl<S> Default for SandboxTable<S> {
    fn default() -> Self {
        Self {
            mode: None,
            network: None,
            writable: Vec::new(),
            required: None,
        }
    }
}

/// The default mode: `workspace-write`.
pub const DEFAULT_MODE: SandboxMode = SandboxMode::WorkspaceWrite;

impl<S: Borrow<str> + Clone> SandboxTable<S> {
    /// The policy the table says; `Err` has every `writable` entry that is
    /// not an absolute path.
    ///
    /// ```
    /// use dsh_sandbox::{SandboxMode, SandboxTable};
    ///
    /// let table: SandboxTable = SandboxTable { mode: Some(SandboxMode::ReadOnly), ..Default::default() };
    /// assert_eq!(table.policy().expect("valid").mode(), SandboxMode::ReadOnly);
    /// let relative = SandboxTable { writable: vec!["cache".to_owned()], ..SandboxTable::default() };
    /// assert_eq!(relative.policy().expect_err("relative"), ["cache"]);
    /// ```
    pub fn policy(&self) -> Result<Sandbox, Vec<S>> {
        let relative: Vec<S> = (self.writable.iter())
            .filter(|path| !std::path::Path::new(Borrow::<str>::borrow(*path)).is_absolute())
            .cloned()
            .collect();
        if !relative.is_empty() {
            return Err(relative);
        }
        let mode = self.mode.unwrap_or(DEFAULT_MODE);
        let mut policy = Sandbox::new(mode)
            .with_writable(
                self.writable
                    .iter()
                    .map(|path| PathBuf::from(Borrow::<str>::borrow(path))),
            )
            .with_required(self.required.unwrap_or(true));
        if let Some(network) = self.network {
            policy = policy.with_network(network);
        }
        Ok(policy)
    }
}
