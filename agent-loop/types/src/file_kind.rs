//! What a file is, in words, when it is not a regular file: the one
//! wording of every refusal of a directory, a FIFO, a socket or a device
//! where dsh expects a file — an input file, a file the `read` tool is
//! asked for, the session store's files.

use std::fs::FileType;
use std::os::unix::fs::FileTypeExt;

/// What a file type is, when it is not a regular file (`None` for a
/// regular file): `a directory`, `a FIFO (named pipe)`, `a socket`, `a
/// block device`, `a character device`, else `not a regular file`.
///
/// ```
/// use dsh_agent_types::special_kind;
///
/// let dir = std::fs::metadata(".")?;
/// assert_eq!(special_kind(dir.file_type()), Some("a directory"));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn special_kind(file_type: FileType) -> Option<&'static str> {
    if file_type.is_file() {
        None
    } else if file_type.is_dir() {
        Some("a directory")
    } else if file_type.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if file_type.is_socket() {
        Some("a socket")
    } else if file_type.is_block_device() {
        Some("a block device")
    } else if file_type.is_char_device() {
        Some("a character device")
    } else {
        Some("not a regular file")
    }
}

#[cfg(test)]
mod tests {
    use super::special_kind;

    #[test]
    fn a_regular_file_has_no_kind_and_the_others_are_named() {
        let kind = |path: &str| {
            let metadata = std::fs::metadata(path).expect("the path exists");
            special_kind(metadata.file_type())
        };
        assert_eq!(
            kind(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")),
            None
        );
        assert_eq!(kind(env!("CARGO_MANIFEST_DIR")), Some("a directory"));
        assert_eq!(kind("/dev/null"), Some("a character device"));
    }
}
