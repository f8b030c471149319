//! `closest`: the one typo suggestion of the workspace, so a misspelled
//! variable, tool or agent is answered the same way wherever it is found.

/// The candidate closest to `name`, when it is close enough to be a
/// plausible typo (Jaro-Winkler similarity of at least 0.8); of equally
/// close candidates, the last.
///
/// ```
/// use dsh_system_prompt::suggestion::closest;
///
/// assert_eq!(closest("modle", ["cwd", "model"]), Some("model"));
/// assert_eq!(closest("budget", ["cwd", "model"]), None);
/// ```
pub fn closest<I>(name: &str, candidates: I) -> Option<I::Item>
where
    I: IntoIterator,
    I::Item: AsRef<str>,
{
    candidates
        .into_iter()
        .map(|candidate| (strsim::jaro_winkler(name, candidate.as_ref()), candidate))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, candidate)| candidate)
}
