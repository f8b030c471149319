//! The two sides of a diff: each a deployment file, or a dump that `dsh
//! prompt --format json` wrote (a file whose first character, after
//! white space, is `{`). Both are rendered for the same agent in the same
//! working directory and counted with the same tokenizer, so that the
//! diff shows only what the files changed.

use std::ops::Range;
use std::path::{Path, PathBuf};

use dsh_agent_loop::Tokenizer;
use serde::{Deserialize, Serialize};

use super::prefix::Prefix;
use crate::problem::{Problem, SourceFile};
use crate::reports::agent_prompt::{AgentPrompt, ServerStart};

/// The version of the format of `dsh prompt --format json` this dsh
/// writes (its `format_version`) and reads back as a side of a diff.
/// Version 1 is the first to carry a `prefix`; a dump without
/// `format_version` is older and has none.
pub const DUMP_FORMAT_VERSION: u32 = 1;

/// What a side was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// A deployment file, loaded and rendered.
    Deployment,
    /// A dump of `dsh prompt --format json`.
    Dump,
}

/// One side of a diff: where it was read from, and its prefix.
#[derive(Debug, Clone)]
pub struct Side {
    /// The path, as given.
    pub path: String,
    /// What the file is.
    pub kind: SourceKind,
    /// The agent's request prefix.
    pub prefix: Prefix,
    /// The optional MCP servers of a deployment that did not start: the
    /// prefix is without their tools, and a front end says so.
    pub server_failures: Vec<Problem>,
}

/// The working directory the deployments are rendered in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionDirectory {
    /// As the command line says: a directory, or none (`--no-cwd`).
    Given(Option<PathBuf>),
    /// None said: a dump's (the new side's, else the old side's), so a
    /// deployment compares with a dump of itself; else this one (the
    /// current directory).
    Else(PathBuf),
}

/// How the two sides are read.
#[derive(Debug, Clone)]
pub struct SideOptions {
    /// The agent (`None`: a dump's, else each deployment's first agent).
    pub agent: Option<String>,
    /// The session's working directory.
    pub cwd: SessionDirectory,
    /// Whether a deployment's MCP servers start, so that their tools and
    /// instructions are in its prefix.
    pub mcp: ServerStart,
}

/// A file given as a side, read but not yet rendered.
enum Input {
    Deployment(PathBuf),
    Dump { path: String, prefix: Prefix },
}

/// Reads `old` and `new` (every problem of both, each located in its
/// file) and renders each for the same agent, in the same working
/// directory, counted with the new side's tokenizer.
pub fn read_sides(
    old: &Path,
    new: &Path,
    options: &SideOptions,
) -> Result<(Side, Side), Vec<Problem>> {
    let (old, new) = both(Input::read(old), Input::read(new))?;
    let agent = (options.agent.clone())
        .or_else(|| new.dump().or(old.dump()).map(|dump| dump.agent.clone()));
    if let Some(agent) = &agent {
        let (old_agent, new_agent) = (old.check_agent(agent), new.check_agent(agent));
        both(old_agent, new_agent)?;
    }
    let cwd = match &options.cwd {
        SessionDirectory::Given(cwd) => cwd.clone(),
        SessionDirectory::Else(current) => match new.dump().or(old.dump()) {
            Some(dump) => dump.cwd.as_ref().map(PathBuf::from),
            None => Some(current.clone()),
        },
    };
    let render = |input: Input, tokenizer: Option<Tokenizer>| {
        let mcp = options.mcp.clone();
        input.side(agent.as_deref(), cwd.as_deref(), mcp, tokenizer)
    };
    // The old side is rendered even when the new one fails, so that both
    // sides' problems are reported at once.
    let new = render(new, None);
    let tokenizer = new.as_ref().ok().and_then(|side| side.prefix.tokenizer());
    let old = render(old, tokenizer);
    both(old, new)
}

