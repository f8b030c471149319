//! What `write` and `edit` share: where the file really is and whether it
//! may be changed there (the workspace boundary), what it holds now and
//! whether the session has seen that (the observation policy), and the
//! change itself — written through the call's [`FileAccess`], recorded as
//! seen, reported to the front end, and shown to the model.

use std::path::{Path, PathBuf};

use dsh_tools::{FileChange, ToolCallContext, ToolError, ToolOutput};

use dsh_sandbox::{Sandbox, SandboxMode};

use crate::access::{DiskFiles, FileAccess, FileError, file_access};
use crate::observe::{Observations, Seen, Unseen};
use crate::text::{changed_lines, show_lines};
use crate::workspace::{is_inside, outside_workspace, real_path};

/// Why `write` or `edit` refused or failed a change. The model reads the
/// message as the call's result: each says what to do instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeError {
    /// The session never read the file.
    #[error(
        "`{path}` has not been read in this session; read it with `read` first, then change it"
    )]
    NotRead {
        /// The file.
        path: PathBuf,
    },
    /// The file changed since the session last saw it.
    #[error(
        "`{path}` has changed since this session last read it ({was} bytes then, {now} now); \
         read it again, then change it"
    )]
    Changed {
        /// The file.
        path: PathBuf,
        /// Its length when the session saw it.
        was: u64,
        /// Its length now.
        now: u64,
    },
    /// The path is outside the workspace, and no one may be asked.
    #[error(
        "`{path}` is outside the workspace: it resolves to `{real}`, which is not inside {inside}; \
         `{tool}` changes files elsewhere only in a directory the deployment lists, as in \
         `[tools.{tool}] roots = [\"{dir}\"]`",
        inside = workspace_text(.cwd.as_deref()),
        dir = .real.parent().unwrap_or(.real).display(),
        path = .path.display(),
        real = .real.display(),
    )]
    OutsideWorkspace {
        /// The tool.
        tool: String,
        /// The path as the call gave it.
        path: PathBuf,
        /// Where it really is.
        real: PathBuf,
        /// The session's working directory.
        cwd: Option<PathBuf>,
    },
    /// The sandbox in force is read-only.
    #[error(
        "`{path}` cannot be changed: this session's sandbox is `read-only`, so `{tool}` changes \
         no file; say what you would change instead",
        path = .path.display(),
    )]
    ReadOnlySandbox {
        /// The tool.
        tool: String,
        /// The path as the call gave it.
        path: PathBuf,
    },
    /// The path is protected inside a writable directory: it decides what
    /// runs later.
    #[error(
        "`{path}` cannot be changed: it is under `{protected}`, which the sandbox keeps \
         read-only because it decides what runs later (git hooks and configuration, agent \
         and editor configuration, the deployment file); say what you would change, or the \
         deployment lists `{protected}` in `[sandbox] writable` to allow it",
        path = .path.display(),
        protected = .protected.display(),
    )]
    Protected {
        /// The path as the call gave it.
        path: PathBuf,
        /// The protected path it is or lies under.
        protected: PathBuf,
    },
    /// The path is outside the workspace, and the user said no.
    #[error("`{}` is outside the workspace, and it may not be changed: {reason}", .path.display())]
    Denied {
        /// The path as the call gave it.
        path: PathBuf,
        /// Why, as the front end said it.
        reason: String,
    },
    /// `edit` of a file that does not exist.
    #[error("`{}` does not exist; create it with `write`", .path.display())]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// `edit`'s `old_string` is not in the file.
    #[error(
        "`old_string` does not occur in `{}`; read the file again and copy the text exactly, \
         indentation and line breaks included",
        .path.display()
    )]
    NoMatch {
        /// The file.
        path: PathBuf,
    },
    /// `edit`'s `old_string` occurs more than once, and `replace_all` is
    /// not set.
    #[error(
        "`old_string` occurs {count} times in `{}`, at lines {}; add surrounding lines to \
         `old_string` so that it matches once, or set `replace_all` to true to change every one",
        .path.display(),
        dsh_system_prompt::template::series(.lines, "and")
    )]
    Ambiguous {
        /// The file.
        path: PathBuf,
        /// How many times it occurs.
        count: usize,
        /// The line each occurrence starts on.
        lines: Vec<usize>,
    },
    /// `edit`'s `old_string` and `new_string` are equal.
    #[error(
        "`old_string` and `new_string` are the same, so nothing would change; give the new text as `new_string`"
    )]
    Unchanged,
    /// `edit`'s `old_string` is empty.
    #[error("`old_string` is empty; give the text to replace, or create a file with `write`")]
    EmptyOldString,
    /// Reading or writing the file failed.
    #[error(transparent)]
    File(#[from] FileError),
}

impl ChangeError {
    /// As a tool error of `tool`: an argument the model must change names
    /// the argument.
    pub(crate) fn into_tool_error(self, tool: &str) -> ToolError {
        match &self {
            Self::Unchanged => ToolError::invalid_arguments(tool, "new_string", self.to_string()),
            Self::EmptyOldString => {
                ToolError::invalid_arguments(tool, "old_string", self.to_string())
            }
            _ => ToolError::failed(tool, self.to_string()),
        }
    }
}

fn workspace_text(cwd: Option<&Path>) -> String {
    match cwd {
        Some(cwd) => format!("the working directory `{}`", cwd.display()),
        None => "the working directory".to_owned(),
    }
}

