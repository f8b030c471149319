//! Rules that own paths: the project's rule files in every tool's format,
//! each a fact with an owner (its file) and a scope (its paths).
//!
//! | format | files | selector |
//! |---|---|---|
//! | Cursor | `.cursor/rules/**/*.mdc` | `globs` (a string of comma-separated globs, or a list), `alwaysApply` |
//! | GitHub Copilot | `.github/copilot-instructions.md` (always), `.github/instructions/**/*.instructions.md` | `applyTo` (comma-separated globs) |
//! | Claude Code | `.claude/rules/**/*.md` | `paths` (a list; none: always) |
//! | nested instruction files | `AGENTS.md` / `CLAUDE.md` in a directory off the way from the root to the working directory | the files under its directory |
//!
//! An **always** rule ([`Applies::Always`]) is one more instruction file:
//! a section of the session's prompt, under the instruction budget
//! ([`Instructions`](super::instructions::Instructions)). A **path** rule
//! ([`Applies::Paths`], [`Applies::Under`]) is never in the system prompt:
//! the first time in a session a call of `read`, `edit` or `write`
//! (creating included) touches a file it matches, its text reaches the
//! model after that call's result, once per session
//! ([`Rules::notes_for`], recorded as the log's
//! [`Event::Note`]) — the cached prefix
//! never changes. A Cursor rule with neither `globs` nor `alwaysApply:
//! true` is one its agent asks for by description ([`Applies::Requested`]):
//! listed, never sent.
//!
//! Globs are matched against paths from the project root; a glob without
//! a `/` matches a file's name in any directory (`*.rs` is `**/*.rs`), as
//! in `.gitignore`. Frontmatter is YAML; a key the format does not read
//! is a [`RuleProblem`] naming the key it meant (`path` in a Claude rule
//! is `paths`), as are a glob that matches no file of the project and one
//! that matches every file (`dsh check`).

mod format;
mod lint;

use std::fmt;
use std::path::{Component, Path, PathBuf};

use dsh_agent_loop::{Event, Note, noted};
use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Serialize;

/// Which tool's format a rule file is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RuleFormat {
    /// `.cursor/rules/*.mdc`.
    Cursor,
    /// `.github/copilot-instructions.md`, `.github/instructions/*.instructions.md`.
    Copilot,
    /// `.claude/rules/*.md`.
    Claude,
    /// An instruction file (`AGENTS.md`) in a directory below the root.
    Nested,
}

impl fmt::Display for RuleFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Cursor => "Cursor",
            Self::Copilot => "Copilot",
            Self::Claude => "Claude Code",
            Self::Nested => "nested instruction file",
        })
    }
}

/// When a rule reaches the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "selector")]
#[non_exhaustive]
pub enum Applies {
    /// Always: in the system prompt, with the instruction files.
    Always,
    /// When a file matching one of these globs (from the project root) is
    /// first touched.
    Paths(Vec<String>),
    /// When a file under this directory (from the project root) is first
    /// touched: a nested instruction file.
    Under(String),
    /// Only when asked for (a Cursor rule with a description alone):
    /// never sent by dsh.
    Requested,
}

/// One rule file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Rule {
    /// Its path from the project root, `/`-separated: its name.
    pub name: String,
    /// The file.
    pub path: PathBuf,
    /// Its format.
    pub format: RuleFormat,
    /// When it reaches the model.
    pub applies: Applies,
    /// Its frontmatter's `description`, if any.
    pub description: Option<String>,
    /// Its text, after the frontmatter.
    pub text: String,
    /// The text's first line in the file, from 1.
    pub line: usize,
    #[serde(skip)]
    matcher: Option<Matcher>,
}

/// A path rule's compiled globs: made from its [`Applies`], so equal
/// whenever those are.
#[derive(Clone, Debug)]
struct Matcher(GlobSet);

impl PartialEq for Matcher {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Matcher {}

impl Rule {
    /// Whether the rule reaches the model through the system prompt.
    pub fn is_always(&self) -> bool {
        self.applies == Applies::Always
    }

    /// The selector that `relative` (a path from the project root)
    /// matches: a glob, or the rule's directory; `None` when it matches
    /// none, or the rule is not a path rule.
    pub fn matched_by(&self, relative: &str) -> Option<String> {
        match &self.applies {
            Applies::Paths(globs) => {
                let matches = self.matcher.as_ref()?.0.matches(relative);
                matches.first().map(|&index| globs[index].clone())
            }
            Applies::Under(dir) => relative
                .strip_prefix(dir.as_str())
                .filter(|rest| rest.starts_with('/') && rest.len() > 1)
                .map(|_| format!("{dir}/")),
            Applies::Always | Applies::Requested => None,
        }
    }
}

/// Something wrong with a rule file, for `dsh check`: which file, where,
/// what.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RuleProblem {
    /// The file, from the project root.
    pub file: String,
    /// The line, from 1.
    pub line: usize,
    /// What is wrong, and what the rule does because of it.
    pub message: String,
}

