//! The project's own instructions: the instruction files (`AGENTS.md`,
//! `CLAUDE.md`) a session's working directory and its parents hold, and
//! the user's global file, each one section of the session's prompt owned
//! by its file.
//!
//! # Discovery
//!
//! For a session's working directory, the project root is the nearest
//! directory, the working directory itself included, that holds `.git` (a
//! directory, or the file a worktree or submodule has); without one, the
//! working directory alone is the project. Every directory from the root
//! down to the working directory contributes the first name of
//! [`InstructionsConfig::files`] present in it as a file. The user's
//! global file is `$XDG_CONFIG_HOME/dsh/AGENTS.md`, or
//! `~/.config/dsh/AGENTS.md` when the variable is unset
//! ([`Instructions::user_file`]).
//!
//! # In the prompt
//!
//! Each file is one section, registered into the session's layer
//! ([`ScopeId::session`]): `user:AGENTS.md` at order 200, then
//! `project:<path relative to the root>` (`project:AGENTS.md`,
//! `project:crates/net/AGENTS.md`) at 201 and up, root first, so the most
//! specific instruction is the last word. The owner is the file: crate
//! `user` or `project`, item and file its path. The text is inserted
//! verbatim: it is escaped ([`escape_literal`]) before it is registered, so
//! `cat <<EOF` or `<<model>>` in a file renders as written and never as a
//! reference.
//!
//! # The budget
//!
//! [`InstructionsConfig::max_bytes`] bounds the bytes of all files
//! together, and is spent nearest first: the working directory's file is
//! kept whole before its parents', the global file last. A file that does
//! not fit is cut at the last line break that fits (or, when no line fits,
//! at a character boundary) and ends with a visible marker line naming the
//! file, the bytes kept of how many, and the line to `read` on from; a file
//! with no budget left is the marker alone. The markers are not counted
//! in the budget. Only as much of a file as the budget can keep is read,
//! so a huge file costs its share of the budget, not its size. Nothing is cut silently: [`InstructionFile::is_cut`]
//! says which were, for every report.
//!
//! Files are read once, when [`Instructions::discover`] runs — once per
//! session, when it starts — so a session's system prompt stays the same
//! byte for byte, and a file edited during a session counts from the next.
//!
//! ```
//! use dsh_deployment::host::{Instructions, InstructionsConfig};
//!
//! let project = tempfile::tempdir()?;
//! std::fs::create_dir(project.path().join(".git"))?;
//! std::fs::write(project.path().join("AGENTS.md"), "Run `cargo test` before you commit.\n")?;
//! let sub = project.path().join("sub");
//! std::fs::create_dir(&sub)?;
//! std::fs::write(sub.join("CLAUDE.md"), "Here, `cat <<EOF` is fine.\n")?;
//!
//! let found = Instructions::discover(&InstructionsConfig::default(), &sub, None)?;
//! let names: Vec<&str> = found.files().iter().map(|file| file.section.as_str()).collect();
//! assert_eq!(names, ["project:AGENTS.md", "project:sub/CLAUDE.md"]);
//! assert!(found.files().iter().all(|file| !file.is_cut()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::{Path, PathBuf};

use dsh_system_prompt::template::escape_literal;
use dsh_system_prompt::{Owner, PromptSection, Registration, RegistryError, ScopeId, SystemPrompt};
use serde::{Deserialize, Serialize};

use dsh_agent_loop::{Session, SessionId};

/// The section of the user's global instruction file.
pub const USER_INSTRUCTIONS_SECTION: &str = "user:AGENTS.md";

/// The prefix of a project instruction file's section, before its path
/// relative to the project root.
pub const PROJECT_INSTRUCTIONS_PREFIX: &str = "project:";

/// The order of the user's global file; project files follow it, root
/// first: after the tool guidance (100–199).
pub const INSTRUCTIONS_ORDER: i32 = 200;

/// The name of the user's global file, under `$XDG_CONFIG_HOME/dsh/`.
const USER_FILE_NAME: &str = "AGENTS.md";

