//! The names the model sees: `<server>__<tool>`, within what model APIs
//! accept (`^[a-zA-Z0-9_-]{1,64}$`), with a deterministic, stated fix for
//! a name that does not fit.

use std::collections::HashSet;
use std::fmt;

/// The longest tool name model APIs accept (OpenAI's limit; Anthropic's
/// is 128).
pub const MAX_TOOL_NAME: usize = 64;

/// The longest server name: a server's tools keep at least 29 bytes of
/// their own name after `<server>__`.
pub const MAX_SERVER_NAME: usize = 32;

/// Between a server's name and its tool's in an exposed name.
pub const SEPARATOR: &str = "__";

/// The server names [`is_server_name`] accepts, as a regular expression
/// (`[a-z]`, then letters and digits each after at most one `_`), less
/// the length ([`MAX_SERVER_NAME`]): what a deployment file's schema
/// states, so an editor flags `[mcp.Bad-Name]`.
pub const SERVER_NAME_PATTERN: &str = "^[a-z](?:_?[a-z0-9])*$";

/// Whether `name` is a server name: `[a-z][a-z0-9_]*`, at most
/// [`MAX_SERVER_NAME`] bytes, with no `__` (it separates the server from
/// the tool in the names the model sees) and no trailing `_`.
///
/// ```
/// use dsh_tool_mcp::is_server_name;
///
/// assert!(is_server_name("docs"));
/// assert!(is_server_name("git_hub2"));
/// assert!(!is_server_name("Docs"));
/// assert!(!is_server_name("a__b"));
/// assert!(!is_server_name("2fa"));
/// ```
pub fn is_server_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_SERVER_NAME
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !name.contains(SEPARATOR)
        && !name.ends_with('_')
}

/// A server name from any text (an editor's name for a server): lower
/// case, every other character `_`, runs of `_` made one, a leading
/// non-letter prefixed with `s`, cut to [`MAX_SERVER_NAME`]; `taken`
/// names get a suffix `_2`, `_3`, … The result passes [`is_server_name`].
///
/// ```
/// use dsh_tool_mcp::sanitize_server_name;
///
/// assert_eq!(sanitize_server_name("GitHub Tools", &[]), "github_tools");
/// assert_eq!(sanitize_server_name("docs", &["docs".to_owned()]), "docs_2");
/// assert_eq!(sanitize_server_name("9lives", &[]), "s9lives");
/// assert_eq!(sanitize_server_name("!!!", &[]), "server");
/// ```
pub fn sanitize_server_name(raw: &str, taken: &[String]) -> String {
    let mut name = String::with_capacity(raw.len());
    for c in raw.chars() {
        let c = c.to_ascii_lowercase();
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() {
            c
        } else {
            '_'
        };
        if !(c == '_' && (name.is_empty() || name.ends_with('_'))) {
            name.push(c);
        }
    }
    let mut name = name.trim_end_matches('_').to_owned();
    if name.is_empty() {
        name = "server".to_owned();
    } else if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        name.insert(0, 's');
    }
    let fit = |name: &str, room: usize| {
        let mut cut = name[..name.len().min(room)].to_owned();
        while cut.ends_with('_') {
            cut.pop();
        }
        cut
    };
    let base = fit(&name, MAX_SERVER_NAME);
    if !taken.contains(&base) {
        return base;
    }
    (2..)
        .map(|n| {
            let suffix = format!("_{n}");
            format!("{}{suffix}", fit(&base, MAX_SERVER_NAME - suffix.len()))
        })
        .find(|candidate| !taken.contains(candidate))
        .unwrap_or(base)
}

/// Why an exposed name is not `<server>__<tool>` as the server wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameFix {
    /// Characters outside `[A-Za-z0-9_-]` became `_`.
    Sanitized,
    /// The name was longer than [`MAX_TOOL_NAME`]: it was cut and given
    /// a hash of the tool's own name.
    Shortened,
    /// After the other fixes it equalled an earlier tool's name: it got a
    /// hash of the tool's own name.
    Disambiguated,
}

