//! The system calls a sandboxed process is refused (`EPERM`), as a
//! seccomp filter built in the parent: what Landlock does not govern.
//!
//! Always: `ptrace` and `process_vm_readv`/`writev` (another process's
//! memory), `mknod` of a device, and every call that changes the mount
//! table. Without network: every socket but a Unix stream or sequenced
//! one, and for those no `connect`, `bind`, `listen` or `accept` — a local
//! pair (`socketpair`) is what remains — no `sendto` with an address and
//! no `io_uring` (which would reach sockets around this filter).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

/// Calls refused whatever the policy.
const ALWAYS_REFUSED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fsconfig,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
];

/// Calls refused without network, whatever their arguments.
const REFUSED_WITHOUT_NETWORK: &[libc::c_long] = &[
    libc::SYS_connect,
    libc::SYS_bind,
    libc::SYS_listen,
    libc::SYS_accept,
    libc::SYS_accept4,
    libc::SYS_io_uring_setup,
];

/// The filter of a policy with (`network`) or without network, for this
/// machine's architecture; `None` where seccomp filters cannot be built
/// for it.
pub(crate) fn filter(network: bool) -> Option<BpfProgram> {
    let arch = std::env::consts::ARCH.try_into().ok()?;
    let filter = SeccompFilter::new(rules(network)?, SeccompAction::Allow, refuse(), arch).ok()?;
    filter.try_into().ok()
}

fn refuse() -> SeccompAction {
    SeccompAction::Errno(libc::EPERM as u32)
}

fn rules(network: bool) -> Option<BTreeMap<i64, Vec<SeccompRule>>> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let mut refused: Vec<libc::c_long> = ALWAYS_REFUSED.to_vec();
    if !network {
        refused.extend(REFUSED_WITHOUT_NETWORK);
    }
    for call in refused {
        rules.insert(call, Vec::new());
    }
    // A device node: `mknod(path, mode, dev)`, `mknodat(dir, path, mode, dev)`.
    let device = |mode_arg| {
        [libc::S_IFCHR, libc::S_IFBLK]
            .into_iter()
            .map(|kind| {
                rule(&[(
                    mode_arg,
                    SeccompCmpOp::MaskedEq(libc::S_IFMT.into()),
                    kind.into(),
                )])
            })
            .collect::<Option<Vec<_>>>()
    };
    #[cfg(target_arch = "x86_64")]
    rules.insert(libc::SYS_mknod, device(1)?);
    rules.insert(libc::SYS_mknodat, device(2)?);
    if !network {
        // `socket(domain, type, protocol)` and `socketpair(domain, type,
        // protocol, fds)`: refused but for a Unix stream or sequenced
        // socket (a datagram one could send to a named socket outside).
        let not_local = || {
            Some(vec![
                rule(&[(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)])?,
                rule(&[
                    (0, SeccompCmpOp::Eq, libc::AF_UNIX as u64),
                    (1, SeccompCmpOp::MaskedEq(0xf), libc::SOCK_DGRAM as u64),
                ])?,
            ])
        };
        rules.insert(libc::SYS_socket, not_local()?);
        rules.insert(libc::SYS_socketpair, not_local()?);
        // `sendto(fd, buf, len, flags, addr, addrlen)` with an address.
        rules.insert(libc::SYS_sendto, vec![rule(&[(4, SeccompCmpOp::Ne, 0)])?]);
    }
    Some(rules)
}

/// A rule of every `(argument, comparison, value)` holding.
fn rule(conditions: &[(u8, SeccompCmpOp, u64)]) -> Option<SeccompRule> {
    let conditions = conditions
        .iter()
        .map(|(arg, op, value)| {
            // Socket domains, types and file modes are `int`s: their
            // upper halves are not the caller's to set.
            let length = if *arg == 4 {
                SeccompCmpArgLen::Qword
            } else {
                SeccompCmpArgLen::Dword
            };
            SeccompCondition::new(*arg, length, op.clone(), *value).ok()
        })
        .collect::<Option<Vec<_>>>()?;
    SeccompRule::new(conditions).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_build_on_this_machine() {
        let closed = filter(false).expect("a filter without network");
        let open = filter(true).expect("a filter with network");
        assert!(closed.len() > open.len(), "{} {}", closed.len(), open.len());
    }
}
