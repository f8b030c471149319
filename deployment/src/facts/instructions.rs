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
//! verbatim ([`PromptSection::verbatim`]), so `cat <<EOF` or `<<model>>`
//! in a file renders as written and never as a reference.
//!
//! # Imports
//!
//! A file may import others with Claude Code's `@path` syntax (a
//! `CLAUDE.md` whose whole text is `@AGENTS.md` is common): a `@` at the
//! start of the text or after whitespace, then a path up to the next
//! whitespace, relative to the importing file (`~/` for the home
//! directory, or absolute), outside Markdown code spans and code blocks.
//! A path that names no file is text, not an import. Each imported file is
//! a section of its own, owned by its own path, right after the file that
//! imports it, within the same budget; imports are followed
//! [`MAX_IMPORT_DEPTH`] hops deep, each file is read once, and an import
//! cycle is refused and said ([`SkipReason`]), never followed.
//!
//! # Where files may come from
//!
//! A file — found in a directory, the user's, or imported — is read only
//! when its real path (symbolic links resolved) is under the project root
//! or the user's config directory (the directory of the global file). Any
//! other is skipped, never read: a committed `AGENTS.md` that links to
//! `/etc/passwd` does not send that file to the model's provider.
//! [`Instructions::skipped`] says which were, where they point, and why.
//!
//! # The budget
//!
//! [`InstructionsConfig::max_bytes`] bounds the bytes of all files
//! together, the markers included, and is spent nearest first: the
//! working directory's file (and what it imports) is kept whole before its
//! parents', the global file last. The first file that does not fit is
//! cut at the last line break that fits (a first line longer than the
//! whole budget at a character boundary; a file of which no line fits is
//! left out rather than shown as a fragment) and ends with a visible
//! marker line naming the
//! file, the bytes kept of how many, and the line to `read` on from. The
//! files that get nothing share one marker, its own section
//! ([`LEFT_OUT_SECTION`]), that says how many were left out and where.
//! Only as much of a file as the budget can keep is read, so a huge file
//! costs its share of the budget, not its size, and a thousand nested
//! directories cost the budget, not a thousand markers. Nothing is cut
//! silently: [`InstructionFile::is_cut`] and [`Instructions::left_out`]
//! say which were, for every report.
//!
//! Files are read once, when [`Instructions::discover`] runs — once per
//! session, when it starts — so a session's system prompt stays the same
//! byte for byte, and a file edited during a session counts from the next.
//!
//! ```
//! use dsh_deployment::facts::instructions::{Instructions, InstructionsConfig};
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

mod budget;
mod gather;
mod imports;

use std::fmt;
use std::path::{Path, PathBuf};

use dsh_system_prompt::{Owner, PromptSection, Registration, RegistryError, ScopeId, SystemPrompt};
use serde::{Deserialize, Serialize};

use dsh_agent_loop::{Session, SessionId};

use super::rules::Rules;

/// The section of the user's global instruction file.
pub(crate) const USER_INSTRUCTIONS_SECTION: &str = "user:AGENTS.md";

/// The prefix of a project instruction file's section, before its path
/// relative to the project root.
pub(crate) const PROJECT_INSTRUCTIONS_PREFIX: &str = "project:";

/// The order of the user's global file; project files follow it, root
/// first: after the tool guidance (100–199).
pub(crate) const INSTRUCTIONS_ORDER: i32 = 200;

/// The name of the user's global file, under `$XDG_CONFIG_HOME/dsh/`.
const USER_FILE_NAME: &str = "AGENTS.md";

/// The section of the marker that stands for the files the budget left
/// out: a name no file's path gives (`::`), under `project:` so that a
/// client's override keeps it with the files.
pub const LEFT_OUT_SECTION: &str = "project::left-out";

/// The smallest budget `[instructions]` accepts: room for the marker
/// that says files were left out, however many. To read no file, set
/// `enabled = false`.
pub const MIN_MAX_BYTES: usize = 256;

pub use imports::MAX_IMPORT_DEPTH;

/// The `[instructions]` table of a deployment: which file names count,
/// the budget over all files, and whether to read any.
///
/// ```
/// use dsh_deployment::facts::instructions::InstructionsConfig;
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
    /// The budget over all files, markers included, in bytes, spent
    /// nearest first; at least 256.
    pub max_bytes: usize,
    /// Whether instruction files are read at all.
    pub enabled: bool,
    /// Whether the project's rule files are read too (Cursor's
    /// `.cursor/rules`, Copilot's `.github/instructions`, Claude Code's
    /// `.claude/rules`, and instruction files in directories below the
    /// root): always rules join these files, path rules reach the model
    /// when a file they cover is first touched.
    pub rules: bool,
}