/// The `[instructions]` table of a deployment: which file names count,
/// the budget over all files, and whether to read any.
///
/// ```
/// use dsh_deployment::host::InstructionsConfig;
///
/// let config: InstructionsConfig = toml::from_str("files = [\".rules\"]\nmax_bytes = 4096")?;
/// assert_eq!(config.files, [".rules"]);
/// assert!(config.enabled);
/// assert_eq!(InstructionsConfig::default().max_bytes, 32_768);
/// # Ok::<(), toml::de::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
// The schema's description is the file reader's: the type's documentation
// above is Rust.
#[schemars(
    description = "`[instructions]`: which instruction files each session reads from its project, and how many bytes of them."
)]
#[non_exhaustive]
pub struct InstructionsConfig {
    /// The names that count, in order: the first present in a directory
    /// is that directory's file. Plain file names, no paths.
    pub files: Vec<String>,
    /// The budget over all files, in bytes, spent nearest first.
    pub max_bytes: usize,
    /// Whether instruction files are read at all.
    pub enabled: bool,
}

impl Default for InstructionsConfig {
    fn default() -> Self {
        Self {
            files: vec!["AGENTS.md".to_owned(), "CLAUDE.md".to_owned()],
            max_bytes: 32 * 1024,
            enabled: true,
        }
    }
}

impl InstructionsConfig {
    /// The same config with a budget of `max_bytes`.
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// The same config with the names `files`.
    pub fn with_files(mut self, files: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.files = files.into_iter().map(Into::into).collect();
        self
    }

    /// The same config, reading no file.
    pub fn disabled(mut self) -> Self {
        self.enabled = false;
        self
    }

    /// Checks that every name of `files` is a plain file name: not empty,
    /// not `.` or `..`, without a path separator. The error names the
    /// first that is not, by its index.
    pub fn check(&self) -> Result<(), InstructionsError> {
        for (index, name) in self.files.iter().enumerate() {
            let reason = if name.is_empty() {
                "it is empty"
            } else if name == "." || name == ".." {
                "it names a directory"
            } else if name.contains('/') || name.contains('\\') {
                "it is a path, not a file name"
            } else {
                continue;
            };
            return Err(InstructionsError::InvalidFileName {
                index,
                name: name.clone(),
                reason,
            });
        }
        Ok(())
    }
}

/// Where an instruction file comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum InstructionSource {
    /// The user's global file.
    User,
    /// A directory of the project, from its root to the working directory.
    Project,
}

/// One instruction file found for a session, as its section holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct InstructionFile {
    /// The section's name: `user:AGENTS.md`, `project:sub/AGENTS.md`.
    pub section: String,
    /// The section's order.
    pub order: i32,
    /// Whose file it is.
    pub source: InstructionSource,
    /// The file, as found from the working directory.
    pub path: PathBuf,
    /// The file's size in bytes.
    pub bytes: usize,
    /// How many of its bytes the section holds: `bytes` unless it was cut.
    pub kept: usize,
    /// The text as the prompt shows it: the kept bytes, and the marker
    /// line when it was cut. Not escaped.
    pub text: String,
}

impl InstructionFile {
    /// Whether the budget cut the file.
    pub fn is_cut(&self) -> bool {
        self.kept < self.bytes
    }

    /// The section's owner: the file.
    pub fn owner(&self) -> Owner {
        let krate = match self.source {
            InstructionSource::User => "user",
            InstructionSource::Project => "project",
        };
        let path = self.path.display().to_string();
        Owner::new(krate, path.clone(), path, 1)
    }

    /// The section to register: the text escaped, so it renders verbatim.
    pub fn prompt_section(&self) -> PromptSection {
        PromptSection::new(
            self.section.clone(),
            self.order,
            escape_literal(&self.text).into_owned(),
        )
        .owned_by(self.owner())
    }
}

/// The instruction files of one session, in render order: the user's
/// global file, then the project's from the root to the working
/// directory.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Instructions {
    /// The project root: the nearest directory holding `.git`, else the
    /// working directory; `None` when the config is disabled.
    root: Option<PathBuf>,
    files: Vec<InstructionFile>,
}

impl Instructions {
    /// No instruction files.
    pub fn none() -> Self {
        Self::default()
    }

