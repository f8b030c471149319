//! A session's instruction files in the reports: each file with its
//! bytes, what the budget kept of it, and its tokens in the prompt, for
//! `dsh prompt --format explain|json`; a warning for each cut file, for
//! `dsh check`. No cut is silent: the prompt's marker says it to the
//! model, these say it to the deployment's author.

use crate::host::{InstructionFile, InstructionSource, Instructions, InstructionsConfig};
use dsh_system_prompt::inspect::RenderedPrompt;
use serde_json::{Value, json};

use crate::measure::tokens::PromptTokens;
use crate::problem::Problem;

/// One file as the reports show it.
#[derive(Debug)]
pub struct FileReport<'a> {
    /// The file, as the session found it.
    pub file: &'a InstructionFile,
    /// Its section's bytes and tokens in the rendered prompt (the marker
    /// included), when it rendered.
    pub in_prompt: Option<(usize, usize)>,
}

impl FileReport<'_> {
    /// `whole`, or `cut: K of N bytes`.
    pub fn kept(&self) -> String {
        if self.file.is_cut() {
            format!("cut: {} of {} bytes", self.file.kept, self.file.bytes)
        } else {
            "whole".to_owned()
        }
    }

    /// Where the file comes from, in a word: `project` or `user`.
    pub fn source(&self) -> &'static str {
        match self.file.source {
            InstructionSource::User => "user",
            _ => "project",
        }
    }
}

/// Each file of `found`, with its share of `prompt`, if it rendered.
pub fn reports<'a>(
    found: &'a Instructions,
    prompt: Option<(&RenderedPrompt, &PromptTokens)>,
) -> Vec<FileReport<'a>> {
    found
        .files()
        .iter()
        .map(|file| FileReport {
            file,
            in_prompt: prompt.and_then(|(prompt, tokens)| {
                let at = prompt
                    .sections
                    .iter()
                    .position(|section| section.name == file.section.as_str())?;
                Some((prompt.sections[at].range.len(), *tokens.sections.get(at)?))
            }),
        })
        .collect()
}

/// What explain says when there is no file to list.
pub fn none_found(found: &Instructions, config: &InstructionsConfig) -> String {
    if !config.enabled {
        return "(none: `enabled = false` in [instructions])".to_owned();
    }
    match found.root() {
        Some(root) => format!(
            "(none: no {} from the project root {} to the working directory, and no user file)",
            config.files.join(" or "),
            root.display()
        ),
        None => {
            "(none: the session has no working directory, and there is no user file)".to_owned()
        }
    }
}

/// `instructions` of `dsh prompt --format json`.
pub fn json(
    found: &Instructions,
    config: &InstructionsConfig,
    prompt: Option<(&RenderedPrompt, &PromptTokens)>,
) -> Value {
    let files: Vec<Value> = reports(found, prompt)
        .iter()
        .map(|report| {
            let file = report.file;
            json!({
                "section": file.section,
                "source": report.source(),
                "path": file.path.display().to_string(),
                "order": file.order,
                "bytes": file.bytes,
                "kept": file.kept,
                "cut": file.is_cut(),
                "prompt_bytes": report.in_prompt.map(|(bytes, _)| bytes),
                "tokens": report.in_prompt.map(|(_, tokens)| tokens),
            })
        })
        .collect();
    json!({
        "enabled": config.enabled,
        "names": config.files,
        "max_bytes": config.max_bytes,
        "root": found.root().map(|root| root.display().to_string()),
        "files": files,
    })
}

/// A warning for each file the budget cut.
pub fn cut_warnings(found: &Instructions, config: &InstructionsConfig) -> Vec<Problem> {
    found
        .files()
        .iter()
        .filter(|file| file.is_cut())
        .map(|file| {
            Problem::new(format!(
                "instruction file `{}` is cut to fit the budget: {} of its {} bytes are in \
                 the prompt",
                file.path.display(),
                file.kept,
                file.bytes
            ))
            .help(format!(
                "the budget, `max_bytes = {}` in [instructions], is spent on the files nearest \
                 the working directory first; raise it, or shorten the files; the prompt tells \
                 the model where the rest is",
                config.max_bytes
            ))
            .warning()
        })
        .collect()
}