impl Default for InstructionsConfig {
    fn default() -> Self {
        Self {
            files: vec!["AGENTS.md".to_owned(), "CLAUDE.md".to_owned()],
            max_bytes: 32 * 1024,
            enabled: true,
            rules: true,
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

    /// Checks that every name of `files` is a plain file name (not
    /// empty, not `.` or `..`, without a path separator), the error naming
    /// the first that is not by its index, and that `max_bytes` holds a
    /// marker ([`MIN_MAX_BYTES`]).
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
        if self.enabled && self.max_bytes < MIN_MAX_BYTES {
            return Err(InstructionsError::BudgetTooSmall {
                max_bytes: self.max_bytes,
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
    /// The user's config directory: the global file, or a file it imports.
    User,
    /// The project: a directory from its root to the working directory,
    /// or a file one of theirs imports.
    Project,
}

/// Where a file was imported: the importing file and the `@path` in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ImportSite {
    /// The importing file.
    pub file: PathBuf,
    /// The path after `@`, as written.
    pub written: String,
    /// The line of the import in the importing file, from 1.
    pub line: usize,
}

impl fmt::Display for ImportSite {
    /// `` `@AGENTS.md` in /p/CLAUDE.md:1 ``.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`@{}` in {}:{}",
            self.written,
            self.file.display(),
            self.line
        )
    }
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
    /// The file, as found from the working directory, or as its import
    /// resolved.
    pub path: PathBuf,
    /// The file's size in bytes.
    pub bytes: usize,
    /// How many of its bytes the section holds: `bytes` unless it was cut.
    pub kept: usize,
    /// The text as the prompt shows it: the kept bytes, and the marker
    /// line when it was cut. Not escaped.
    pub text: String,
    /// The import that brought it, for a file no directory contributes.
    pub imported_by: Option<ImportSite>,
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
    pub(crate) fn prompt_section(&self) -> PromptSection {
        PromptSection::verbatim(self.section.clone(), self.order, &self.text).owned_by(self.owner())
    }
}

/// A file the budget had nothing left for: not in the prompt, but named
/// by the marker of [`FilesLeftOut`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct LeftOutFile {
    /// Whose file it is.
    pub source: InstructionSource,
    /// The file, as found or imported.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: usize,
    /// The import that brought it, if one did.
    pub imported_by: Option<ImportSite>,
}

/// The files the budget left out, and the one marker in the prompt that
/// says how many and where: section [`LEFT_OUT_SECTION`], counted in the
/// budget.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct FilesLeftOut {
    /// The marker's section: [`LEFT_OUT_SECTION`].
    pub section: String,
    /// Its order: first of the instruction files, where the farthest
    /// files, which are the ones left out, would have been.
    pub order: i32,
    /// The marker, as the prompt shows it.
    pub text: String,
    /// The files, in the order the prompt would have shown them.
    pub files: Vec<LeftOutFile>,
}

impl FilesLeftOut {
    /// The marker's owner: dsh's instruction budget, not any file.
    pub fn owner(&self) -> Owner {
        Owner::new(
            "dsh-deployment",
            "the instruction budget (`max_bytes` in [instructions])",
            file!(),
            line!(),
        )
    }

    /// The section to register, verbatim.
    pub(crate) fn prompt_section(&self) -> PromptSection {
        PromptSection::verbatim(self.section.clone(), self.order, &self.text).owned_by(self.owner())
    }
}

/// A file that was found (in a directory, or by an import) and not read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SkippedFile {
    /// The file, as found or as its import resolved.
    pub path: PathBuf,
    /// The import that named it, if one did.
    pub imported_by: Option<ImportSite>,
    /// Why it was not read.
    pub reason: SkipReason,
}

/// Why a file found was not read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
#[non_exhaustive]
pub enum SkipReason {
    /// Its real path is outside the project root and the user's config
    /// directory.
    Outside {
        /// Where it points.
        real: PathBuf,
        /// The directories instruction files may come from.
        allowed: Vec<PathBuf>,
    },
    /// An import of a file whose own imports led here: a cycle, followed
    /// once.
    Cycle,
    /// An import more than [`MAX_IMPORT_DEPTH`] hops from the file a
    /// directory contributes.
    TooDeep,
    /// A file in the prompt already, as this section.
    Repeated {
        /// The section that holds it.
        section: String,
    },
}

impl SkippedFile {
    /// Whether the skip is worth a warning: every reason but a file that
    /// is in the prompt already.
    pub fn is_warning(&self) -> bool {
        !matches!(self.reason, SkipReason::Repeated { .. })
    }
}

