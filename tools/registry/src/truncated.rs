//! The one way a tool result too long for the model is cut: its head and
//! its tail, with a line between them that says what was left out — the
//! same words whichever tool cut it (`bash`, an MCP server's result) —
//! and where a cut of bytes ends so that it splits no character.

/// `head` and `tail` of a text cut in its middle, `omitted` bytes left out
/// between them, `head_cap` and `tail_cap` the bytes the cut keeps at
/// most on each side: the text the model reads.
///
/// ```
/// let shown = dsh_tools::head_and_tail("abcd", "opqr", 10, 4, 4);
/// assert_eq!(
///     shown,
///     "abcd\n[output truncated: 10 bytes omitted; the first 4 and the last 4 bytes are shown]\nopqr"
/// );
/// ```
pub fn head_and_tail(
    head: &str,
    tail: &str,
    omitted: u64,
    head_cap: usize,
    tail_cap: usize,
) -> String {
    let mut shown = String::with_capacity(head.len() + tail.len() + 120);
    shown.push_str(head);
    if !head.is_empty() && !head.ends_with('\n') {
        shown.push('\n');
    }
    shown.push_str(&format!(
        "[output truncated: {omitted} bytes omitted; the first {head_cap} and the last \
         {tail_cap} bytes are shown]\n"
    ));
    shown.push_str(tail);
    shown
}

/// The length of `bytes` without an incomplete UTF-8 sequence at its end:
/// where a cut of a byte stream (a command's output, a server's stderr)
/// ends so that it splits no character. Invalid bytes inside are left to
/// the lossy conversion that follows; only the split sequence at the end
/// is dropped.
///
/// ```
/// let cut = "aé".as_bytes();
/// assert_eq!(dsh_tools::complete_utf8_len(&cut[..2]), 1);
/// assert_eq!(dsh_tools::complete_utf8_len(cut), 3);
/// ```
pub fn complete_utf8_len(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(error) if error.error_len().is_none() => error.valid_up_to(),
        Err(_) => {
            let start = bytes.len().saturating_sub(3);
            (start..bytes.len())
                .rev()
                .find(|&at| bytes[at] >= 0xC0)
                .filter(|&at| sequence_len(bytes[at]) > bytes.len() - at)
                .unwrap_or(bytes.len())
        }
    }
}

/// How many bytes the UTF-8 sequence that `lead` starts has.
fn sequence_len(lead: u8) -> usize {
    match lead {
        0xF0.. => 4,
        0xE0.. => 3,
        _ => 2,
    }
}