impl RuleProblem {
    pub(crate) fn new(file: &str, line: usize, message: String) -> Self {
        Self {
            file: file.to_owned(),
            line,
            message,
        }
    }
}

impl fmt::Display for RuleProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

/// The rule files of a project.
///
/// The formats' files are read when a session starts (they live in a
/// few known directories); a nested instruction file is looked for when
/// a file under its directory is touched (the directories from the file
/// up to the root, a few `stat`s), so a session in a large project does
/// not walk it to start. The reports, which list every rule, walk it
/// ([`listed`](Self::listed)).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Rules {
    root: Option<PathBuf>,
    #[serde(skip)]
    real_root: Option<PathBuf>,
    /// The session's working directory: the instruction files on the way
    /// to it are in the prompt already.
    #[serde(skip)]
    cwd: PathBuf,
    /// The instruction files' names (`[instructions] files`).
    #[serde(skip)]
    names: Vec<String>,
    rules: Vec<Rule>,
    problems: Vec<RuleProblem>,
}

/// Where each format's files live: the directory from the root, what a
/// file's name ends with there, and whether its subdirectories count.
const PLACES: [(RuleFormat, &str, &str); 3] = [
    (RuleFormat::Cursor, ".cursor/rules", ".mdc"),
    (
        RuleFormat::Copilot,
        ".github/instructions",
        ".instructions.md",
    ),
    (RuleFormat::Claude, ".claude/rules", ".md"),
];

/// Copilot's file that always applies.
const COPILOT_ALWAYS: &str = ".github/copilot-instructions.md";

impl Rules {
    /// The rule files of the project at `root`, for a session in `cwd`:
    /// each format's, read now; and the instruction files named `names`
    /// in directories off the way from the root to `cwd` (those on it are
    /// in the prompt already), looked for when a file under them is
    /// touched. A file whose real path leaves the project is skipped and
    /// said; one that does not read as UTF-8 is said.
    pub fn discover(root: &Path, cwd: &Path, names: &[String]) -> Self {
        let mut found = Self {
            root: Some(root.to_path_buf()),
            real_root: std::fs::canonicalize(root).ok(),
            cwd: cwd.to_path_buf(),
            names: names.to_vec(),
            ..Self::default()
        };
        for (format, dir, suffix) in PLACES {
            for path in files_in(&root.join(dir), suffix) {
                found.add(format, path);
            }
        }
        let copilot = root.join(COPILOT_ALWAYS);
        if copilot.is_file() {
            found.add(RuleFormat::Copilot, copilot);
        }
        found
    }

    /// Reads the rule file `path` of `format` into the rules, or its
    /// problem into the problems.
    fn add(&mut self, format: RuleFormat, path: PathBuf) {
        match self.read(format, path) {
            Ok((rule, problems)) => {
                self.problems.extend(problems);
                self.rules.extend(rule);
            }
            Err(problem) => self.problems.push(problem),
        }
    }

    /// Reads the rule file `path` of `format`: the rule (none when its
    /// globs do not compile), and what is wrong with it.
    fn read(
        &self,
        format: RuleFormat,
        path: PathBuf,
    ) -> Result<(Option<Rule>, Vec<RuleProblem>), RuleProblem> {
        let root = self.root.clone().unwrap_or_default();
        let name = relative_name(path.strip_prefix(&root).unwrap_or(&path));
        let problem = |message: String| RuleProblem::new(&name, 1, message);
        let real = std::fs::canonicalize(&path)
            .map_err(|error| problem(format!("it cannot be read: {error}")))?;
        if !self
            .real_root
            .as_ref()
            .is_some_and(|root| real.starts_with(root))
        {
            return Err(problem(format!(
                "its real path `{}` is outside the project; it is not read",
                real.display()
            )));
        }
        let text = match std::fs::read(&path).map(String::from_utf8) {
            Ok(Ok(text)) => text,
            Ok(Err(_)) => return Err(problem("it is not UTF-8 text; it is not read".to_owned())),
            Err(error) => return Err(problem(format!("it cannot be read: {error}"))),
        };
        let parsed = if format == RuleFormat::Nested {
            let dir = name.rsplit_once('/').map_or("", |(dir, _)| dir);
            format::Parsed {
                applies: Applies::Under(dir.to_owned()),
                description: None,
                body: text,
                line: 1,
                problems: Vec::new(),
            }
        } else if name == COPILOT_ALWAYS {
            format::Parsed {
                applies: Applies::Always,
                ..format::parse(format, &name, &text)
            }
        } else {
            format::parse(format, &name, &text)
        };
        let mut problems = parsed.problems;
        let matcher = match &parsed.applies {
            Applies::Paths(globs) => match matcher(globs) {
                Ok(matcher) => Some(Matcher(matcher)),
                Err(error) => {
                    problems.push(problem(format!("{error}; the rule is never applied")));
                    return Ok((None, problems));
                }
            },
            _ => None,
        };
        let rule = Rule {
            name,
            path,
            format,
            applies: parsed.applies,
            description: parsed.description,
            text: parsed.body,
            line: parsed.line,
            matcher,
        };
        Ok((Some(rule), problems))
    }

