//! Capabilities: what a sandboxed command keeps of root's. Those that
//! reach past the sandbox — another process's memory (`CAP_SYS_PTRACE`),
//! mounts and namespaces (`CAP_SYS_ADMIN`), the network's configuration
//! (`CAP_NET_ADMIN`), raw sockets, device nodes, a file by its handle
//! around the mounts (`CAP_DAC_READ_SEARCH`), modules, raw I/O, the
//! clock, the audit log, BPF — are dropped from every set, the bounding
//! set included, so no program the command runs gets them back. What it
//! keeps is the set container runtimes keep, without `CAP_MKNOD` and
//! `CAP_NET_RAW`.
//!
//! Runs in the forked child: system calls on the stack, no allocation.

use std::io;

/// The capabilities kept, by number: `CHOWN`, `DAC_OVERRIDE`, `FOWNER`,
/// `FSETID`, `KILL`, `SETGID`, `SETUID`, `SETPCAP`, `NET_BIND_SERVICE`,
/// `SYS_CHROOT`, `AUDIT_WRITE`, `SETFCAP`.
const KEPT: [u32; 12] = [0, 1, 3, 4, 5, 6, 7, 8, 10, 18, 29, 31];

/// The highest capability number there may be.
const LAST: u32 = 63;

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct Header {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Data {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// `_LINUX_CAPABILITY_VERSION_3`: 64 bits, as two `Data`.
const VERSION_3: u32 = 0x2008_0522;

/// Drops every capability but [`KEPT`] from the calling process: the
/// bounding and ambient sets, then the effective, permitted and
/// inheritable ones. A process without the privilege to drop (no
/// capabilities to begin with) is left as it is.
pub(crate) fn drop_all_but_kept() -> io::Result<()> {
    for cap in (0..=LAST).filter(|cap| !KEPT.contains(cap)) {
        // SAFETY: `prctl` with integer arguments; a number beyond the
        // kernel's last capability is `EINVAL`, and without `CAP_SETPCAP`
        // `EPERM`: nothing to drop either way.
        unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) };
    }
    // SAFETY: as above.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: `header` and `data` are the structures `capget` fills, and
    // outlive the call.
    if unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let kept = KEPT.iter().fold(0u64, |mask, cap| mask | 1 << cap);
    for (half, data) in data.iter_mut().enumerate() {
        let mask = (kept >> (32 * half)) as u32;
        data.effective &= mask;
        data.permitted &= mask;
        data.inheritable &= mask;
    }
    // SAFETY: as for `capget`.
    if unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
