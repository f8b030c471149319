//! The workspace boundary: `write` and `edit` change files inside the
//! session's working directory, or inside a directory the deployment or
//! the front end lists; anywhere else only with the user's yes.
//!
//! A path is judged by where it really is: `..` and symbolic links are
//! resolved first (the longest part of the path that exists is
//! canonicalized; the rest, which cannot hold a link, is normalized by its
//! names), so neither `../../etc/passwd` nor a link out of the project
//! gets past.

use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use dsh_tools::{ToolCallContext, async_trait};

/// Where a path really is: absolute, with `..`, `.` and every symbolic
/// link of its existing part resolved. `path` is absolute (or relative to
/// the process's working directory).
pub(crate) fn real_path(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir()
            .map(|cwd| cwd.join(path))
            .unwrap_or_else(|_| path.to_owned())
    };
    for existing in absolute.ancestors() {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let rest = absolute.strip_prefix(existing).unwrap_or(Path::new(""));
            return normalized(&real.join(rest));
        }
    }
    normalized(&absolute)
}

/// `path` with `.` and `..` applied by name: right for a part of a path
/// that does not exist, and so holds no symbolic link.
fn normalized(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// A front end's say over changes outside the workspace: directories it
/// adds to the workspace (an editor's additional roots), and whom to ask
/// about the rest. Attached to a call's context as an
/// `Arc<dyn OutsideWorkspace>`; without one, a change outside is refused
/// (what `dsh run`, which cannot ask, does).
#[async_trait]
pub trait OutsideWorkspace: Send + Sync + fmt::Debug + 'static {
    /// Directories, besides the working directory and the tool's roots,
    /// where files change without asking.
    fn roots(&self) -> Vec<PathBuf>;

    /// Asks whether the call of `cx` may change `path` (real, outside the
    /// workspace). `Err` holds why not, as the model reads it.
    async fn allow(&self, tool: &str, path: &Path, cx: &ToolCallContext) -> Result<(), String>;
}

/// The [`OutsideWorkspace`] a call's context carries, if any.
pub fn outside_workspace(cx: &ToolCallContext) -> Option<&Arc<dyn OutsideWorkspace>> {
    cx.get::<Arc<dyn OutsideWorkspace>>()
}

/// Whether `real` is inside the working directory of `cx` or one of
/// `roots`; the roots are resolved as [`real_path`] resolves paths, and
/// one that does not exist holds nothing.
pub(crate) fn is_inside(real: &Path, cwd: Option<&Path>, roots: &[PathBuf]) -> bool {
    let process_cwd;
    let cwd = match cwd {
        Some(cwd) => Some(cwd),
        None => {
            process_cwd = std::env::current_dir().ok();
            process_cwd.as_deref()
        }
    };
    cwd.into_iter()
        .chain(roots.iter().map(PathBuf::as_path))
        .filter_map(|root| std::fs::canonicalize(root).ok())
        .any(|root| real.starts_with(root))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_dot_and_links_are_resolved() {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = std::fs::canonicalize(dir.path()).expect("canonical");
        std::fs::create_dir(base.join("project")).expect("mkdir");
        std::os::unix::fs::symlink("/etc", base.join("project/etc")).expect("symlink");
        assert_eq!(
            real_path(&base.join("project/new/../../outside.txt")),
            base.join("outside.txt")
        );
        assert_eq!(
            real_path(&base.join("project/etc/new.conf")),
            std::fs::canonicalize("/etc").expect("etc").join("new.conf")
        );
        assert!(is_inside(
            &real_path(&base.join("project/a/b.txt")),
            Some(&base.join("project")),
            &[]
        ));
        assert!(!is_inside(
            &real_path(&base.join("project/etc/x")),
            Some(&base.join("project")),
            &[]
        ));
        assert!(is_inside(
            &real_path(&base.join("project/etc/x")),
            Some(&base.join("project")),
            &[PathBuf::from("/etc")]
        ));
    }
}
