//! Files dsh writes on request (`--trace`, `--record-requests`) never
//! replace a file the deployment reads: a mistyped flag must not destroy
//! the deployment itself, its script of answers, or a child agent's
//! deployment.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use dsh_agent_loop::AdapterConfig;

use crate::file::Deployment;
use crate::problem::Problem;

/// Refuses `path` as the output of `flag` when it is a file `deployment`
/// reads (the same file, by device and inode, whatever the path says).
pub(crate) fn check_output(
    deployment: &Deployment,
    path: &Path,
    flag: &str,
) -> Result<(), Problem> {
    let Ok(output) = std::fs::metadata(path) else {
        // Nothing there yet: it cannot be an input.
        return Ok(());
    };
    for input in inputs(deployment) {
        let Ok(read) = std::fs::metadata(&input) else {
            continue;
        };
        if read.dev() == output.dev() && read.ino() == output.ino() {
            return Err(Problem::new(format!(
                "`{flag} {}` would replace `{}`, which the deployment reads",
                path.display(),
                input.display()
            ))
            .help(format!("give `{flag}` the path of a new file")));
        }
    }
    Ok(())
}

/// The files a deployment reads: its own file, its adapter's script, and
/// the files the commands of its `acp` instances name.
fn inputs(deployment: &Deployment) -> Vec<PathBuf> {
    let mut inputs = Vec::new();
    let Some(dir) = &deployment.dir else {
        // The embedded deployment reads no file.
        return inputs;
    };
    inputs.push(PathBuf::from(deployment.file.name()));
    if let AdapterConfig::Scripted { answers, .. } = &deployment.adapter {
        inputs.push(dir.join(answers.get_ref()));
    }
    for instance in deployment.tools.values() {
        if let Some(command) = &instance.table.command {
            inputs.extend(
                command
                    .iter()
                    .map(|arg| PathBuf::from(arg.get_ref()))
                    .filter(|arg| arg.is_file()),
            );
        }
    }
    inputs
}
