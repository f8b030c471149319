//! A session's title: its first prompt, shortened to one line.

/// The longest title, in characters, before the ellipsis.
const MAX_CHARS: usize = 60;

/// The first non-empty line of `prompt`, trimmed, cut at [`MAX_CHARS`]
/// characters with an ellipsis.
pub(crate) fn title_of(prompt: &str) -> String {
    let line = prompt
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or_default();
    match line.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{}…", line[..cut].trim_end()),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_is_the_first_line_shortened() {
        assert_eq!(title_of("\n  fix the build \nthen test"), "fix the build");
        let long = "é".repeat(70);
        assert_eq!(title_of(&long), format!("{}…", "é".repeat(60)));
    }
}
