//! The one way a tool result too long for the model is cut: its head and
//! its tail, with a line between them that says what was left out — the
//! same words whichever tool cut it (`bash`, an MCP server's result).

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
