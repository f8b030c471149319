//! A prompt's problems, placed in the deployment file.
//!
//! What is wrong is core's to say: a failed `render_prompt` returns every
//! problem of every section, each with its span inside the section's text,
//! its suggestion and its owner. This module only maps the spans of the
//! sections the deployment writes (the persona, which is an agent's
//! `persona` string verbatim, and the `sections` of the agent's layers)
//! into the TOML file, and words each problem for a deployment's author.

use std::ops::Range;

use dsh_agent_loop::CWD_VARIABLE;
use dsh_system_prompt::RenderError;
use dsh_system_prompt::template::{self, ParseError, ParseErrorKind};

use crate::file::Deployment;
use crate::problem::{Problem, SourceFile};

/// One problem a syntax error and one a bad reference, in core's order,
/// each pointing at its place in the deployment file when it is in a text
/// the deployment writes.
pub fn prompt_problems<'e>(
    deployment: &Deployment,
    agent: &crate::file::AgentSpec,
    errors: impl IntoIterator<Item = &'e RenderError>,
) -> Vec<Problem> {
    let file = &deployment.file;
    let mut problems = Vec::new();
    // Each text is decoded once, however many problems it has.
    let mut maps: Vec<(Range<usize>, crate::file::StringFileMap)> = Vec::new();
    for error in errors {
        let Some((whose, text)) = agent.deployment_text(deployment, error.section()) else {
            problems.push(Problem::new(format!(
                "agent `{}`: {error}",
                agent.id.get_ref()
            )));
            continue;
        };
        let whose = whose.as_str();
        let map = match maps.iter().position(|(span, _)| *span == text.span()) {
            Some(at) => &maps[at].1,
            None => {
                maps.push((text.span(), crate::file::StringFileMap::new(file, text)));
                &maps[maps.len() - 1].1
            }
        };
        let at = |range: Range<usize>| map.file_range(range);
        match error {
            RenderError::Template(problem) => {
                for error in &problem.errors {
                    problems.push(syntax_problem(file, whose, at(error.span.clone()), error));
                }
            }
            RenderError::UnknownVariable { site, .. } => problems.push(
                file.problem(format!(
                    "unknown variable `<<{}>>` in {whose}",
                    site.reference
                ))
                .label(at(site.span.clone()), "not a registered variable")
                .help(error.help().unwrap_or_default()),
            ),
            RenderError::ValuelessVariable { site, .. } => {
                let reference = &site.reference;
                let help = if reference == CWD_VARIABLE {
                    format!(
                        "the session has no working directory: give it one with `--cwd DIR`, \
                         or drop `<<cwd>>` from {whose}"
                    )
                } else {
                    error.help().unwrap_or_default()
                };
                problems.push(
                    file.problem(format!("`<<{reference}>>` has no value in {whose}"))
                        .label(at(site.span.clone()), "no value for this session")
                        .help(help),
                );
            }
            // A kind of problem this front end does not know yet: core's
            // message, on the whole text.
            other => problems.push(
                file.problem(format!("{whose}: {other}"))
                    .label(text.span(), "in this text"),
            ),
        }
    }
    problems
}

fn syntax_problem(
    file: &SourceFile,
    whose: &str,
    span: Range<usize>,
    error: &ParseError,
) -> Problem {
    let (message, label) = match error.kind {
        ParseErrorKind::MalformedReference => (
            format!("malformed reference `{}` in {whose}", error.text),
            format!(
                "not a variable name (names match `{}`)",
                template::VARIABLE_NAME_GRAMMAR
            ),
        ),
        _ => (
            format!("`<<` opens no reference in {whose}"),
            "a `>>` follows, but no `<<name>>`".to_owned(),
        ),
    };
    file.problem(message).label(span, label).help(error.help())
}
