//! Namespaces: a sandboxed command's own process tree, its own `/proc`,
//! no network interface but its own when the network is off, and a view
//! of the file system in which every mount is read-only but the writable
//! roots — and inside those, the protected paths are read-only again.
//!
//! Everything here that runs in the child runs between `fork` and `exec`
//! (`Isolation::enter`): system calls on memory prepared in the parent,
//! no allocation, no lock.

use std::ffi::{CStr, CString};
use std::io;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

/// What the child does to isolate itself, prepared in the parent.
#[derive(Debug)]
pub(crate) struct Isolation {
    /// Whether a network namespace (no interface but a down loopback) is
    /// made too.
    network_off: bool,
    /// The mount points made writable again, each bound onto itself.
    writable: Vec<CString>,
    /// The mount points made read-only again inside the writable ones.
    protected: Vec<CString>,
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;

impl Isolation {
    /// The isolation of a child writing under `writable` (existing
    /// directories or files, links resolved) but not under `protected`.
    pub(crate) fn new(network_off: bool, writable: &[PathBuf], protected: &[PathBuf]) -> Self {
        Self {
            network_off,
            writable: writable.iter().filter_map(|path| c_path(path)).collect(),
            protected: protected.iter().filter_map(|path| c_path(path)).collect(),
        }
    }

    /// Enters the namespaces in the forked child, which becomes three
    /// processes: this one stays outside and exits as the command does
    /// (what the caller waits for); its child is the first process of the
    /// new PID namespace, which reaps what the command leaves running in
    /// the background; and its child returns here to `exec` the command.
    pub(crate) fn enter(&self) -> io::Result<()> {
        // SAFETY: `geteuid` has no precondition.
        let uid = unsafe { libc::geteuid() };
        // SAFETY: `getegid` has no precondition.
        let gid = unsafe { libc::getegid() };
        let mut flags = libc::CLONE_NEWPID | libc::CLONE_NEWNS;
        if self.network_off {
            flags |= libc::CLONE_NEWNET;
        }
        if uid != 0 {
            // Without privilege, the other namespaces need a user
            // namespace of their own, in which the process keeps its ids.
            flags |= libc::CLONE_NEWUSER;
        }
        // SAFETY: `unshare` takes flags only.
        check(unsafe { libc::unshare(flags) })?;
        if uid != 0 {
            map_ids(uid, gid)?;
        }
        let mut status_pipe = [0; 2];
        // SAFETY: `status_pipe` holds the two descriptors `pipe2` writes.
        check(unsafe { libc::pipe2(status_pipe.as_mut_ptr(), libc::O_CLOEXEC) })?;
        let [read_end, write_end] = status_pipe;
        // SAFETY: the process is single-threaded here (a forked child).
        let init = check(unsafe { libc::fork() })?;
        if init != 0 {
            wait_for_command(init, read_end);
        }
        // SAFETY: `close` of a descriptor this process does not use.
        unsafe { libc::close(read_end) };
        // SAFETY: `prctl` with integer arguments: until the command has
        // exited, the namespace dies with the process the caller waits for
        // (killed with its group, or alone).
        check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) })?;
        // This process is a copy of dsh that never runs a program: its
        // memory and its environment are dsh's. Not dumpable, they are
        // readable only with `CAP_SYS_PTRACE`, which the command does not
        // have (its `exec` makes it dumpable again).
        // SAFETY: `prctl` with integer arguments.
        check(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) })?;
        self.remount()?;
        // SAFETY: single-threaded, as above.
        let command = check(unsafe { libc::fork() })?;
        if command != 0 {
            reap(command, write_end);
        }
        Ok(())
    }

    /// The child's view of the file system: private, its own `/proc`,
    /// read-only but the writable roots, the protected paths read-only
    /// again; then its working directory resolved in that view.
    fn remount(&self) -> io::Result<()> {
        mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE)?;
        mount(
            Some(c"proc"),
            c"/proc",
            Some(c"proc"),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        )?;
        for path in self.writable.iter().chain(&self.protected) {
            // A path that vanished since the parent looked is skipped: it
            // cannot be written through a mount that is not there.
            ignore_missing(mount(Some(path), path, None, libc::MS_BIND | libc::MS_REC))?;
        }
        set_attr(c"/", true, MOUNT_ATTR_RDONLY, 0)?;
        for path in &self.writable {
            // Not recursive: a mount inside a writable root that is
            // read-only stays so.
            ignore_missing(set_attr(path, false, 0, MOUNT_ATTR_RDONLY))?;
        }
        for path in &self.protected {
            ignore_missing(set_attr(path, true, MOUNT_ATTR_RDONLY, 0))?;
        }
        // Shared memory (POSIX semaphores: Python's `multiprocessing`, test
        // runners' workers) is the command's own, empty: not the host's.
        ignore_missing(mount_with(
            Some(c"tmpfs"),
            c"/dev/shm",
            Some(c"tmpfs"),
            libc::MS_NOSUID | libc::MS_NODEV,
            Some(c"mode=1777"),
        ))?;
        // The working directory was resolved before the new mounts: resolve
        // it again, or relative writes go through the read-only mount below.
        let mut buffer = [0u8; libc::PATH_MAX as usize];
        // SAFETY: the buffer is as long as said and outlives the call.
        let cwd = unsafe { libc::getcwd(buffer.as_mut_ptr().cast(), buffer.len()) };
        if !cwd.is_null() {
            // SAFETY: `getcwd` wrote a NUL-terminated path into `buffer`.
            check(unsafe { libc::chdir(cwd) })?;
        }
        Ok(())
    }
}

