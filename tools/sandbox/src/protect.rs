//! Protected paths: what, inside a writable root, decides what runs later
//! — git's hooks and configuration, the agents' and editors' own
//! configuration, the deployment file — and stays read-only to commands,
//! to `write` and `edit`, and to MCP servers.

use std::path::{Path, PathBuf};

/// The paths protected in each writable directory, relative to it.
///
/// `.git` as a whole is not: `git commit` writes its objects, index and
/// references. What in it runs code later is: its hooks and its
/// configuration (which can name hooks, filters and an fsmonitor).
pub const PROTECTED: &[&str] = &[
    ".git/hooks",
    ".git/config",
    ".dsh",
    "dsh.toml",
    ".cursor",
    ".claude",
    ".github/instructions",
    ".vscode",
];

/// The protected paths of the writable directory `root`: [`PROTECTED`]
/// and, where `.git` is a file naming the repository elsewhere (a
/// worktree, a submodule), that repository's hooks and configuration.
pub(crate) fn protected_in(root: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = PROTECTED.iter().map(|path| root.join(path)).collect();
    if let Some(gitdir) = linked_gitdir(root) {
        paths.push(gitdir.join("config"));
        paths.push(gitdir.join("config.worktree"));
        paths.push(gitdir.join("hooks"));
        // A worktree's `commondir` names the repository its hooks and
        // configuration come from.
        if let Ok(common) = std::fs::read_to_string(gitdir.join("commondir")) {
            let common = gitdir.join(common.trim());
            let common = std::fs::canonicalize(&common).unwrap_or(common);
            paths.push(common.join("config"));
            paths.push(common.join("hooks"));
        }
    }
    paths
}

/// The directory a `.git` file names (`gitdir: <path>`), links resolved.
fn linked_gitdir(root: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(root.join(".git")).ok()?;
    let named = text.lines().find_map(|line| line.strip_prefix("gitdir:"))?;
    let gitdir = root.join(named.trim());
    Some(std::fs::canonicalize(&gitdir).unwrap_or(gitdir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worktree_protects_its_repository_hooks_and_configuration() {
        let dir = tempfile::tempdir().expect("temp");
        let repo = dir.path().join("repo/.git");
        let gitdir = repo.join("worktrees/wt");
        std::fs::create_dir_all(&gitdir).expect("gitdir");
        std::fs::write(gitdir.join("commondir"), "../..\n").expect("commondir");
        let worktree = dir.path().join("wt");
        std::fs::create_dir_all(&worktree).expect("worktree");
        std::fs::write(
            worktree.join(".git"),
            format!("gitdir: {}\n", gitdir.display()),
        )
        .expect(".git file");
        let paths = protected_in(&worktree);
        let repo = std::fs::canonicalize(&repo).expect("canonical");
        assert!(paths.contains(&worktree.join(".git/hooks")), "{paths:?}");
        assert!(paths.contains(&repo.join("hooks")), "{paths:?}");
        assert!(paths.contains(&repo.join("config")), "{paths:?}");
        assert!(
            paths.contains(&repo.join("worktrees/wt/config.worktree")),
            "{paths:?}"
        );
    }
}
