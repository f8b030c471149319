//! Reading a window of a text file: refuse what is not a regular file
//! before opening it, stream the lines, number them, cap them.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::{Path, PathBuf};

use dsh_tools::NotRegular;

use crate::observe::{Seeing, Seen};

/// The limits of one read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Bytes of one line shown; the rest of the line is replaced by a marker.
    pub(crate) line_bytes: usize,
    /// Bytes of the whole result (line numbers included).
    pub(crate) output_bytes: usize,
    /// Bytes read past the window to count the file's lines; past them the
    /// count is left open.
    pub(crate) count_bytes: u64,
}

/// How many bytes at the start of a file are checked for a NUL byte.
pub(crate) const BINARY_SNIFF_BYTES: usize = 8192;

/// Why a window could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Nothing exists at the path.
    #[error("`{path}` does not exist")]
    NotFound {
        /// The path asked for.
        path: PathBuf,
    },
    /// The path is a directory, FIFO, socket or device.
    #[error(
        "`{path}` is {kind}{}, not a regular file; read only reads regular files",
        if *.through_symlink { " (through a symbolic link)" } else { "" }
    )]
    NotARegularFile {
        /// The path asked for.
        path: PathBuf,
        /// What it is: `a directory`, `a FIFO (named pipe)`, ….
        kind: &'static str,
        /// Whether the path is a symbolic link to it.
        through_symlink: bool,
    },
    /// A NUL byte near the start: not text.
    #[error(
        "`{path}` looks like a binary file (a NUL byte at byte {at}); read only reads UTF-8 text"
    )]
    Binary {
        /// The path asked for.
        path: PathBuf,
        /// The offset of the first NUL byte.
        at: usize,
    },
    /// A line of the window is not UTF-8.
    #[error(
        "line {line} of `{path}` is not valid UTF-8 (at byte {at} of the line); read only reads UTF-8 text"
    )]
    InvalidUtf8 {
        /// The path asked for.
        path: PathBuf,
        /// The line, counting from 1.
        line: u64,
        /// The offset of the first invalid byte in the line.
        at: usize,
    },
    /// `offset` is past the last line.
    #[error("line {offset} is past the end of `{path}`, which has {lines} lines")]
    OffsetPastEnd {
        /// The path asked for.
        path: PathBuf,
        /// The requested first line.
        offset: u64,
        /// How many lines the file has.
        lines: u64,
    },
    /// The file could not be opened or read.
    #[error("cannot read `{path}`: {source}")]
    Io {
        /// The path asked for.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
}

/// Opens `path` for reading only if it is a regular file, without ever
/// blocking: opening a FIFO for reading blocks until a writer appears, and
/// reading a device may never end.
pub(crate) fn open_regular(path: &Path) -> Result<File, ReadError> {
    let io_error = |source: io::Error| match source.kind() {
        io::ErrorKind::NotFound => ReadError::NotFound {
            path: path.to_owned(),
        },
        _ => ReadError::Io {
            path: path.to_owned(),
            source,
        },
    };
    dsh_tools::open_regular(path).map_err(|error| match error {
        NotRegular::Io(source) => io_error(source),
        NotRegular::Kind(kind) => ReadError::NotARegularFile {
            path: path.to_owned(),
            kind,
            through_symlink: std::fs::symlink_metadata(path)
                .is_ok_and(|metadata| metadata.file_type().is_symlink()),
        },
    })
}

/// Reads lines `offset..offset + limit` of `path` (1-based), numbered and
/// capped, with a hint when more lines follow; and what the read saw of
/// the whole file, when it read to its end.
pub(crate) fn read_window(
    path: &Path,
    offset: u64,
    limit: u64,
    limits: Limits,
) -> Result<(String, Option<Seen>), ReadError> {
    let file = open_regular(path)?;
    window_of(path, file, offset, limit, limits)
}

/// A [`Read`] that records what passes through it.
struct SeeingReader<R> {
    inner: R,
    seeing: Seeing,
}

impl<R: Read> Read for SeeingReader<R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buffer)?;
        self.seeing.update(&buffer[..read]);
        Ok(read)
    }
}