    /// The nested instruction files that cover `relative` (a file's path
    /// from the root), nearest the root first: the first of the names
    /// present in each directory from the root (not itself) down to the
    /// file's, but those on the way to the working directory.
    fn nested_covering(&self, relative: &str) -> Vec<Rule> {
        let Some(root) = &self.root else {
            return Vec::new();
        };
        let mut dirs: Vec<PathBuf> = Path::new(relative)
            .ancestors()
            .skip(1)
            .filter(|dir| !dir.as_os_str().is_empty())
            .map(|dir| root.join(dir))
            .filter(|dir| !self.cwd.starts_with(dir))
            .collect();
        dirs.reverse();
        (dirs.iter())
            .filter_map(|dir| {
                self.names
                    .iter()
                    .map(|name| dir.join(name))
                    .find(|path| path.is_file())
            })
            .filter_map(|path| self.read(RuleFormat::Nested, path).ok()?.0)
            .collect()
    }

    /// Every rule, the nested instruction files found by walking the
    /// project (as git sees it) included: what the reports list.
    pub fn listed(&self) -> Vec<Rule> {
        let mut listed = self.rules.clone();
        if let Some(root) = &self.root {
            let nested = lint::nested_instructions(root, &self.cwd, &self.names);
            listed.extend(
                (nested.into_iter()).filter_map(|path| self.read(RuleFormat::Nested, path).ok()?.0),
            );
        }
        listed
    }

    /// The project root the rules were found under.
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// The rules of the formats' files, always and path ones, in the
    /// order found (the nested instruction files are looked for as files
    /// are touched: [`listed`](Self::listed) has them too).
    pub fn all(&self) -> &[Rule] {
        &self.rules
    }

    /// The rules that always apply.
    pub fn always(&self) -> impl Iterator<Item = &Rule> {
        self.rules.iter().filter(|rule| rule.is_always())
    }

    /// What is wrong with the rule files as read: unknown keys, files
    /// skipped, globs that do not compile.
    pub fn problems(&self) -> &[RuleProblem] {
        &self.problems
    }

    /// What `dsh check` says of the rules: [`problems`](Self::problems),
    /// and each glob that matches no file of the project or every file.
    pub fn lint(&self) -> Vec<RuleProblem> {
        let mut problems = self.problems.clone();
        if let Some(root) = &self.root {
            problems.extend(lint::globs(root, &self.rules));
            for path in lint::nested_instructions(root, &self.cwd, &self.names) {
                match self.read(RuleFormat::Nested, path) {
                    Ok((_, found)) => problems.extend(found),
                    Err(problem) => problems.push(problem),
                }
            }
        }
        problems
    }

    /// The notes a call that touched `touched` (absolute paths) brings, in
    /// a session whose log is `events`: each path rule it matches that the
    /// log holds no note of, once; their texts within `budget` bytes over
    /// the session (a rule past it is named, with how to read it).
    pub fn notes_for(&self, touched: &[PathBuf], events: &[Event], budget: usize) -> Vec<Note> {
        let Some(root) = &self.root else {
            return Vec::new();
        };
        let spent: usize = (events.iter())
            .map(|event| match event {
                Event::Note { text, .. } => text.len(),
                _ => 0,
            })
            .sum();
        let mut remaining = budget.saturating_sub(spent);
        let mut notes: Vec<Note> = Vec::new();
        for path in touched {
            let Some(relative) = from_root(root, path) else {
                continue;
            };
            for rule in self.rules.iter().chain(&self.nested_covering(&relative)) {
                let Some(selector) = rule.matched_by(&relative) else {
                    continue;
                };
                if noted(events, &rule.name) || notes.iter().any(|note| note.source == rule.name) {
                    continue;
                }
                let note = note(rule, &relative, &selector, remaining);
                remaining = remaining.saturating_sub(note.text.len());
                notes.push(note);
            }
        }
        notes
    }
}

