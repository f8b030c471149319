//! Finding and reading a session's instruction files, nearest first, as
//! far as the budget reaches: each directory's file, the user's global
//! file, and what each imports, every one checked against the places
//! instruction files may come from ([`Boundary`]) before a byte of it is
//! read.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::imports::{MAX_IMPORT_DEPTH, import_refs, resolve};
use super::{
    ImportSite, InstructionSource, InstructionsError, LeftOutFile, PROJECT_INSTRUCTIONS_PREFIX,
    SkipReason, SkippedFile,
};

/// The prefix of the section of a file of the user's config directory.
const USER_PREFIX: &str = "user:";

/// One file read, in the order the budget is spent.
#[derive(Debug)]
pub(super) struct Read {
    pub(super) source: InstructionSource,
    /// The file, as found (a directory's) or as its import resolved.
    pub(super) path: PathBuf,
    pub(super) section: String,
    /// The text as read: the whole file, or as much of its start as the
    /// budget could keep.
    pub(super) text: String,
    /// The file's size in bytes.
    pub(super) bytes: usize,
    pub(super) imported_by: Option<ImportSite>,
    /// The directory's file it belongs to (itself, or the file whose
    /// imports brought it), by its place nearest first: files render by
    /// group, farthest first.
    pub(super) group: usize,
}

impl Read {
    /// Whether the text is the whole file.
    pub(super) fn is_whole(&self) -> bool {
        self.text.len() == self.bytes
    }

    /// The file, left out of the prompt.
    pub(super) fn left_out(self) -> (usize, LeftOutFile) {
        let file = LeftOutFile {
            source: self.source,
            path: self.path,
            bytes: self.bytes,
            imported_by: self.imported_by,
        };
        (self.group, file)
    }
}

/// What a discovery found: the files read, in the order the budget is
/// spent; the files after the budget ran out, unread, with their groups;
/// and the files skipped, and why.
#[derive(Debug, Default)]
pub(super) struct Gathered {
    pub(super) reads: Vec<Read>,
    pub(super) unread: Vec<(usize, LeftOutFile)>,
    pub(super) skipped: Vec<SkippedFile>,
}

/// The places instruction files may come from: the project root and the
/// user's config directory (the directory of the user's global file), each
/// as found and as its real path. A file whose real path is under neither
/// is skipped: a link in a project to `/etc/passwd` is not an instruction.
#[derive(Debug, Default)]
pub(super) struct Boundary {
    root: Option<(PathBuf, PathBuf)>,
    user_dir: Option<(PathBuf, PathBuf)>,
}

impl Boundary {
    /// The boundary of a project at `root` and of the user's file
    /// `user_file`; a directory that does not exist holds nothing.
    pub(super) fn new(root: Option<&Path>, user_file: Option<&Path>) -> Self {
        let real = |dir: &Path| Some((dir.to_path_buf(), std::fs::canonicalize(dir).ok()?));
        Self {
            root: root.and_then(real),
            user_dir: user_file.and_then(Path::parent).and_then(real),
        }
    }

    /// Where the file at the real path `real` is, and its section there:
    /// `project:<path from the root>`, else `user:<path from the config
    /// directory>`; `None` outside both.
    fn place(&self, real: &Path) -> Option<(InstructionSource, String)> {
        let under = |dir: &Option<(PathBuf, PathBuf)>| {
            let (_, base) = dir.as_ref()?;
            real.strip_prefix(base).ok().map(section_path)
        };
        if let Some(relative) = under(&self.root) {
            return Some((
                InstructionSource::Project,
                format!("{PROJECT_INSTRUCTIONS_PREFIX}{relative}"),
            ));
        }
        under(&self.user_dir)
            .map(|relative| (InstructionSource::User, format!("{USER_PREFIX}{relative}")))
    }

    /// The places, as found, for a message.
    fn allowed(&self) -> Vec<PathBuf> {
        [&self.root, &self.user_dir]
            .into_iter()
            .flatten()
            .map(|(dir, _)| dir.clone())
            .collect()
    }
}

/// A file to read: found in a directory, or imported.
struct Candidate {
    source: InstructionSource,
    path: PathBuf,
    /// A directory's file is named by its path as found; `None` for an
    /// import, named by its place.
    section: Option<String>,
    imported_by: Option<ImportSite>,
    group: usize,
}