    /// The user's global file, where the environment puts it:
    /// `$XDG_CONFIG_HOME/dsh/AGENTS.md`, or `$HOME/.config/dsh/AGENTS.md`
    /// when `XDG_CONFIG_HOME` is unset, empty or relative (as the XDG
    /// specification says to ignore it then); `None` without either.
    pub fn user_file() -> Option<PathBuf> {
        let config = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|dir| dir.is_absolute())
            .or_else(|| {
                let home = PathBuf::from(std::env::var_os("HOME")?);
                home.is_absolute().then(|| home.join(".config"))
            })?;
        Some(config.join("dsh").join(USER_FILE_NAME))
    }

    /// Finds and reads the instruction files of a session in `cwd`, with
    /// the user's global file at `user_file` (usually
    /// [`Instructions::user_file`]), and spends the budget on them.
    ///
    /// A name that is present but not readable as UTF-8 text is an error
    /// naming the file: a prompt is never silently missing a file.
    /// A disabled config finds nothing.
    pub fn discover(
        config: &InstructionsConfig,
        cwd: &Path,
        user_file: Option<&Path>,
    ) -> Result<Self, InstructionsError> {
        Self::find(config, Some(cwd), user_file)
    }

    /// [`discover`](Self::discover), for a session that may have no
    /// working directory: then the user's file alone is read.
    fn find(
        config: &InstructionsConfig,
        cwd: Option<&Path>,
        user_file: Option<&Path>,
    ) -> Result<Self, InstructionsError> {
        if !config.enabled {
            return Ok(Self::none());
        }
        config.check()?;
        let root = cwd.map(project_root);
        // Nearest first: the order the budget is spent in.
        let mut nearest_first: Vec<(InstructionSource, PathBuf, String)> = Vec::new();
        if let (Some(cwd), Some(root)) = (cwd, &root) {
            for dir in cwd.ancestors() {
                if let Some(path) = first_present(dir, &config.files) {
                    let relative = path.strip_prefix(root).unwrap_or(&path);
                    let section =
                        format!("{PROJECT_INSTRUCTIONS_PREFIX}{}", section_path(relative));
                    nearest_first.push((InstructionSource::Project, path, section));
                }
                if dir == root {
                    break;
                }
            }
        }
        if let Some(user) = user_file.filter(|user| user.is_file()) {
            nearest_first.push((
                InstructionSource::User,
                user.to_path_buf(),
                USER_INSTRUCTIONS_SECTION.to_owned(),
            ));
        }
        let mut budget = config.max_bytes;
        let mut files = Vec::with_capacity(nearest_first.len());
        for (source, path, section) in nearest_first {
            let (text, bytes) = read_text(&path, budget)?;
            let (kept_text, kept) = spend(&text, bytes, &mut budget, &path);
            files.push(InstructionFile {
                section,
                order: 0,
                source,
                bytes,
                kept,
                text: kept_text,
                path,
            });
        }
        // Render order: the global file first, then root to working
        // directory — the reverse of the order the budget was spent in.
        files.reverse();
        for (at, file) in files.iter_mut().enumerate() {
            file.order = INSTRUCTIONS_ORDER.saturating_add(i32::try_from(at).unwrap_or(i32::MAX));
        }
        Ok(Self { root, files })
    }

    /// The project root the files were found from, if any were looked for
    /// (none when disabled, or for a session without a working directory).
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// The files, in render order.
    pub fn files(&self) -> &[InstructionFile] {
        &self.files
    }

    /// The file whose section is `section`.
    pub fn file(&self, section: &str) -> Option<&InstructionFile> {
        self.files.iter().find(|file| file.section == section)
    }

    /// Registers each file's section into the layer of `session`
    /// ([`ScopeId::session`]) of `prompt`: seen by that session's
    /// assemblies only, and unregistered when the returned handles drop —
    /// keep them as long as the session lives.
    pub fn register(
        &self,
        prompt: &SystemPrompt,
        session: &SessionId,
    ) -> Result<Vec<Registration>, RegistryError> {
        let layer = prompt.in_scope(ScopeId::session(session.as_str()));
        self.files
            .iter()
            .map(|file| layer.section(file.prompt_section()))
            .collect()
    }
}

/// The instruction files of one session, read when it starts and
/// registered into its layer for as long as this value lives: keep it
/// beside the session, drop it with the session.
#[derive(Debug)]
pub struct SessionInstructions {
    found: Instructions,
    _registrations: Vec<Registration>,
}