/// The note of `rule`, which `relative` fired by `selector`: its text
/// whole when it fits in `remaining` bytes, else where to read it.
fn note(rule: &Rule, relative: &str, selector: &str, remaining: usize) -> Note {
    let why = match &rule.applies {
        Applies::Under(_) => format!("`{relative}` is under `{selector}`"),
        _ => format!("`{relative}` matches `{selector}`"),
    };
    let head = format!(
        "Project rule `{}` applies from here on to the files it covers ({why}):",
        rule.name
    );
    let body = rule.text.trim_end();
    let whole = format!("{head}\n\n{body}");
    let text = if whole.len() <= remaining {
        whole
    } else {
        format!(
            "{head} it is {} bytes, past what this session's instruction budget has left; \
             use the read tool on `{}` from line {} to follow it.",
            body.len(),
            rule.name,
            rule.line
        )
    };
    Note {
        source: rule.name.clone(),
        trigger: relative.to_owned(),
        about: format!("rule `{}` applied: {why}", rule.name),
        text,
    }
}

/// The glob set of `globs`: each from the project root, one without a
/// `/` matching a name in any directory.
fn matcher(globs: &[String]) -> Result<GlobSet, String> {
    let mut set = GlobSetBuilder::new();
    for glob in globs {
        set.add(compile(glob)?);
    }
    set.build().map_err(|error| error.to_string())
}

/// One glob, as the rules read it.
pub(crate) fn compile(glob: &str) -> Result<Glob, String> {
    let trimmed = glob.trim_start_matches("./").trim_start_matches('/');
    let pattern = if trimmed.contains('/') {
        trimmed.to_owned()
    } else {
        format!("**/{trimmed}")
    };
    GlobBuilder::new(&pattern)
        .literal_separator(true)
        .build()
        .map_err(|error| format!("the glob `{glob}` does not compile: {error}"))
}

/// `path` from `root`, `/`-separated, `.` and `..` resolved by name; `None`
/// outside the root.
pub(crate) fn from_root(root: &Path, path: &Path) -> Option<String> {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::CurDir => {}
            Component::Normal(part) => parts.push(part),
            Component::RootDir | Component::Prefix(_) => parts.clear(),
        }
    }
    let normal: PathBuf = std::iter::once(Component::RootDir.as_os_str())
        .chain(parts)
        .collect();
    let relative = normal.strip_prefix(root).ok()?;
    (!relative.as_os_str().is_empty()).then(|| relative_name(relative))
}

/// A relative path's name, `/`-separated.
fn relative_name(path: &Path) -> String {
    let parts: Vec<String> = path
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}

/// The files under `dir` whose names end with `suffix`, sorted.
fn files_in(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = files_under(dir)
        .into_iter()
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.ends_with(suffix) && name.len() > suffix.len())
        })
        .collect();
    files.sort();
    files
}

/// Every file under `dir`, not following links to directories.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    if !dir.is_dir() {
        return Vec::new();
    }
    ignore::WalkBuilder::new(dir)
        .hidden(false)
        .git_ignore(false)
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|kind| !kind.is_dir()))
        .map(ignore::DirEntry::into_path)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_without_a_slash_matches_a_name_anywhere() {
        let rule = Rule {
            name: "r".into(),
            path: "r".into(),
            format: RuleFormat::Cursor,
            applies: Applies::Paths(vec!["*.rs".into(), "tests/**/*.py".into()]),
            description: None,
            text: String::new(),
            line: 1,
            matcher: Some(Matcher(
                matcher(&["*.rs".into(), "tests/**/*.py".into()]).unwrap(),
            )),
        };
        assert_eq!(rule.matched_by("src/lib.rs").as_deref(), Some("*.rs"));
        assert_eq!(rule.matched_by("lib.rs").as_deref(), Some("*.rs"));
        assert_eq!(
            rule.matched_by("tests/unit/test_a.py").as_deref(),
            Some("tests/**/*.py")
        );
        assert_eq!(rule.matched_by("src/test_a.py"), None);
    }

    #[test]
    fn paths_are_read_from_the_root_by_name() {
        let root = Path::new("/p");
        assert_eq!(
            from_root(root, Path::new("/p/src/../docs/./a.md")).as_deref(),
            Some("docs/a.md")
        );
        assert_eq!(from_root(root, Path::new("/p/../q/a.md")), None);
        assert_eq!(from_root(root, Path::new("/p")), None);
    }
}