/// Whether this process can isolate a child: a forked child enters the
/// namespaces and makes its mounts read-only, as [`Isolation::enter`] does.
pub(crate) fn probe() -> bool {
    // SAFETY: the child makes system calls only and ends with `_exit`.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: `geteuid` has no precondition.
        let uid = unsafe { libc::geteuid() };
        let mut flags = libc::CLONE_NEWPID | libc::CLONE_NEWNS | libc::CLONE_NEWNET;
        if uid != 0 {
            flags |= libc::CLONE_NEWUSER;
        }
        // SAFETY: `unshare` takes flags only.
        let entered = unsafe { libc::unshare(flags) } == 0
            && mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE).is_ok()
            && set_attr(c"/", true, MOUNT_ATTR_RDONLY, 0).is_ok();
        // SAFETY: `_exit` ends the forked child.
        unsafe { libc::_exit(if entered { 0 } else { 1 }) };
    }
    if pid < 0 {
        return false;
    }
    let mut status = 0;
    // SAFETY: `status` outlives the call.
    let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
    waited == pid && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
}

/// The path as the kernel takes it; `None` for one with a NUL byte, which
/// no file has.
fn c_path(path: &Path) -> Option<CString> {
    CString::new(path.as_os_str().as_bytes()).ok()
}

/// Maps the user and group ids the process had onto themselves in its new
/// user namespace (`setgroups` denied first, as the kernel requires).
fn map_ids(uid: libc::uid_t, gid: libc::gid_t) -> io::Result<()> {
    // A process that changed its ids (from root, by `setuid`) is not
    // dumpable, and its `/proc/self` is root's: it cannot write its maps.
    // SAFETY: `prctl` with integer arguments.
    check(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) })?;
    write_file(c"/proc/self/setgroups", b"deny")?;
    let mut line = [0u8; 40];
    write_file(c"/proc/self/uid_map", id_map(&mut line, uid))?;
    write_file(c"/proc/self/gid_map", id_map(&mut line, gid))
}

/// `"<id> <id> 1"` in `buffer`, without allocating.
fn id_map(buffer: &mut [u8; 40], id: u32) -> &[u8] {
    let mut digits = [0u8; 10];
    let mut count = 0;
    let mut rest = id;
    loop {
        digits[count] = b'0' + (rest % 10) as u8;
        count += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let mut length = 0;
    for _ in 0..2 {
        for digit in digits[..count].iter().rev() {
            buffer[length] = *digit;
            length += 1;
        }
        buffer[length] = b' ';
        length += 1;
    }
    buffer[length] = b'1';
    &buffer[..=length]
}

fn write_file(path: &CStr, content: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated.
    let fd = check(unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) })?;
    // SAFETY: `content` is valid for its length; `fd` was just opened.
    let written = unsafe { libc::write(fd, content.as_ptr().cast(), content.len()) };
    // SAFETY: `fd` is ours and closed once.
    unsafe { libc::close(fd) };
    if written < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// In the process that stays outside: closes every descriptor but the
/// read end of the status pipe (the command holds the pipes, and the
/// caller waits for `exec` on one of them), reads the command's wait
/// status from the namespace's first process, and exits as the command
/// did — or as that process did, when it ended first.
fn wait_for_command(init: libc::pid_t, read_end: libc::c_int) -> ! {
    close_all_but(read_end);
    let mut status: libc::c_int = 0;
    let mut read = 0;
    while read < std::mem::size_of::<libc::c_int>() {
        // SAFETY: reading into `status`'s bytes not yet read.
        let count = unsafe {
            libc::read(
                read_end,
                (&raw mut status).cast::<u8>().add(read).cast(),
                std::mem::size_of::<libc::c_int>() - read,
            )
        };
        if count > 0 {
            read += count as usize;
        } else if count == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    if read < std::mem::size_of::<libc::c_int>() {
        status = wait_for(init);
    }
    exit_as(status)
}

/// In the namespace's first process: closes every descriptor but the
/// write end of the status pipe, reaps every process of the namespace,
/// sends the command's status once it has exited, and exits when no
/// process is left. Once the command has exited, what it left running
/// outlives the caller's wait, as a background process outside a sandbox
/// does.
fn reap(command: libc::pid_t, write_end: libc::c_int) -> ! {
    close_all_but(write_end);
    loop {
        let mut status = 0;
        // SAFETY: `status` outlives the call.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == command {
            // SAFETY: `prctl`, `write` of `status`'s bytes and `close` of
            // the pipe's end this process owns.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, 0, 0, 0, 0);
                libc::write(
                    write_end,
                    (&raw const status).cast(),
                    std::mem::size_of::<libc::c_int>(),
                );
                libc::close(write_end);
            }
        } else if pid < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // SAFETY: `_exit` ends the process: no child is left.
            unsafe { libc::_exit(0) };
        }
    }
}