impl fmt::Display for SkippedFile {
    /// What was skipped and why, in a sentence without its period.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.imported_by {
            Some(site) => write!(f, "{site} imports `{path}`")?,
            None => write!(f, "instruction file `{path}`")?,
        }
        match &self.reason {
            SkipReason::Outside { real, allowed } => {
                let allowed: Vec<String> = allowed
                    .iter()
                    .map(|dir| format!("`{}`", dir.display()))
                    .collect();
                write!(
                    f,
                    ", whose real path `{}` is outside {}; it is not read",
                    real.display(),
                    match allowed.as_slice() {
                        [] => "every directory instruction files may come from".to_owned(),
                        [one] => one.clone(),
                        many => format!(
                            "{} and {}",
                            many[..many.len() - 1].join(", "),
                            many[many.len() - 1]
                        ),
                    }
                )
            }
            SkipReason::Cycle => f.write_str(
                ", a file whose imports lead here: an import cycle, not followed (each file is \
                 read once)",
            ),
            SkipReason::TooDeep => write!(
                f,
                ", more than {MAX_IMPORT_DEPTH} hops of imports from the directory's file: \
                 imports are followed {MAX_IMPORT_DEPTH} hops deep"
            ),
            SkipReason::Repeated { section } => {
                write!(f, ", which is in the prompt already as `{section}`")
            }
        }
    }
}

/// The instruction files of one session, in render order: the user's
/// global file, then the project's from the root to the working
/// directory, each followed by what it imports.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Instructions {
    /// The project root: the nearest directory holding `.git`, else the
    /// working directory; `None` when the config is disabled.
    root: Option<PathBuf>,
    files: Vec<InstructionFile>,
    left_out: Option<FilesLeftOut>,
    skipped: Vec<SkippedFile>,
    rules: Rules,
}

impl Instructions {
    /// No instruction files.
    pub fn none() -> Self {
        Self::default()
    }

