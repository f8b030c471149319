//! A server's text as a person is shown it: the one rule for every line
//! dsh writes of what a server said (its log messages, progress,
//! questions, sampling requests).

/// `text` as a person is shown it, on a terminal or in an editor: its
/// control characters escaped — `\n`, `\r` and `\t` as such, any other
/// as `\u{1b}` — so no server can move the cursor, clear the screen or
/// set the clipboard (an ESC or OSC sequence arrives as text), and
/// everything else as it is; cut at `max_chars` characters of the
/// escaped text (never inside an escape), with `…` after it exactly
/// when something was cut.
///
/// ```
/// assert_eq!(dsh_tool_mcp::shown("a\u{1b}[2J\n\"b\"", 100), "a\\u{1b}[2J\\n\"b\"");
/// assert_eq!(dsh_tool_mcp::shown("abcdef", 3), "abc…");
/// assert_eq!(dsh_tool_mcp::shown("abc", 3), "abc");
/// ```
pub fn shown(text: &str, max_chars: usize) -> String {
    let mut escaped = String::with_capacity(text.len().min(max_chars * 4));
    let mut count = 0;
    for c in text.chars() {
        let piece = match c {
            '\n' => "\\n".to_owned(),
            '\r' => "\\r".to_owned(),
            '\t' => "\\t".to_owned(),
            c if c.is_control() => c.escape_unicode().to_string(),
            c => c.to_string(),
        };
        let len = piece.chars().count();
        if count + len > max_chars {
            escaped.push('…');
            return escaped;
        }
        escaped.push_str(&piece);
        count += len;
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_and_osc_sequences_come_out_escaped() {
        assert_eq!(shown("\u{1b}[31mred", 100), "\\u{1b}[31mred");
        // OSC 52: sets the terminal's clipboard; ended by BEL.
        assert_eq!(
            shown("\u{1b}]52;c;aGk=\u{7}", 100),
            "\\u{1b}]52;c;aGk=\\u{7}"
        );
        assert_eq!(shown("\u{9b}2J", 100), "\\u{9b}2J", "C1 CSI");
        assert_eq!(
            shown("tab\there 'q' \"d\" é", 100),
            "tab\\there 'q' \"d\" é"
        );
    }

    #[test]
    fn the_cut_marker_appears_exactly_when_cut() {
        assert_eq!(shown("abc", 3), "abc");
        assert_eq!(shown("abcd", 3), "abc…");
        // The cut counts the escaped text: `\n` is two characters.
        assert_eq!(shown("a\nb", 3), "a\\n…");
        assert_eq!(shown("a\n", 3), "a\\n");
        // An escape is never split.
        assert_eq!(shown("\u{1b}", 3), "…");
        assert_eq!(shown("", 0), "");
        assert_eq!(shown("a", 0), "…");
    }
}