/// [`read_window`] of the text `source` yields, which is `path`'s.
///
/// Four phases: refuse a binary file from its first bytes, skip the lines
/// before the window, show the window, count the rest (within
/// `count_bytes`), then say what was shown of how much.
pub(crate) fn window_of(
    path: &Path,
    source: impl Read,
    offset: u64,
    limit: u64,
    limits: Limits,
) -> Result<(String, Option<Seen>), ReadError> {
    let mut source = SeeingReader {
        inner: source,
        seeing: Seeing::default(),
    };
    let head = sniff_text(path, &mut source)?;
    let mut lines = Lines {
        path,
        reader: BufReader::with_capacity(64 * 1024, Cursor::new(head).chain(&mut source)),
        line: Vec::new(),
        number: 0,
    };
    lines.skip_before(offset)?;
    let window = lines.window(offset, limit, limits)?;
    let open_count = lines.count_rest(limits.count_bytes)?;
    let total = lines.number;
    drop(lines);
    // Only a read to the end saw the whole file.
    let seen = (!open_count).then(|| source.seeing.finish());

    if total == 0 {
        return Ok((format!("[`{}` is empty]", path.display()), seen));
    }
    if offset > total {
        return Err(ReadError::OffsetPastEnd {
            path: path.to_owned(),
            offset,
            lines: total,
        });
    }
    let hint = (window.last_shown < total || open_count)
        .then(|| more_hint(&window, offset, total, open_count, limits));
    let mut text = window.text;
    text.extend(hint);
    Ok((text, seen))
}

/// The first [`BINARY_SNIFF_BYTES`] of `source`, or the error that `path`
/// is binary when they hold a NUL byte.
fn sniff_text(path: &Path, source: &mut impl Read) -> Result<Vec<u8>, ReadError> {
    let mut head = Vec::with_capacity(BINARY_SNIFF_BYTES);
    source
        .take(BINARY_SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|source| ReadError::Io {
            path: path.to_owned(),
            source,
        })?;
    match memchr::memchr(0, &head) {
        Some(at) => Err(ReadError::Binary {
            path: path.to_owned(),
            at,
        }),
        None => Ok(head),
    }
}

/// The lines of a file being read, numbered as they are read.
struct Lines<'p, R> {
    path: &'p Path,
    reader: R,
    /// The kept bytes of the last line read.
    line: Vec<u8>,
    /// The number of the last line read (1-based); 0 before the first.
    number: u64,
}

/// What the window showed.
struct Window {
    text: String,
    /// The number of the last line shown.
    last_shown: u64,
    /// Whether the window stopped early, at the output cap.
    capped: bool,
}