    /// The user's global file, where the environment puts it:
    /// `$XDG_CONFIG_HOME/dsh/AGENTS.md`, or `$HOME/.config/dsh/AGENTS.md`
    /// when `XDG_CONFIG_HOME` is unset, empty or relative (as the XDG
    /// specification says to ignore it then); `None` without either. Its
    /// directory is the user's config directory, where instruction files
    /// may come from besides the project.
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
    /// [`Instructions::user_file`]), follows their imports, and spends the
    /// budget on them.
    ///
    /// A file that is present, inside the project or the user's config
    /// directory, but not readable as UTF-8 text is an error naming the
    /// file: a prompt is never silently missing a file. A disabled config
    /// finds nothing.
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
        let root = cwd.map(gather::project_root);
        let boundary = gather::Boundary::new(root.as_deref(), user_file);
        let mut reading = gather::Gather::new(config.max_bytes, &boundary);
        // Nearest first: the order the budget is spent in.
        let mut group = 0;
        if let (Some(cwd), Some(root)) = (cwd, &root) {
            for dir in cwd.ancestors() {
                if let Some(path) = gather::first_present(dir, &config.files) {
                    let relative = path.strip_prefix(root).unwrap_or(&path);
                    let section = format!(
                        "{PROJECT_INSTRUCTIONS_PREFIX}{}",
                        gather::section_path(relative)
                    );
                    reading.found(group, InstructionSource::Project, path, section)?;
                    group += 1;
                }
                if dir == root {
                    break;
                }
            }
        }
        let rules = match (cwd, &root) {
            (Some(cwd), Some(root)) if config.rules => Rules::discover(root, cwd, &config.files),
            _ => Rules::default(),
        };
        // The always rules are the project's, after its root's file.
        for rule in rules.always() {
            let section = format!(
                "{PROJECT_INSTRUCTIONS_PREFIX}{}",
                gather::section_path(Path::new(&rule.name))
            );
            reading.found_text(group, rule.path.clone(), section, &rule.text);
            group += 1;
        }
        if let Some(user) = user_file.filter(|user| user.is_file()) {
            let section = USER_INSTRUCTIONS_SECTION.to_owned();
            reading.found(group, InstructionSource::User, user.to_path_buf(), section)?;
        }
        let gathered = reading.finish();
        let spent = budget::spend(gathered.reads, gathered.unread, config.max_bytes);
        let mut files = budget::render_order(spent.files);
        let left_out = spent.marker.map(|text| FilesLeftOut {
            section: LEFT_OUT_SECTION.to_owned(),
            order: INSTRUCTIONS_ORDER,
            text,
            files: spent.left_out,
        });
        let first = INSTRUCTIONS_ORDER + i32::from(left_out.is_some());
        for (at, file) in files.iter_mut().enumerate() {
            file.order = first.saturating_add(i32::try_from(at).unwrap_or(i32::MAX));
        }
        Ok(Self {
            root,
            files,
            left_out,
            skipped: gathered.skipped,
            rules,
        })
    }

    /// The project's rule files: the always ones are among
    /// [`files`](Self::files) too; the path ones reach the model when a
    /// call touches a file they cover.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// The project root the files were found from, if any were looked for
    /// (none when disabled, or for a session without a working directory).
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// The files in the prompt, in render order.
    pub fn files(&self) -> &[InstructionFile] {
        &self.files
    }

    /// The file whose section is `section`.
    pub fn file(&self, section: &str) -> Option<&InstructionFile> {
        self.files.iter().find(|file| file.section == section)
    }

    /// The files the budget left out, and their marker; `None` when every
    /// file found is in the prompt, whole or cut.
    pub fn left_out(&self) -> Option<&FilesLeftOut> {
        self.left_out.as_ref()
    }

    /// The files found and not read (outside the project and the user's
    /// config directory, an import cycle, too deep, in the prompt
    /// already), in the order they were met.
    pub fn skipped(&self) -> &[SkippedFile] {
        &self.skipped
    }

    /// Registers each file's section, and the marker of the files left
    /// out, into the layer of `session` ([`ScopeId::session`]) of
    /// `prompt`: seen by that session's assemblies only, and unregistered
    /// when the returned handles drop — keep them as long as the session
    /// lives.
    pub fn register(
        &self,
        prompt: &SystemPrompt,
        session: &SessionId,
    ) -> Result<Vec<Registration>, RegistryError> {
        let layer = prompt.in_scope(ScopeId::session(session.as_str()));
        self.left_out
            .iter()
            .map(FilesLeftOut::prompt_section)
            .chain(self.files.iter().map(InstructionFile::prompt_section))
            .map(|section| layer.section(section))
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

/// The text of the file at `real` (named `path` in errors), as much of it
/// as `budget` can keep (and a character's bytes more, to cut at a
/// character), and its size in bytes: a huge file costs the budget, not
/// its size. An unreadable file, or one that is not UTF-8 in what is
/// read, is an error naming it.
fn read_text(
    real: &Path,
    path: &Path,
    budget: usize,
) -> Result<(String, usize), InstructionsError> {
    use std::io::Read as _;

    let read_error = |source| InstructionsError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(real).map_err(read_error)?;
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
    let not_utf8 = |offset| InstructionsError::NotUtf8 {
        path: path.to_path_buf(),
        offset,
    };
    match String::from_utf8(bytes) {
        Ok(text) => Ok((text, total)),
        // A character cut by the read limit, past what the budget keeps.
        Err(error) if !read_whole && error.utf8_error().error_len().is_none() => {
            let valid = error.utf8_error().valid_up_to();
            let mut bytes = error.into_bytes();
            bytes.truncate(valid);
            let text = String::from_utf8(bytes)
                .map_err(|error| not_utf8(error.utf8_error().valid_up_to()))?;
            Ok((text, total))
        }
        Err(error) => Err(not_utf8(error.utf8_error().valid_up_to())),
    }
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
            gather::section_path(Path::new("crates/net/AGENTS.md")),
            "crates/net/AGENTS.md"
        );
        assert_eq!(
            gather::section_path(Path::new("mon projet/é/AGENTS.md")),
            "mon_projet/_/AGENTS.md"
        );
        let name = format!(
            "{PROJECT_INSTRUCTIONS_PREFIX}{}",
            gather::section_path(Path::new("a b/AGENTS.md"))
        );
        assert!(
            dsh_system_prompt::template::is_section_name(&name),
            "{name}"
        );
        assert!(dsh_system_prompt::template::is_section_name(
            LEFT_OUT_SECTION
        ));
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

    #[test]
    fn a_budget_too_small_for_a_marker_is_refused() {
        let config = InstructionsConfig::default().with_max_bytes(MIN_MAX_BYTES - 1);
        let error = config.check().expect_err("too small");
        assert!(
            error.to_string().contains("`max_bytes = 255`")
                && error.to_string().contains("`enabled = false`"),
            "{error}"
        );
        assert!(config.disabled().check().is_ok());
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
    /// `max_bytes` cannot hold the marker that says files were left out.
    #[error(
        "`max_bytes = {max_bytes}` in [instructions] is too small to hold even the line that \
         says instruction files were left out; give it at least 256 bytes, or set \
         `enabled = false` to read no instruction file"
    )]
    BudgetTooSmall {
        /// The budget as written.
        max_bytes: usize,
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