impl SessionInstructions {
    /// Reads the instruction files of `session` — from its working
    /// directory, and the user's global file ([`Instructions::user_file`])
    /// — and registers them into its layer of `prompt`. A session without
    /// a working directory gets the user's file only.
    pub fn start(
        config: &InstructionsConfig,
        prompt: &SystemPrompt,
        session: &Session,
    ) -> Result<Self, InstructionsError> {
        let user_file = Instructions::user_file();
        let found = Instructions::find(config, session.cwd(), user_file.as_deref())?;
        let registrations =
            found
                .register(prompt, session.id())
                .map_err(|source| InstructionsError::Register {
                    session: session.id().to_string(),
                    source: Box::new(source),
                })?;
        Ok(Self {
            found,
            _registrations: registrations,
        })
    }

    /// No files, registered nowhere: for a session that reads none.
    pub fn none() -> Self {
        Self {
            found: Instructions::none(),
            _registrations: Vec::new(),
        }
    }

    /// The files, as found and cut.
    pub fn found(&self) -> &Instructions {
        &self.found
    }
}

/// The nearest directory of `cwd` and its parents that holds `.git`, or
/// `cwd` itself.
fn project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|dir| dir.join(".git").symlink_metadata().is_ok())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// The first of `names` present in `dir` as a file (a symlink to a file
/// counts).
fn first_present(dir: &Path, names: &[String]) -> Option<PathBuf> {
    names
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.is_file())
}

/// A relative path as a section name holds it: components joined by `/`,
/// each character a section name cannot hold (a space, a non-ASCII
/// letter) replaced by `_`. The owner keeps the true path; names stay
/// distinct, since the files of one session are at different depths.
fn section_path(relative: &Path) -> String {
    let joined: Vec<String> = relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    joined
        .join("/")
        .chars()
        // After `project:`, the name grammar allows these anywhere.
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '/' | '_' | '.' | ':' | '-' => c,
            _ => '_',
        })
        .collect()
}

/// The file's text, as much of it as `budget` can keep (and a character's
/// bytes more, to cut at a character), and its size in bytes: a huge file
/// costs the budget, not its size. An unreadable file, or one that is not
/// UTF-8 in what is read, is an error naming it.
fn read_text(path: &Path, budget: usize) -> Result<(String, usize), InstructionsError> {
    use std::io::Read as _;

    let read_error = |source| InstructionsError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let size = file.metadata().map_err(read_error)?.len();
    let limit = u64::try_from(budget).unwrap_or(u64::MAX).saturating_add(4);
    let mut bytes = Vec::new();
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    // The size may have changed since `metadata`: what was read counts.
    let read_whole = u64::try_from(bytes.len()).unwrap_or(u64::MAX) < limit;
    let total = if read_whole {
        bytes.len()
    } else {
        usize::try_from(size).unwrap_or(usize::MAX).max(bytes.len())
    };
    match String::from_utf8(bytes) {
        Ok(text) => Ok((text, total)),
        // A character cut by the read limit, past what the budget keeps.
        Err(error) if !read_whole && error.utf8_error().error_len().is_none() => {
            let valid = error.utf8_error().valid_up_to();
            let mut bytes = error.into_bytes();
            bytes.truncate(valid);
            let text = String::from_utf8(bytes).map_err(|error| InstructionsError::NotUtf8 {
                path: path.to_path_buf(),
                offset: error.utf8_error().valid_up_to(),
            })?;
            Ok((text, total))
        }
        Err(error) => Err(InstructionsError::NotUtf8 {
            path: path.to_path_buf(),
            offset: error.utf8_error().valid_up_to(),
        }),
    }
}

