//! `dsh diff`: an agent's request prefix in two deployments or dumps,
//! compared by the host (`dsh_deployment::reports::diff`) and rendered as text,
//! markdown or JSON (`PromptDiff`'s own renderings), with `diff(1)`'s exit status.

use std::process::ExitCode;

use dsh_deployment::Problem;
use dsh_deployment::reports::agent_prompt::ServerStart;
use dsh_deployment::reports::diff::{
    SessionDirectory, SideOptions, Threshold, compare, read_sides,
};

use crate::args::{CwdArgs, DiffArgs, DiffFormat, FailOn};
use crate::commands::{command_line_cwd, print, server_output, session_cwd};
use crate::diagnostics::Reporter;

/// Compares, prints, and says whether the comparison fails: 1 when the
/// prefixes differ (with `--fail-on cache-break`, when the prefix breaks
/// before the threshold), else 0. Problems are trouble: `main` exits 2.
pub(crate) fn run(args: &DiffArgs) -> Result<ExitCode, Vec<Problem>> {
    let cwd = if args.cwd.is_some() || args.no_cwd {
        SessionDirectory::Given(session_cwd(&CwdArgs {
            cwd: args.cwd.clone(),
            no_cwd: args.no_cwd,
        })?)
    } else {
        SessionDirectory::Else(command_line_cwd(None)?)
    };
    let options = SideOptions {
        agent: args.agent.clone(),
        cwd,
        mcp: if args.no_mcp {
            ServerStart::Leave
        } else {
            ServerStart::Start(server_output())
        },
    };
    let (old, new) = read_sides(&args.old, &args.new, &options)?;
    let reporter = Reporter::for_stderr();
    reporter.report(&old.server_failures);
    reporter.report(&new.server_failures);
    let compared = compare(&old, &new, args.requests);
    let fails = match args.fail_on {
        None => !compared.same,
        Some(FailOn::CacheBreak) => (args.before.clone())
            .unwrap_or(Threshold::Anywhere)
            .is_crossed(compared.cache.as_ref(), &new.prefix)
            .map_err(|problem| vec![problem])?,
    };
    print(&match args.format {
        DiffFormat::Text => compared.text(),
        DiffFormat::Markdown => compared.markdown(),
        DiffFormat::Json => compared.json().map_err(|error| {
            vec![Problem::new(format!(
                "cannot serialize the comparison: {error}"
            ))]
        })?,
    })?;
    Ok(if fails {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