/// The reading of one discovery: what is read, and how much of the
/// budget the whole files read so far take.
pub(super) struct Gather<'b> {
    max_bytes: usize,
    boundary: &'b Boundary,
    home: Option<PathBuf>,
    used: usize,
    /// Whether a file has not fitted: every later one is left unread.
    exhausted: bool,
    /// Each file read (or left unread), by real path, with its section.
    seen: HashMap<PathBuf, String>,
    names: HashSet<String>,
    real_paths: RealPaths,
    out: Gathered,
}

impl<'b> Gather<'b> {
    /// A reading within `max_bytes`, of files inside `boundary`.
    pub(super) fn new(max_bytes: usize, boundary: &'b Boundary) -> Self {
        Self {
            max_bytes,
            boundary,
            home: std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|home| home.is_absolute()),
            used: 0,
            exhausted: false,
            seen: HashMap::new(),
            names: HashSet::new(),
            real_paths: RealPaths::default(),
            out: Gathered::default(),
        }
    }

    /// Reads the directory's file (or the user's) `path`, named `section`,
    /// the `group`-th nearest, and what it imports.
    pub(super) fn found(
        &mut self,
        group: usize,
        source: InstructionSource,
        path: PathBuf,
        section: String,
    ) -> Result<(), InstructionsError> {
        let candidate = Candidate {
            source,
            path,
            section: Some(section),
            imported_by: None,
            group,
        };
        self.file(candidate, &[])
    }

    /// An always rule's `text` (its file `path` without the frontmatter),
    /// named `section`, the `group`-th nearest: within the budget like a
    /// file, never importing.
    pub(super) fn found_text(&mut self, group: usize, path: PathBuf, section: String, text: &str) {
        let section = self.unique(section);
        if self.exhausted {
            let file = LeftOutFile {
                source: InstructionSource::Project,
                path,
                bytes: text.len(),
                imported_by: None,
            };
            self.out.unread.push((group, file));
            return;
        }
        let remaining = self.max_bytes - self.used;
        // As a file is read: a character's bytes past what the budget keeps.
        let mut end = text.len().min(remaining.saturating_add(4));
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let read = Read {
            source: InstructionSource::Project,
            path,
            section,
            text: text[..end].to_owned(),
            bytes: text.len(),
            imported_by: None,
            group,
        };
        if !read.is_whole() || read.bytes > remaining {
            self.exhausted = true;
        } else {
            self.used += read.bytes;
        }
        self.out.reads.push(read);
    }

    /// What was read, left unread and skipped.
    pub(super) fn finish(self) -> Gathered {
        self.out
    }

    /// Reads one file, unless it is outside the boundary, read already,
    /// or past the budget; then, when it was read whole, its imports.
    /// `chain` are the real paths of the files whose imports led here.
    fn file(&mut self, candidate: Candidate, chain: &[PathBuf]) -> Result<(), InstructionsError> {
        let real =
            self.real_paths
                .of(&candidate.path)
                .map_err(|source| InstructionsError::Read {
                    path: candidate.path.clone(),
                    source,
                })?;
        let Some((place_source, place_section)) = self.boundary.place(&real) else {
            let reason = SkipReason::Outside {
                real,
                allowed: self.boundary.allowed(),
            };
            self.skip(candidate, reason);
            return Ok(());
        };
        if let Some(section) = self.seen.get(&real) {
            let reason = if chain.contains(&real) {
                SkipReason::Cycle
            } else {
                SkipReason::Repeated {
                    section: section.clone(),
                }
            };
            self.skip(candidate, reason);
            return Ok(());
        }
        let source = if candidate.imported_by.is_some() {
            place_source
        } else {
            candidate.source
        };
        let section = self.unique(candidate.section.unwrap_or(place_section));
        self.seen.insert(real.clone(), section.clone());
        if self.exhausted {
            let bytes = std::fs::metadata(&real).map_or(0, |meta| meta.len());
            let file = LeftOutFile {
                source,
                path: candidate.path,
                bytes: usize::try_from(bytes).unwrap_or(usize::MAX),
                imported_by: candidate.imported_by,
            };
            self.out.unread.push((candidate.group, file));
            return Ok(());
        }
        // The real path is what was checked, so it is what is read.
        let remaining = self.max_bytes - self.used;
        let (text, bytes) = super::read_text(&real, &candidate.path, remaining)?;
        let read = Read {
            source,
            path: candidate.path,
            section,
            text,
            bytes,
            imported_by: candidate.imported_by,
            group: candidate.group,
        };
        if !read.is_whole() || read.bytes > remaining {
            self.exhausted = true;
            self.out.reads.push(read);
            return Ok(());
        }
        self.used += read.bytes;
        let imports = import_refs(&read.text);
        let (importer, group) = (read.path.clone(), read.group);
        self.out.reads.push(read);
        let mut chain = chain.to_vec();
        chain.push(real);
        self.imports(&importer, group, &imports, &chain)
    }

    /// Reads what the file `importer` imports, in order; each `@path` that
    /// names no file is text, not an import.
    fn imports(
        &mut self,
        importer: &Path,
        group: usize,
        imports: &[super::imports::ImportRef],
        chain: &[PathBuf],
    ) -> Result<(), InstructionsError> {
        let dir = importer.parent().unwrap_or(Path::new(""));
        for import in imports {
            let Some(path) = resolve(&import.path, dir, self.home.as_deref()) else {
                continue;
            };
            if !path.is_file() {
                continue;
            }
            let candidate = Candidate {
                source: InstructionSource::Project,
                path,
                section: None,
                imported_by: Some(ImportSite {
                    file: importer.to_path_buf(),
                    written: import.path.clone(),
                    line: import.line,
                }),
                group,
            };
            if chain.len() > MAX_IMPORT_DEPTH {
                self.skip(candidate, SkipReason::TooDeep);
                continue;
            }
            self.file(candidate, chain)?;
        }
        Ok(())
    }

    fn skip(&mut self, candidate: Candidate, reason: SkipReason) {
        self.out.skipped.push(SkippedFile {
            path: candidate.path,
            imported_by: candidate.imported_by,
            reason,
        });
    }

    /// `name`, or with `-2`, `-3`… when a file read already has it: two
    /// paths may map to one name (`a b` and `a_b`).
    fn unique(&mut self, name: String) -> String {
        let mut unique = name.clone();
        let mut n = 2;
        while !self.names.insert(unique.clone()) {
            unique = format!("{name}-{n}");
            n += 1;
        }
        unique
    }
}

