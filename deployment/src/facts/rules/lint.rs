//! What needs the project's files: the nested instruction files, and the
//! globs that match none of them, or all.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Applies, Rule, RuleProblem, compile, from_root};

/// The most files `dsh check` looks at to judge a glob: past it, a glob
/// that matched nothing is not called dead.
const MAX_FILES: usize = 200_000;

/// The project's files as git sees them (ignored files and hidden
/// directories skipped), each with its path.
fn project_files(root: &Path) -> impl Iterator<Item = PathBuf> {
    ignore::WalkBuilder::new(root)
        .require_git(false)
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|kind| kind.is_file()))
        .map(ignore::DirEntry::into_path)
}

/// The instruction files (the first of `names` present in a directory)
/// of the directories below `root` that are not on the way to `cwd`.
pub(super) fn nested_instructions(root: &Path, cwd: &Path, names: &[String]) -> Vec<PathBuf> {
    if names.is_empty() {
        return Vec::new();
    }
    // Each directory's first name, by its place in `names`.
    let mut first: BTreeMap<PathBuf, (usize, PathBuf)> = BTreeMap::new();
    for path in project_files(root) {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            continue;
        };
        if dir == root || cwd.starts_with(dir) {
            continue;
        }
        let Some(rank) = names.iter().position(|wanted| name == wanted.as_str()) else {
            continue;
        };
        let entry = first
            .entry(dir.to_path_buf())
            .or_insert((rank, path.clone()));
        if rank < entry.0 {
            *entry = (rank, path);
        }
    }
    first.into_values().map(|(_, path)| path).collect()
}

/// Each glob of a path rule that matches no file of the project, and each
/// that matches every one (an always rule that does not say so).
pub(super) fn globs(root: &Path, rules: &[Rule]) -> Vec<RuleProblem> {
    let files: Vec<String> = project_files(root)
        .take(MAX_FILES)
        .filter_map(|path| from_root(root, &path))
        .collect();
    let complete = files.len() < MAX_FILES;
    let mut problems = Vec::new();
    for rule in rules {
        let Applies::Paths(globs) = &rule.applies else {
            continue;
        };
        for glob in globs {
            let Ok(compiled) = compile(glob) else {
                continue;
            };
            let matcher = compiled.compile_matcher();
            let matched = files.iter().filter(|file| matcher.is_match(file)).count();
            let line = glob_line(rule, glob);
            if matched == 0 && complete {
                let message = format!(
                    "the glob `{glob}` matches no file of the project (globs are read from the \
                     project root; one without a `/` matches a name in any directory), so the \
                     rule is never applied by it"
                );
                problems.push(RuleProblem::new(&rule.name, line, message));
            } else if matched == files.len() && files.len() > 1 {
                let message = format!(
                    "the glob `{glob}` matches every file of the project: the rule is an \
                     always rule ({} bytes, sent with the first file touched); say so \
                     (its format's always key) or narrow the glob",
                    rule.text.len()
                );
                problems.push(RuleProblem::new(&rule.name, line, message));
            }
        }
    }
    problems
}

/// The line of `glob` in `rule`'s file, else its first line.
fn glob_line(rule: &Rule, glob: &str) -> usize {
    std::fs::read_to_string(&rule.path)
        .ok()
        .and_then(|text| text.lines().position(|line| line.contains(glob)))
        .map_or(1, |index| index + 1)
}