/// What `write` and `edit` are set up with: the session's memory of what
/// it has seen (shared with `read`), and the directories outside the
/// working directory where the tool changes files without asking.
#[derive(Clone, Debug, Default)]
pub(crate) struct ChangeSetup {
    pub(crate) observations: Observations,
    pub(crate) roots: Vec<PathBuf>,
}

impl ChangeSetup {
    /// Begins a call of `tool` that changes `file_path`: the [`Change`],
    /// once the workspace boundary lets it, and the file's text now
    /// (`None`: there is no file), which the session must have seen as it
    /// is.
    pub(crate) async fn begin<'a>(
        &'a self,
        tool: &'static str,
        file_path: &str,
        cx: &'a ToolCallContext,
    ) -> Result<(Change<'a>, Option<String>), ChangeError> {
        let change = Change::new(tool, file_path, cx, &self.observations, &self.roots).await?;
        let current = change.current().await?;
        if let Some(current) = &current {
            change.check_seen(current)?;
        }
        Ok((change, current))
    }
}

/// One change of one call: the tool, its file, and the session's memory.
pub(crate) struct Change<'a> {
    pub(crate) cx: &'a ToolCallContext,
    pub(crate) observations: &'a Observations,
    /// The file as the call names it.
    pub(crate) given: PathBuf,
    /// Where it really is.
    pub(crate) real: PathBuf,
}

impl<'a> Change<'a> {
    /// The change of `file_path` by a call of `tool`, once the workspace
    /// boundary lets it: inside the working directory, `roots` or the
    /// front end's roots; elsewhere when the front end's user says yes.
    async fn new(
        tool: &'static str,
        file_path: &str,
        cx: &'a ToolCallContext,
        observations: &'a Observations,
        roots: &[PathBuf],
    ) -> Result<Self, ChangeError> {
        let given = cx.resolve_path(file_path);
        let real = real_path(&given);
        let outside = outside_workspace(cx);
        let mut all_roots = roots.to_vec();
        if let Some(outside) = outside {
            all_roots.extend(outside.roots());
        }
        // The sandbox in force, when the front end attached one, is the
        // writable set of commands: the file tools follow it.
        if let Some(sandbox) = cx.get::<Sandbox>() {
            if sandbox.mode() == SandboxMode::ReadOnly {
                return Err(ChangeError::ReadOnlySandbox {
                    tool: tool.to_owned(),
                    path: given,
                });
            }
            if let Some(protected) = sandbox.protection(&real, cx.cwd.as_deref()) {
                return Err(ChangeError::Protected {
                    path: given,
                    protected,
                });
            }
            all_roots.extend(sandbox.writable_roots(None));
        }
        if !is_inside(&real, cx.cwd.as_deref(), &all_roots) {
            match outside {
                Some(outside) => {
                    outside
                        .allow(tool, &real, cx)
                        .await
                        .map_err(|reason| ChangeError::Denied {
                            path: given.clone(),
                            reason,
                        })?
                }
                None => {
                    return Err(ChangeError::OutsideWorkspace {
                        tool: tool.to_owned(),
                        path: given,
                        real,
                        cwd: cx.cwd.clone(),
                    });
                }
            }
        }
        Ok(Self {
            cx,
            observations,
            given,
            real,
        })
    }

    fn files(&self) -> &dyn FileAccess {
        static DISK: DiskFiles = DiskFiles::DISK;
        match file_access(self.cx) {
            Some(files) => files.as_ref(),
            None => &DISK,
        }
    }

    /// The file's text now; `None` when there is no file.
    async fn current(&self) -> Result<Option<String>, ChangeError> {
        match self.files().read_text(&self.real).await {
            Ok(text) => Ok(Some(text)),
            Err(FileError::NotFound { .. }) => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    /// Whether the session saw the file as `current` holds it.
    fn check_seen(&self, current: &str) -> Result<(), ChangeError> {
        let now = Seen::of(current.as_bytes());
        self.observations
            .check(&self.cx.session_id, &self.real, now)
            .map_err(|unseen| match unseen {
                Unseen::NeverRead => ChangeError::NotRead {
                    path: self.given.clone(),
                },
                Unseen::Changed { was, now } => ChangeError::Changed {
                    path: self.given.clone(),
                    was,
                    now,
                },
            })
    }

    /// Writes `new` in place of `old` (`None`: a new file), records it as
    /// seen, reports it, and says what changed: `what` (`Edited …`), then
    /// the changed lines, numbered.
    pub(crate) async fn commit(
        self,
        old: Option<String>,
        new: String,
        what: &str,
    ) -> Result<ToolOutput, ChangeError> {
        self.files().write_text(&self.real, &new).await?;
        self.observations
            .record(&self.cx.session_id, &self.real, Seen::of(new.as_bytes()));
        let (first, last) = changed_lines(old.as_deref().unwrap_or(""), &new).unwrap_or((1, 0));
        self.cx.report_change(&FileChange {
            path: self.real.clone(),
            old_text: old,
            new_text: new.clone(),
            first_changed_line: u32::try_from(first).unwrap_or(u32::MAX),
        });
        let region = if last >= first {
            format!("lines {first}-{last} now read:")
        } else {
            format!("lines were removed before line {first}; around it the file now reads:")
        };
        Ok(ToolOutput::new(format!(
            "{what}; {region}\n{}",
            show_lines(&new, first, last)
        )))
    }
}