fn close_all_but(fd: libc::c_int) {
    let fd = fd as libc::c_uint;
    // SAFETY: closing descriptors this process no longer uses.
    unsafe {
        if fd > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, fd - 1, 0u32);
        }
        libc::syscall(libc::SYS_close_range, fd + 1, u32::MAX, 0u32);
    }
}

/// The wait status of the child `pid`.
fn wait_for(pid: libc::pid_t) -> libc::c_int {
    let mut status = 0;
    loop {
        // SAFETY: `status` outlives the call.
        let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
        if waited == pid {
            return status;
        }
        if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // As a shell reports a command it could not wait for.
            return 127 << 8;
        }
    }
}

/// Ends this process as a process of wait status `status` ended.
fn exit_as(status: libc::c_int) -> ! {
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        // SAFETY: the command was killed by `signal`: this process dies of
        // it too (its default action restored), so the caller sees how.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
    }
    // SAFETY: `_exit` ends the process.
    unsafe { libc::_exit(libc::WEXITSTATUS(status)) }
}

fn mount(
    source: Option<&CStr>,
    target: &CStr,
    kind: Option<&CStr>,
    flags: libc::c_ulong,
) -> io::Result<()> {
    mount_with(source, target, kind, flags, None)
}

/// `mount(2)` with the file system's `options`.
fn mount_with(
    source: Option<&CStr>,
    target: &CStr,
    kind: Option<&CStr>,
    flags: libc::c_ulong,
    options: Option<&CStr>,
) -> io::Result<()> {
    let pointer = |value: Option<&CStr>| value.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: every pointer is NUL-terminated or null, as `mount` takes.
    check(unsafe {
        libc::mount(
            pointer(source),
            target.as_ptr(),
            pointer(kind),
            flags,
            pointer(options).cast(),
        )
    })
    .map(drop)
}

/// `struct landlock_path_beneath_attr`.
#[repr(C, packed)]
struct PathBeneath {
    allowed_access: u64,
    parent_fd: i32,
}

/// Lets the Landlock ruleset `ruleset` write the command's own `/dev/shm`
/// (the tmpfs mounted over the host's, which a rule made in the parent
/// could not name). A kernel that refuses the rule leaves it read-only.
pub(crate) fn allow_private_shm(ruleset: libc::c_int, access: u64) {
    // SAFETY: `open` of a NUL-terminated path, for its descriptor only.
    let fd = unsafe { libc::open(c"/dev/shm".as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        return;
    }
    let rule = PathBeneath {
        allowed_access: access,
        parent_fd: fd,
    };
    // SAFETY: `landlock_add_rule` of a path-beneath rule (type 1) whose
    // attribute outlives the call; `fd` is closed once.
    unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset,
            1u32,
            &rule as *const PathBeneath,
            0u32,
        );
        libc::close(fd);
    }
}

/// `mount_setattr(2)` on the mount at `path` (and those below it when
/// `recursive`): sets `set` and clears `clear`.
fn set_attr(path: &CStr, recursive: bool, set: u64, clear: u64) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    let flags = if recursive { libc::AT_RECURSIVE } else { 0 };
    // SAFETY: `path` is NUL-terminated and `attr` outlives the call, its
    // size passed with it.
    let result = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags as libc::c_uint,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if result < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn ignore_missing(result: io::Result<()>) -> io::Result<()> {
    match result {
        Err(error) if error.raw_os_error() == Some(libc::ENOENT) => Ok(()),
        other => other,
    }
}

fn check(result: libc::c_int) -> io::Result<libc::c_int> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_map_line_is_the_id_twice_and_one() {
        let mut buffer = [0u8; 40];
        assert_eq!(id_map(&mut buffer, 65534), b"65534 65534 1");
        assert_eq!(id_map(&mut buffer, 0), b"0 0 1");
        assert_eq!(id_map(&mut buffer, u32::MAX), b"4294967295 4294967295 1");
    }
}