/// Real paths, each directory's resolved once: `canonicalize` resolves
/// every component of a path again, and a thousand nested directories
/// would cost it a million lookups.
#[derive(Debug, Default)]
struct RealPaths {
    dirs: HashMap<PathBuf, PathBuf>,
}

impl RealPaths {
    /// The real path of `path`: its directory's, memoized, joined with its
    /// name, resolved again only when that is a link (or `..`).
    fn of(&mut self, path: &Path) -> std::io::Result<PathBuf> {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return std::fs::canonicalize(path);
        };
        let joined = self.dir(dir)?.join(name);
        if joined.symlink_metadata()?.file_type().is_symlink() {
            return std::fs::canonicalize(&joined);
        }
        Ok(joined)
    }

    /// The real path of the directory `dir`, from the nearest ancestor
    /// resolved before down, one component at a time.
    fn dir(&mut self, dir: &Path) -> std::io::Result<PathBuf> {
        if dir.as_os_str().is_empty() {
            return std::fs::canonicalize(".");
        }
        let mut unresolved = Vec::new();
        let mut at = dir;
        let mut real = loop {
            if let Some(real) = self.dirs.get(at) {
                break real.clone();
            }
            match (at.parent(), at.file_name()) {
                (Some(parent), Some(_)) if !parent.as_os_str().is_empty() => {
                    unresolved.push(at);
                    at = parent;
                }
                _ => {
                    let real = std::fs::canonicalize(at)?;
                    self.dirs.insert(at.to_path_buf(), real.clone());
                    break real;
                }
            }
        };
        for dir in unresolved.into_iter().rev() {
            real = self.of(dir)?;
            self.dirs.insert(dir.to_path_buf(), real.clone());
        }
        Ok(real)
    }
}

/// The nearest directory of `cwd` and its parents that holds `.git`, or
/// `cwd` itself.
pub(super) fn project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|dir| dir.join(".git").symlink_metadata().is_ok())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// The first of `names` present in `dir` as a file (a symlink to a file
/// counts).
pub(super) fn first_present(dir: &Path, names: &[String]) -> Option<PathBuf> {
    names
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.is_file())
}

/// A relative path as a section name holds it: components joined by `/`,
/// each character a section name cannot hold (a space, a non-ASCII
/// letter) replaced by `_`. The owner keeps the true path.
pub(super) fn section_path(relative: &Path) -> String {
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
