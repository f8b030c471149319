//! The captured output of a command: capped, keeping its head and tail.

use std::collections::VecDeque;

/// Output bytes in arrival order, at most `cap` of them kept: the first
/// half of the cap as it arrives, then a sliding window of the last half.
/// The head shows how the command started, the tail how it ended (where
/// errors and summaries usually are).
#[derive(Debug)]
pub(crate) struct CappedOutput {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    omitted: u64,
}

impl CappedOutput {
    pub(crate) fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        Self {
            head: Vec::with_capacity(head_cap.min(64 * 1024)),
            tail: VecDeque::new(),
            head_cap,
            tail_cap: cap - head_cap,
            omitted: 0,
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        let room = self.head_cap - self.head.len();
        let into_head = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..into_head]);
        bytes = &bytes[into_head..];
        if bytes.len() > self.tail_cap {
            let skipped = bytes.len() - self.tail_cap;
            self.omitted += (self.tail.len() + skipped) as u64;
            self.tail.clear();
            bytes = &bytes[skipped..];
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.omitted += overflow as u64;
        self.tail.extend(bytes);
    }

    /// The output as text: invalid UTF-8 replaced, and a notice where bytes
    /// were omitted.
    pub(crate) fn into_text(self) -> String {
        if self.omitted == 0 {
            let mut all = self.head;
            all.extend(self.tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let tail_len = self.tail.len();
        let tail = Vec::from(self.tail);
        // Cut at character boundaries, so the cut itself adds no
        // replacement characters.
        let head = &self.head[..dsh_tools::complete_utf8_len(&self.head)];
        let tail = &tail[leading_continuations(&tail)..];
        let cut = (self.head.len() - head.len()) + (tail_len - tail.len());
        dsh_tools::head_and_tail(
            &String::from_utf8_lossy(head),
            &String::from_utf8_lossy(tail),
            self.omitted + cut as u64,
            self.head_cap,
            self.tail_cap,
        )
    }
}

/// How many UTF-8 continuation bytes (at most 3) start `bytes`: the rest of
/// a character the cut split.
fn leading_continuations(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(3)
        .take_while(|&&byte| byte & 0xC0 == 0x80)
        .count()
}

#[cfg(test)]
mod tests {
    use super::CappedOutput;

    #[test]
    fn output_under_the_cap_is_kept_whole() {
        let mut output = CappedOutput::new(10);
        output.push(b"hello ");
        output.push(b"you");
        assert_eq!(output.into_text(), "hello you");
    }

    #[test]
    fn output_over_the_cap_keeps_head_and_tail() {
        let mut output = CappedOutput::new(8);
        for chunk in [&b"abc"[..], b"defgh", b"ijklmnop", b"qr"] {
            output.push(chunk);
        }
        // 18 bytes: head `abcd`, tail `opqr`, 10 omitted.
        assert_eq!(
            output.into_text(),
            "abcd\n[output truncated: 10 bytes omitted; the first 4 and the last 4 bytes are shown]\nopqr"
        );
    }

    #[test]
    fn a_cut_through_a_character_adds_no_replacement_character() {
        let mut output = CappedOutput::new(6);
        // `é` is two bytes; the head cut falls inside the second one.
        output.push("aaéééé bb".as_bytes());
        let text = output.into_text();
        assert!(!text.contains('\u{FFFD}'), "{text}");
        assert!(
            text.starts_with("aa\n[output truncated: 8 bytes omitted;"),
            "{text}"
        );
        assert!(text.ends_with(" bb"), "{text}");
    }
}