/// Both results, or the problems of either and both.
fn both<A, B>(
    a: Result<A, Vec<Problem>>,
    b: Result<B, Vec<Problem>>,
) -> Result<(A, B), Vec<Problem>> {
    match (a, b) {
        (Ok(a), Ok(b)) => Ok((a, b)),
        (a, b) => Err([a.err(), b.err()].into_iter().flatten().flatten().collect()),
    }
}

impl Input {
    /// Reads the file at `path`: a dump, parsed and checked, or a
    /// deployment, which [`side`](Self::side) loads.
    fn read(path: &Path) -> Result<Self, Vec<Problem>> {
        let text =
            dsh_tools::read_input_file(path, dsh_tools::MAX_INPUT_FILE_BYTES).map_err(|error| {
                vec![Problem::new(match error {
                    dsh_tools::InputFileError::Io { source, .. } => {
                        format!("cannot read `{}`: {source}", path.display())
                    }
                    other => format!("cannot read `{}`: {other}", path.display()),
                })]
            })?;
        if !text.trim_start().starts_with('{') {
            return Ok(Self::Deployment(path.to_owned()));
        }
        let file = SourceFile::new(path.display().to_string(), text);
        let prefix = parse_dump(&file).map_err(|problem| vec![problem])?;
        Ok(Self::Dump {
            path: file.name().to_owned(),
            prefix,
        })
    }

    /// The prefix of a dump.
    fn dump(&self) -> Option<&Prefix> {
        match self {
            Self::Dump { prefix, .. } => Some(prefix),
            Self::Deployment(_) => None,
        }
    }

    /// Refuses a dump of another agent than `agent`.
    fn check_agent(&self, agent: &str) -> Result<(), Vec<Problem>> {
        match self {
            Self::Dump { path, prefix } if prefix.agent != agent => Err(vec![
                Problem::new(format!(
                    "`{path}` is a dump of agent `{}`, not of agent `{agent}`",
                    prefix.agent
                ))
                .help(format!(
                    "compare the same agent on both sides: dump agent `{agent}` with `dsh prompt --agent {agent} --format json`, or leave `--agent` out"
                )),
            ]),
            _ => Ok(()),
        }
    }

    /// The side: a dump counted with `tokenizer`, or a deployment's agent
    /// rendered in `cwd` and counted with `tokenizer` (`None`: its own).
    fn side(
        self,
        agent: Option<&str>,
        cwd: Option<&Path>,
        mcp: ServerStart,
        tokenizer: Option<Tokenizer>,
    ) -> Result<Side, Vec<Problem>> {
        match self {
            Self::Dump { path, prefix } => Ok(Side {
                path,
                kind: SourceKind::Dump,
                prefix: match tokenizer {
                    Some(tokenizer) => prefix.counted_with(tokenizer),
                    None => prefix,
                },
                server_failures: Vec::new(),
            }),
            Self::Deployment(path) => {
                let shown = AgentPrompt::load(Some(&path), agent, cwd, mcp)?;
                Ok(Side {
                    path: path.display().to_string(),
                    kind: SourceKind::Deployment,
                    prefix: Prefix::of(&shown, tokenizer)?,
                    server_failures: shown.server_failures().to_vec(),
                })
            }
        }
    }
}

/// What a dump is read as: its version, and its prefix. The other keys
/// of `dsh prompt --format json` are for people and other programs.
#[derive(Deserialize)]
struct Dump {
    format_version: Option<u32>,
    prefix: Option<Prefix>,
}