/// What of `text` (the start of a file of `total` bytes) the remaining
/// `budget` keeps, with the marker when it is cut, and how many bytes of
/// the file that is; takes them from `budget`.
fn spend(text: &str, total: usize, budget: &mut usize, path: &Path) -> (String, usize) {
    if total <= *budget && text.len() == total {
        *budget -= total;
        return (text.to_owned(), total);
    }
    let mut kept = (*budget).min(text.len());
    while !text.is_char_boundary(kept) {
        kept -= 1;
    }
    // Whole lines where one fits: a half line reads as a whole
    // instruction to a model.
    if let Some(line_end) = text[..kept].rfind('\n') {
        kept = line_end + 1;
    }
    *budget -= kept;
    let shown = &text[..kept];
    let next_line = shown.matches('\n').count() + 1;
    let mut out = String::with_capacity(kept + 200);
    out.push_str(shown);
    if !shown.is_empty() && !shown.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&cut_marker(path, kept, total, next_line));
    (out, kept)
}

/// The line that ends a cut file: which file, how much of it is above,
/// and how to read the rest.
pub(super) fn cut_marker(path: &Path, kept: usize, total: usize, next_line: usize) -> String {
    format!(
        "[dsh cut this instruction file to fit its budget: {kept} of {total} bytes of {} \
         are above; use the read tool on that file from line {next_line} for the rest]",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_paths_hold_only_section_name_characters() {
        assert_eq!(
            section_path(Path::new("crates/net/AGENTS.md")),
            "crates/net/AGENTS.md"
        );
        assert_eq!(
            section_path(Path::new("mon projet/é/AGENTS.md")),
            "mon_projet/_/AGENTS.md"
        );
        let name = format!(
            "{PROJECT_INSTRUCTIONS_PREFIX}{}",
            section_path(Path::new("a b/AGENTS.md"))
        );
        assert!(
            dsh_system_prompt::template::is_section_name(&name),
            "{name}"
        );
    }

    #[test]
    fn a_cut_keeps_whole_lines_and_says_where_the_rest_is() {
        let mut budget = 10;
        let (text, kept) = spend(
            "one\ntwo\nthree\n",
            14,
            &mut budget,
            Path::new("/p/AGENTS.md"),
        );
        assert_eq!(kept, 8);
        assert_eq!(budget, 2);
        assert!(text.starts_with("one\ntwo\n[dsh cut"), "{text}");
        assert!(text.contains("8 of 14 bytes of /p/AGENTS.md"), "{text}");
        assert!(text.contains("from line 3"), "{text}");
    }

    #[test]
    fn a_cut_inside_the_first_line_stops_at_a_character() {
        let mut budget = 3;
        let (text, kept) = spend("été long", 10, &mut budget, Path::new("/p/A.md"));
        // `é` is two bytes: three bytes hold `é` and `t`.
        assert_eq!(kept, 3);
        assert!(text.starts_with("ét\n[dsh cut"), "{text}");
    }

    #[test]
    fn bad_file_names_are_named_by_index() {
        let config = InstructionsConfig::default().with_files(["AGENTS.md", "docs/AGENTS.md"]);
        let error = config.check().expect_err("a path is refused");
        assert!(
            matches!(error, InstructionsError::InvalidFileName { index: 1, .. }),
            "{error}"
        );
    }
}

/// The instruction files of a session could not be read, or the
/// `[instructions]` table names a file name that is not one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InstructionsError {
    /// A name of `files` is not a plain file name.
    #[error(
        "`files[{index}]` of [instructions] is `{name}`, which is not a file name: {reason}; \
         list plain names such as `AGENTS.md`, found in each directory from the project root \
         to the working directory"
    )]
    InvalidFileName {
        /// Its index in `files`.
        index: usize,
        /// The name as written.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An instruction file is present but cannot be read.
    #[error(
        "cannot read instruction file `{}`: {source}; make it readable, remove it, \
         or set `enabled = false` in [instructions]",
        path.display()
    )]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// An instruction file is not UTF-8 text.
    #[error(
        "instruction file `{}` is not UTF-8 text (the first invalid byte is at offset {offset}); \
         save it as UTF-8, or set `enabled = false` in [instructions]",
        path.display()
    )]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// The offset of the first byte that is not UTF-8.
        offset: usize,
    },
    /// The files' sections could not be registered into the session's
    /// layer (a session that registered them already).
    #[error("the instruction files of session `{session}` cannot be registered: {source}")]
    Register {
        /// The session.
        session: String,
        /// Why (boxed: the registry's errors carry owners, and are large).
        source: Box<dsh_system_prompt::RegistryError>,
    },
}
