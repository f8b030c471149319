//! One answer read from the terminal, withdrawable: the reader waits for a
//! line without reading, so a question withdrawn before its answer (the
//! server cancelled it, the turn was cancelled) leaves the person's next
//! line to whoever reads next, instead of swallowing it.

use std::fs::File;
use std::io::Read;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

/// How often a waiting reader looks whether its question was withdrawn.
const LOOK_EVERY_MS: u16 = 50;

/// One line of `file` once it has one; `None` at its end, or when
/// `withdrawn` is set before a line comes, which leaves that line unread.
pub(super) fn read_line(file: &File, withdrawn: &AtomicBool) -> std::io::Result<Option<String>> {
    let mut line = Vec::new();
    loop {
        if withdrawn.load(Ordering::Acquire) {
            return Ok(None);
        }
        let mut ready = [PollFd::new(file.as_fd(), PollFlags::POLLIN)];
        match poll(&mut ready, PollTimeout::from(LOOK_EVERY_MS)) {
            Ok(0) | Err(Errno::EINTR) => continue,
            Ok(_) => {}
            Err(error) => return Err(error.into()),
        }
        // A byte at a time: what follows the line stays for the next
        // reader.
        let mut byte = [0];
        let read = (&*file).read(&mut byte)?;
        line.extend_from_slice(&byte[..read]);
        if read == 0 || byte == *b"\n" {
            return Ok((!line.is_empty()).then(|| String::from_utf8_lossy(&line).into_owned()));
        }
    }
}

/// A question waiting for its line: dropped before it is answered, it
/// tells its reader to stop and says `(withdrawn)`.
pub(super) struct Waiting {
    withdrawn: Arc<AtomicBool>,
    answered: bool,
}

impl Waiting {
    pub(super) fn new() -> Self {
        Self {
            withdrawn: Arc::new(AtomicBool::new(false)),
            answered: false,
        }
    }

    /// The flag its reader watches.
    pub(super) fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.withdrawn)
    }

    /// The line came (or cannot come): nothing to withdraw.
    pub(super) fn answered(mut self) {
        self.answered = true;
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if !self.answered {
            self.withdrawn.store(true, Ordering::Release);
            super::console::out(&mut std::io::stderr(), "(withdrawn)\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_withdrawn_reader_leaves_the_line_to_the_next() {
        let (reader, mut writer) = std::io::pipe().expect("a pipe");
        let reader = Arc::new(File::from(std::os::fd::OwnedFd::from(reader)));
        let waiting = Waiting::new();
        let (flag, file) = (waiting.flag(), Arc::clone(&reader));
        let first = std::thread::spawn(move || read_line(&file, &flag));
        std::thread::sleep(std::time::Duration::from_millis(120));
        drop(waiting);
        assert_eq!(first.join().expect("no panic").expect("read"), None);
        writer.write_all(b"yes\n").expect("written");
        let open = AtomicBool::new(false);
        assert_eq!(
            read_line(&reader, &open).expect("read").as_deref(),
            Some("yes\n")
        );
        drop(writer);
        assert_eq!(read_line(&reader, &open).expect("read"), None);
    }
}