impl<R: BufRead> Lines<'_, R> {
    /// Reads the next line, keeping at most `keep` of its bytes; its whole
    /// length, or `None` at the end.
    fn next(&mut self, keep: usize) -> Result<Option<u64>, ReadError> {
        let length =
            next_line(&mut self.reader, keep, &mut self.line).map_err(|source| ReadError::Io {
                path: self.path.to_owned(),
                source,
            })?;
        if length.is_some() {
            self.number += 1;
        }
        Ok(length)
    }

    /// Skips the lines before `offset`, keeping none of their bytes.
    fn skip_before(&mut self, offset: u64) -> Result<(), ReadError> {
        while self.number + 1 < offset {
            if self.next(0)?.is_none() {
                break;
            }
        }
        Ok(())
    }

    /// Shows lines `offset..offset + limit`, numbered, until the output
    /// would pass its cap; nothing when the file ends before `offset`.
    fn window(&mut self, offset: u64, limit: u64, limits: Limits) -> Result<Window, ReadError> {
        let mut text = String::new();
        // The first line not shown, when the window stopped early.
        let mut stopped_at = None;
        let window_end = offset.saturating_add(limit);
        if self.number + 1 == offset {
            while self.number + 1 < window_end {
                let Some(length) = self.next(limits.line_bytes)? else {
                    break;
                };
                let shown = numbered_line(self.path, self.number, &self.line, length)?;
                if !text.is_empty() && text.len() + shown.len() > limits.output_bytes {
                    stopped_at = Some(self.number);
                    break;
                }
                text.push_str(&shown);
            }
        }
        Ok(Window {
            text,
            last_shown: stopped_at.map_or(self.number, |stopped| stopped - 1),
            capped: stopped_at.is_some(),
        })
    }

    /// Counts the lines left, so the hint can say how much is left; stops
    /// past `count_bytes`, and then says the count is open (`true`).
    fn count_rest(&mut self, count_bytes: u64) -> Result<bool, ReadError> {
        let mut counted: u64 = 0;
        while let Some(length) = self.next(0)? {
            counted += length + 1;
            if counted > count_bytes {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// The hint after a window that did not show the file to its end.
fn more_hint(window: &Window, offset: u64, total: u64, open_count: bool, limits: Limits) -> String {
    let of = if open_count {
        format!("of more than {total}")
    } else {
        format!("of {total}")
    };
    let why = if window.capped {
        format!(" (the output is capped at {} bytes)", limits.output_bytes)
    } else {
        String::new()
    };
    format!(
        "[showing lines {offset}-{} {of}{why}; call read with offset={} to see more]",
        window.last_shown,
        window.last_shown + 1
    )
}

/// One line as shown: right-aligned number, a tab, the text; a line over
/// the cap is cut at a character boundary and marked.
fn numbered_line(path: &Path, number: u64, kept: &[u8], length: u64) -> Result<String, ReadError> {
    let truncated = (kept.len() as u64) < length;
    let invalid = |at| ReadError::InvalidUtf8 {
        path: path.to_owned(),
        line: number,
        at,
    };
    let text = match std::str::from_utf8(kept) {
        Ok(text) => text,
        // The cut split a character: show the line up to it.
        Err(error) if truncated && error.error_len().is_none() => {
            std::str::from_utf8(&kept[..error.valid_up_to()])
                .map_err(|error| invalid(error.valid_up_to()))?
        }
        Err(error) => return Err(invalid(error.valid_up_to())),
    };
    let mut shown = if truncated {
        format!(
            "{number:>6}\t{text}… [line truncated: {} more bytes]",
            length - text.len() as u64
        )
    } else {
        format!("{number:>6}\t{}", text.strip_suffix('\r').unwrap_or(text))
    };
    shown.push('\n');
    Ok(shown)
}

/// Reads one line, without its `\n`, keeping at most `keep` bytes of it in
/// `kept`: a line of any length costs at most `keep` bytes of memory.
/// Returns the line's whole length, or `None` at the end of the input.
fn next_line(
    reader: &mut impl BufRead,
    keep: usize,
    kept: &mut Vec<u8>,
) -> io::Result<Option<u64>> {
    kept.clear();
    let mut length = 0;
    let mut any = false;
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if buffer.is_empty() {
            return Ok(any.then_some(length));
        }
        any = true;
        let newline = memchr::memchr(b'\n', buffer);
        let chunk = &buffer[..newline.unwrap_or(buffer.len())];
        let room = keep.saturating_sub(kept.len()).min(chunk.len());
        kept.extend_from_slice(&chunk[..room]);
        length += chunk.len() as u64;
        let consumed = newline.map_or(buffer.len(), |at| at + 1);
        reader.consume(consumed);
        if newline.is_some() {
            return Ok(Some(length));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::next_line;
    use std::io::Cursor;

    #[test]
    fn lines_are_split_on_newlines_and_capped() {
        let mut reader = Cursor::new(b"one\nlonger line\n\nlast".to_vec());
        let mut kept = Vec::new();
        let mut lines = Vec::new();
        while let Some(length) = next_line(&mut reader, 4, &mut kept).expect("in memory") {
            lines.push((String::from_utf8_lossy(&kept).into_owned(), length));
        }
        assert_eq!(
            lines,
            [
                ("one".to_owned(), 3),
                ("long".to_owned(), 11),
                (String::new(), 0),
                ("last".to_owned(), 4)
            ]
        );
    }

    #[test]
    fn a_trailing_newline_ends_the_last_line() {
        let mut reader = Cursor::new(b"a\n".to_vec());
        let mut kept = Vec::new();
        assert_eq!(next_line(&mut reader, 10, &mut kept).ok(), Some(Some(1)));
        assert_eq!(next_line(&mut reader, 10, &mut kept).ok(), Some(None));
    }
}
