//! A session's instruction files in the reports: each file with its
//! bytes, what the budget kept of it, what imported it, and its tokens in
//! the prompt; the files the budget left out; the files skipped, and why
//! ([`InstructionsReport`]) — for `dsh prompt --format explain`
//! ([`Explanation`](crate::reports::explain::Explanation)) and its dump
//! ([`write_dump`](crate::reports::diff::write_dump)); and a warning for each cut,
//! for the files left out, and for each file skipped, for `dsh check`. No
//! cut is silent: the prompt's markers say it to the model, these say it
//! to the deployment's author.

use dsh_system_prompt::inspect::RenderedPrompt;

use crate::facts::instructions::{
    FilesLeftOut, InstructionFile, InstructionSource, Instructions, InstructionsConfig,
    LeftOutFile, SkippedFile,
};
use crate::facts::rules::{Applies, Rule};
use crate::measure::tokens::{PromptTokens, Size};
use crate::problem::Problem;

/// A session's instruction files as explain and the dump show them: each
/// file in the prompt, the files left out, the files skipped.
#[derive(Debug)]
pub struct InstructionsReport<'a> {
    /// The files as the session found them.
    pub found: &'a Instructions,
    /// The deployment's `[instructions]`.
    pub config: &'a InstructionsConfig,
    /// Each file in the prompt, nearest the root first.
    pub files: Vec<FileReport<'a>>,
    /// The files the budget left out, if any.
    pub left_out: Option<LeftOutReport<'a>>,
    /// The project's rule files, always and path ones.
    pub rules: Vec<RuleReport>,
}

/// One rule file as the reports show it.
#[derive(Debug)]
pub struct RuleReport {
    /// The rule, as the session found it.
    pub rule: Rule,
    /// The tokens of its text, counted as the prompt's are (when it
    /// rendered).
    pub tokens: Option<usize>,
}

impl RuleReport {
    /// When it applies, in words: `always`, `paths: **/*.rs`, `under:
    /// pkg/sub/`, `requested (never sent by dsh)`.
    pub fn applies(&self) -> String {
        match &self.rule.applies {
            Applies::Always => "always".to_owned(),
            Applies::Paths(globs) => format!("paths: {}", globs.join(", ")),
            Applies::Under(dir) => format!("under: {dir}/"),
            _ => "requested (never sent by dsh)".to_owned(),
        }
    }

    /// How it reaches the model: in the system prompt, or after the first
    /// call that touches a file it covers.
    pub fn delivered(&self) -> &'static str {
        match &self.rule.applies {
            Applies::Always => "system prompt",
            Applies::Paths(_) | Applies::Under(_) => "on first touch",
            _ => "never",
        }
    }
}

/// One file as the reports show it.
#[derive(Debug)]
pub struct FileReport<'a> {
    /// The file, as the session found it.
    pub file: &'a InstructionFile,
    /// Its section's bytes and tokens in the rendered prompt (the marker
    /// included), when it rendered.
    pub in_prompt: Option<Size>,
}

/// The files the budget left out, as the reports show them.
#[derive(Debug)]
pub struct LeftOutReport<'a> {
    /// The files, and the section of their marker.
    pub files: &'a FilesLeftOut,
    /// The marker's bytes and tokens in the rendered prompt, when it
    /// rendered.
    pub in_prompt: Option<Size>,
}

impl<'a> InstructionsReport<'a> {
    /// The files `found` under `config`, each with its share of `prompt`,
    /// when it rendered.
    pub fn new(
        found: &'a Instructions,
        config: &'a InstructionsConfig,
        prompt: Option<(&RenderedPrompt, &PromptTokens)>,
    ) -> Self {
        let in_prompt = |section: &str| {
            prompt.and_then(|(prompt, tokens)| tokens.section_size(prompt, section))
        };
        Self {
            found,
            config,
            files: (found.files().iter())
                .map(|file| FileReport {
                    file,
                    in_prompt: in_prompt(&file.section),
                })
                .collect(),
            left_out: found.left_out().map(|files| LeftOutReport {
                files,
                in_prompt: in_prompt(&files.section),
            }),
            rules: (found.rules().listed().into_iter())
                .map(|rule| RuleReport {
                    tokens: prompt.map(|(_, tokens)| tokens.tokenizer.count(&rule.text)),
                    rule,
                })
                .collect(),
        }
    }