impl fmt::Display for NameFix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Sanitized => "characters model APIs reject became `_`",
            Self::Shortened => "longer than 64 bytes: cut, with a hash of the tool's name",
            Self::Disambiguated => {
                "equal to another tool's name after sanitizing: given a hash of the tool's name"
            }
        })
    }
}

/// One tool's exposed name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExposedName {
    /// What the model calls it.
    pub exposed: String,
    /// The tool's name on its server.
    pub tool: String,
    /// The fix applied, if the name is not `<server>__<tool>`.
    pub fix: Option<NameFix>,
}

/// The exposed names of one server's tools, in the order given: each
/// `<server>__<tool>` with characters outside `[A-Za-z0-9_-]` made `_`;
/// a name over 64 bytes is cut to 55 and given `_` and eight hex digits
/// of a hash of the tool's own name; a name equal to an earlier one gets
/// the same hash suffix (cut as needed). No tool is dropped, and the same
/// tools always get the same names.
///
/// ```
/// use dsh_tool_mcp::{NameFix, exposed_names};
///
/// let names = exposed_names("docs", ["search", "search.v2", "search_v2"]);
/// assert_eq!(names[0].exposed, "docs__search");
/// assert_eq!((names[1].exposed.as_str(), names[1].fix), ("docs__search_v2", Some(NameFix::Sanitized)));
/// assert_eq!(names[2].fix, Some(NameFix::Disambiguated));
/// assert!(names[2].exposed.starts_with("docs__search_v2_"));
/// ```
pub fn exposed_names<I, S>(server: &str, tools: I) -> Vec<ExposedName>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut seen = HashSet::new();
    let mut names = Vec::new();
    for tool in tools {
        let tool: String = tool.into();
        let sanitized: String = tool
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let mut fix = (sanitized != tool || tool.is_empty()).then_some(NameFix::Sanitized);
        let mut exposed = format!("{server}{SEPARATOR}{sanitized}");
        if exposed.len() > MAX_TOOL_NAME {
            exposed = hashed(&exposed, &tool);
            fix = Some(NameFix::Shortened);
        }
        if seen.contains(&exposed) {
            exposed = hashed(&exposed, &tool);
            fix = Some(NameFix::Disambiguated);
            // Two tools whose names hash alike: count up, still stable.
            let base = exposed.clone();
            let mut n = 2;
            while seen.contains(&exposed) {
                exposed = format!("{}{n}", &base[..base.len() - n.to_string().len()]);
                n += 1;
            }
        }
        seen.insert(exposed.clone());
        names.push(ExposedName { exposed, tool, fix });
    }
    names
}

/// `name` cut to leave room for `_` and eight hex digits of `tool`'s hash.
fn hashed(name: &str, tool: &str) -> String {
    let room = MAX_TOOL_NAME - 9;
    format!(
        "{}_{:08x}",
        &name[..name.len().min(room)],
        fnv1a(tool) as u32
    )
}

/// FNV-1a, 64 bits: a hash that never changes between builds or
/// platforms, so a tool keeps its name.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_cut_to_64_with_a_stable_hash() {
        let long = "a".repeat(80);
        let names = exposed_names("docs", [long.as_str(), long.as_str()]);
        assert_eq!(names[0].exposed.len(), 64);
        assert_eq!(names[0].fix, Some(NameFix::Shortened));
        assert_eq!(names[1].fix, Some(NameFix::Disambiguated));
        assert_ne!(names[0].exposed, names[1].exposed);
        assert!(names[1].exposed.len() <= 64);
        assert_eq!(exposed_names("docs", [long.as_str()])[0], names[0]);
        for name in &names {
            assert!(
                name.exposed
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            );
        }
    }

    #[test]
    fn sanitized_server_names_are_server_names() {
        for raw in ["A B", "__x__", "é", "x".repeat(50).as_str(), "a__b", "1"] {
            let name = sanitize_server_name(raw, &[]);
            assert!(is_server_name(&name), "{raw:?} → {name:?}");
        }
        let taken = vec!["x".repeat(32)];
        let name = sanitize_server_name(&"x".repeat(40), &taken);
        assert!(is_server_name(&name) && !taken.contains(&name), "{name}");
    }
}
