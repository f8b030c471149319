//! What the running kernel enforces of a sandbox: probed once, by asking
//! the kernel for the rulesets the sandbox uses.

use std::fmt;
use std::sync::OnceLock;

use landlock::{ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, RulesetAttr, Scope};

/// What the running kernel's Landlock enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// Writes are confined (Landlock ABI 1 and later).
    pub filesystem: bool,
    /// Truncating a file outside the writable directories is refused too
    /// (ABI 3).
    pub truncate: bool,
    /// TCP `connect` and `bind` are refused without network (ABI 4).
    pub network: bool,
    /// Abstract Unix sockets are scoped without network (ABI 6).
    pub abstract_unix_sockets: bool,
}

/// What the running kernel enforces, probed on the first call.
pub fn support() -> Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    *SUPPORT.get_or_init(|| Support {
        filesystem: creates(|ruleset| ruleset.handle_access(AccessFs::from_all(ABI::V1))),
        truncate: creates(|ruleset| ruleset.handle_access(AccessFs::Truncate)),
        network: creates(|ruleset| ruleset.handle_access(AccessNet::from_all(ABI::V4))),
        abstract_unix_sockets: creates(|ruleset| ruleset.scope(Scope::AbstractUnixSocket)),
    })
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
    /// Why writes cannot be confined, when they cannot.
    pub(crate) fn filesystem_missing(&self) -> Option<String> {
        (!self.filesystem).then(|| {
            "the kernel has no Landlock, or it is not enabled: \
             `lsm=landlock` on the kernel command line, Linux 5.13 or later"
                .to_owned()
        })
    }
}

impl fmt::Display for Support {
    /// One line: what is enforced, what is not.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.filesystem {
            return f.write_str("no Landlock: commands cannot be sandboxed on this machine");
        }
        let network = if self.network {
            "TCP connect and bind refused without network"
        } else {
            "network not confined (Landlock ABI 4 needed)"
        };
        let unix = if self.abstract_unix_sockets {
            ", abstract Unix sockets scoped"
        } else {
            ""
        };
        write!(f, "Landlock: writes confined, {network}{unix}")
    }
}