    /// The files skipped, and why.
    pub fn skipped(&self) -> &'a [SkippedFile] {
        self.found.skipped()
    }

    /// Why no file is listed, when none is (neither a file in the prompt
    /// nor a marker of files left out); `None` when one is.
    pub fn none_found(&self) -> Option<String> {
        if !self.files.is_empty() || self.left_out.is_some() {
            return None;
        }
        let config = self.config;
        if !config.enabled {
            return Some("(none: `enabled = false` in [instructions])".to_owned());
        }
        if !self.skipped().is_empty() {
            return Some(
                "(none in the prompt: every file found was skipped, as said below)".to_owned(),
            );
        }
        Some(match self.found.root() {
            Some(root) => format!(
                "(none: no {} from the project root {} to the working directory, and no user \
                 file)",
                config.files.join(" or "),
                root.display()
            ),
            None => {
                "(none: the session has no working directory, and there is no user file)".to_owned()
            }
        })
    }
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

    /// The import that brought the file, as explain shows it, or `-`.
    pub fn imported_by(&self) -> String {
        self.file
            .imported_by
            .as_ref()
            .map_or_else(|| "-".to_owned(), ToString::to_string)
    }
}

impl LeftOutReport<'_> {
    /// The bytes of all the files left out.
    pub fn bytes(&self) -> usize {
        self.files.files.iter().map(|file| file.bytes).sum()
    }
}

/// The warnings of a session's instruction files: each file the budget
/// cut, the files it left out (one warning), and each file skipped for a
/// reason worth saying (outside the project, an import cycle, too deep).
pub(crate) fn warnings(found: &Instructions, config: &InstructionsConfig) -> Vec<Problem> {
    let budget_help = || {
        format!(
            "the budget, `max_bytes = {}` in [instructions], is spent on the files nearest \
             the working directory first, markers included; raise it, or shorten the files; \
             the prompt tells the model where the rest is",
            config.max_bytes
        )
    };
    let mut warnings: Vec<Problem> = found
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
            .help(budget_help())
            .warning()
        })
        .collect();
    if let Some(left_out) = found.left_out() {
        warnings.push(
            Problem::new(format!(
                "{} left out to fit the budget; one line in the prompt says so",
                left_out_files(&left_out.files)
            ))
            .help(budget_help())
            .warning(),
        );
    }
    warnings.extend(
        found
            .skipped()
            .iter()
            .filter(|skipped| skipped.is_warning())
            .map(skipped_warning),
    );
    warnings.extend(found.rules().lint().into_iter().map(|problem| {
        Problem::new(format!("rule file {problem}"))
            .help(
                "see docs/rules.md for each format's keys and how its globs are matched (from the \
                 project root; a glob without a `/` matches a name anywhere)",
            )
            .warning()
    }));
    warnings
}

/// `instruction file `/p/AGENTS.md` is`, or `3 instruction files are`,
/// naming the first and the last.
fn left_out_files(files: &[LeftOutFile]) -> String {
    let path = |file: &LeftOutFile| format!("`{}`", file.path.display());
    match files {
        [one] => format!("instruction file {} is", path(one)),
        [first, .., last] => format!(
            "{} instruction files, from {} to {}, are",
            files.len(),
            path(first),
            path(last)
        ),
        [] => "no instruction file is".to_owned(),
    }
}

/// The warning of a file not read, with what to do about it.
fn skipped_warning(skipped: &SkippedFile) -> Problem {
    use crate::facts::instructions::SkipReason;
    let help = match &skipped.reason {
        SkipReason::Outside { .. } => {
            "instruction files are read from the project and the user's config directory only; \
             copy the text into the project if it belongs there"
        }
        SkipReason::Cycle => "remove the import that leads back, so each file imports forward",
        _ => "import the file from nearer the top, or move its text into a file nearer",
    };
    Problem::new(skipped.to_string()).help(help).warning()
}
