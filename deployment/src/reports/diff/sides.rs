//! The two sides of a diff: each a deployment file, or a dump that `dsh
//! prompt --format json` wrote (a file whose first character, after
//! white space, is `{`). Both are rendered for the same agent in the same
//! working directory and counted with the same tokenizer, so that the
//! diff shows only what the files changed.

use std::path::{Path, PathBuf};

use dsh_agent_loop::Tokenizer;
use serde::Serialize;

use super::dump::read_dump;
use super::prefix::Prefix;
use crate::problem::{Problem, SourceFile};
use crate::reports::agent_prompt::{AgentPrompt, ServerStart};

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
        let prefix = read_dump(&file).map_err(|problem| vec![problem])?;
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