/// The prefix of the dump `file`, or the problem that makes it none,
/// located in the file.
fn parse_dump(file: &SourceFile) -> Result<Prefix, Problem> {
    let text = file.text();
    let deserializer = &mut serde_json::Deserializer::from_str(text);
    let dump: Dump = serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let at = offset_of(text, error.inner().line(), error.inner().column());
        let message = error.inner().to_string();
        let message = message
            .rsplit_once(" at line ")
            .map_or(&*message, |(m, _)| m);
        let path = error.path().to_string();
        let whose = if path == "." {
            String::new()
        } else {
            format!(" (`{path}`)")
        };
        file.problem(format!(
            "`{}` is not a dump of `dsh prompt --format json`: {message}{whose}",
            file.name()
        ))
        .label(at..at, "here")
    })?;
    let name = file.name();
    let version_key = key_span(text, 0, "format_version", 1);
    let Some(version) = dump.format_version else {
        return Err(file
            .problem(format!("`{name}` has no `format_version`: it was written by a dsh whose dumps carry no prefix"))
            .label(0..1, "this dump")
            .help("dump the prompt again with this dsh: `dsh prompt --format json > FILE`"));
    };
    if version != DUMP_FORMAT_VERSION {
        return Err(labeled(
            file.problem(format!(
                "`{name}` is a dump of format version {version}; this dsh reads version {DUMP_FORMAT_VERSION}"
            )),
            version_key,
            "this version",
        )
        .help("dump the prompt again with this dsh: `dsh prompt --format json > FILE`"));
    }
    let prefix_key = key_span(text, 0, "prefix", 1);
    let Some(prefix) = dump.prefix else {
        return Err(labeled(
            file.problem(format!(
                "`{name}` has no prefix: its prompt did not render when it was dumped"
            )),
            prefix_key,
            "no prefix",
        )
        .help("run `dsh check` on the deployment it was dumped from, fix it, and dump it again"));
    };
    check_prefix(file, &prefix, prefix_key.map_or(0, |key| key.end))?;
    Ok(prefix)
}

/// The problems of a parsed prefix that serde cannot see: a tokenizer
/// this dsh does not have, a section that is not where the system prompt
/// has it. `from` is where the prefix starts in the file.
fn check_prefix(file: &SourceFile, prefix: &Prefix, from: usize) -> Result<(), Problem> {
    let name = file.name();
    if prefix.tokenizer().is_none() {
        let known: Vec<&str> = (dsh_agent_loop::Encoding::ALL.iter())
            .map(|encoding| encoding.name())
            .collect();
        return Err(labeled(
            file.problem(format!(
                "`{name}` counts its tokens with `{}`, which this dsh does not have",
                prefix.tokenizer
            )),
            key_span(file.text(), from, "tokenizer", 2),
            "this tokenizer",
        )
        .help(format!("this dsh counts with {}", known.join(" or "))));
    }
    if let Some(section) = prefix.unsound_section() {
        return Err(labeled(
            file.problem(format!(
                "`{name}`: section `{}` is at bytes {}..{}, which is not a place in its system prompt of {} bytes after the section before it",
                section.name,
                section.start,
                section.end,
                prefix.system_prompt.len()
            )),
            key_span(file.text(), from, "sections", 2),
            "these sections",
        )
        .help("dump the prompt again with `dsh prompt --format json`: a dump is not to be edited"));
    }
    Ok(())
}

/// `problem` with a label on `span`, when there is one.
fn labeled(problem: Problem, span: Option<Range<usize>>, label: &str) -> Problem {
    match span {
        Some(span) => problem.label(span, label),
        None => problem,
    }
}

/// Where the key `key` is written at `depth` (1: a key of the dump's
/// object) at or after byte `from`, as `dsh prompt --format json` writes
/// it: pretty, two spaces an indent. `None` in a dump written another
/// way (the problem is then reported without a place).
fn key_span(text: &str, from: usize, key: &str, depth: usize) -> Option<Range<usize>> {
    let needle = format!("\n{}\"{key}\":", "  ".repeat(depth));
    let at = text.get(from..)?.find(&needle)? + from + 1 + 2 * depth;
    Some(at..at + key.len() + 2)
}

/// The byte offset of serde_json's 1-based `line` and `column` in `text`
/// (column 0: the line's start), clamped to the text.
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let start: usize = (text.split_inclusive('\n'))
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let mut at = (start + column.saturating_sub(1)).min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}
