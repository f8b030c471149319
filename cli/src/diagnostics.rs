//! Problems and how they reach the user: one `miette` diagnostic each,
//! pointing into the deployment file when the problem has a place there.

use std::fmt;
use std::io::{IsTerminal, Write};
use std::ops::Range;
use std::sync::Arc;

use dsh_agent_loop::{CWD_VARIABLE, PERSONA_SECTION};
use dsh_system_prompt::template::{self, ParseError, ParseErrorKind, Template};
use dsh_system_prompt::{PromptAssembly, RenderError};
use miette::{
    Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceCode,
};

use crate::config::{self, Deployment};

/// A file diagnostics point into: its display name and its text.
#[derive(Debug, Clone)]
pub(crate) struct SourceFile {
    source: NamedSource<Arc<str>>,
}

impl SourceFile {
    pub(crate) fn new(name: impl AsRef<str>, text: impl Into<Arc<str>>) -> Self {
        Self {
            source: NamedSource::new(name, text.into()).with_language("TOML"),
        }
    }

    /// The name diagnostics show (the path as given).
    pub(crate) fn name(&self) -> &str {
        self.source.name()
    }

    /// The file's text.
    pub(crate) fn text(&self) -> &str {
        self.source.inner()
    }

    /// The 1-based line and column (in characters) of a byte offset.
    pub(crate) fn position(&self, offset: usize) -> (usize, usize) {
        let text = self.text();
        let before = text.get(..offset).unwrap_or(text);
        let line_start = before.rfind('\n').map_or(0, |at| at + 1);
        (
            before.matches('\n').count() + 1,
            before[line_start..].chars().count() + 1,
        )
    }

    /// A problem located in this file; add its labels with
    /// [`Problem::label`].
    pub(crate) fn problem(&self, message: impl Into<String>) -> Problem {
        Problem {
            source: Some(Box::new(self.source.clone())),
            ..Problem::new(message)
        }
    }
}

/// One problem, shown as one diagnostic.
#[derive(Debug, Clone)]
pub(crate) struct Problem {
    message: String,
    /// Boxed: most problems are passed around in `Result`s, which stay
    /// small this way.
    source: Option<Box<NamedSource<Arc<str>>>>,
    labels: Vec<LabeledSpan>,
    help: Option<String>,
}

impl Problem {
    /// A problem with no place in a file.
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            source: None,
            labels: Vec::new(),
            help: None,
        }
    }

    /// Underlines `span` of the problem's file with `label`. The first
    /// label is the primary one: its line and column head the diagnostic.
    pub(crate) fn label(mut self, span: Range<usize>, label: impl Into<String>) -> Self {
        let label = if self.labels.is_empty() {
            LabeledSpan::new_primary_with_span(Some(label.into()), span)
        } else {
            LabeledSpan::new_with_span(Some(label.into()), span)
        };
        self.labels.push(label);
        self
    }

    /// Says how to fix it.
    pub(crate) fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// The one-line message.
    #[cfg(test)]
    pub(crate) fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Problem {}

impl Diagnostic for Problem {
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|help| Box::new(help) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.source
            .as_deref()
            .map(|source| source as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        if self.labels.is_empty() {
            None
        } else {
            Some(Box::new(self.labels.iter().cloned()))
        }
    }
}

/// Renders problems for stderr.
#[derive(Debug)]
pub(crate) struct Reporter {
    handler: GraphicalReportHandler,
}

impl Reporter {
    /// Colors only on a terminal, and never when `NO_COLOR` is set, so
    /// piped output and test snapshots are plain text.
    pub(crate) fn for_stderr() -> Self {
        let color = std::io::stderr().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
        let theme = if color {
            GraphicalTheme::unicode()
        } else {
            GraphicalTheme::unicode_nocolor()
        };
        Self {
            handler: GraphicalReportHandler::new_themed(theme).with_width(100),
        }
    }

    /// Renders one problem: a one-line `error: …` when it has no place in
    /// a file, else a diagnostic with the file excerpt.
    pub(crate) fn render(&self, problem: &Problem) -> String {
        if problem.source.is_none() {
            let mut out = format!("error: {}\n", problem.message);
            if let Some(help) = &problem.help {
                out.push_str(&format!("  help: {help}\n"));
            }
            return out;
        }
        let mut out = String::new();
        if self.handler.render_report(&mut out, problem).is_err() {
            // Rendering into a String cannot fail; keep the message anyway.
            out = format!("error: {}\n", problem.message);
        }
        out
    }

    /// Writes every problem to stderr.
    pub(crate) fn report(&self, problems: &[Problem]) {
        let mut stderr = std::io::stderr().lock();
        for (index, problem) in problems.iter().enumerate() {
            let separator = if index > 0 { "\n" } else { "" };
            // Nothing sensible is left to do when stderr itself is gone.
            let _ = write!(stderr, "{separator}{}", self.render(problem));
        }
    }
}

/// Every problem of a section that failed to render, each pointing at its
/// place in the deployment file when the section is an agent's persona.
///
/// Rendering stops at the first bad reference; a deployment author wants
/// them all, so the persona's references are checked one by one against
/// the same assembly's variables (the lookup `render_prompt` makes), and
/// every syntax error of the template is reported.
pub(crate) fn render_problems(
    deployment: &Deployment,
    agent: &config::AgentSpec,
    assembly: &PromptAssembly,
    error: &RenderError,
) -> Vec<Problem> {
    if error.section() != PERSONA_SECTION {
        return vec![Problem::new(format!(
            "agent `{}`: {error}",
            agent.id.get_ref()
        ))];
    }
    let persona = agent.persona.get_ref().as_str();
    let file = &deployment.file;
    let whose = format!("the persona of agent `{}`", agent.id.get_ref());
    let at = |range: Range<usize>| agent.persona_file_range(file, range);

    // Report every syntax error; then blank the malformed text out (same
    // length, so offsets stay put) to check the references that remain.
    let mut problems = Vec::new();
    let mut text = persona.to_owned();
    let template = loop {
        match Template::parse(&text) {
            Ok(template) => break Some(template),
            Err(errors) if problems.len() < persona.len() => {
                for error in &errors {
                    problems.push(syntax_problem(file, &whose, at(error.span.clone()), error));
                    let span = error.span.clone();
                    if text.is_char_boundary(span.start) && text.is_char_boundary(span.end) {
                        text.replace_range(span.clone(), &" ".repeat(span.len()));
                    }
                }
            }
            Err(_) => break None,
        }
    };
    let Some(template) = template else {
        return problems;
    };

    let mut registered: Vec<&str> = assembly.variables.names().collect();
    registered.sort_unstable();
    for reference in template.references(&text) {
        let span = at(reference.offset..reference.offset + reference.name.len() + 4);
        match assembly.variables.get(reference.name) {
            Some(Some(_)) => {}
            Some(None) => problems.push(valueless_problem(
                file,
                &whose,
                span,
                reference.name,
                assembly,
            )),
            None => problems.push(unknown_problem(
                file,
                &whose,
                span,
                reference.name,
                &registered,
            )),
        }
    }
    if problems.is_empty() {
        // The checks above mirror the render's lookup; should they ever
        // disagree, the render's own message still reaches the user.
        problems.push(
            file.problem(format!("{whose}: {error}"))
                .label(agent.persona.span(), "in this persona"),
        );
    }
    problems
}

/// The escape every message about `<<` names.
const ESCAPE_HINT: &str = "write `\\<<` for a literal `<<`";

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
    let help = match &error.suggestion {
        Some(suggestion) => format!("did you mean `{suggestion}`? {ESCAPE_HINT}"),
        None => ESCAPE_HINT.to_owned(),
    };
    file.problem(message).label(span, label).help(help)
}

fn unknown_problem(
    file: &SourceFile,
    whose: &str,
    span: Range<usize>,
    name: &str,
    registered: &[&str],
) -> Problem {
    let list = if registered.is_empty() {
        "no variables are registered".to_owned()
    } else {
        let names: Vec<String> = registered.iter().map(|name| format!("`{name}`")).collect();
        format!("the registered variables are {}", names.join(", "))
    };
    let help = match config::closest(name, registered) {
        Some(closest) => format!("did you mean `<<{closest}>>`? {list}; {ESCAPE_HINT}"),
        None => format!("{list}; {ESCAPE_HINT}"),
    };
    file.problem(format!("unknown variable `<<{name}>>` in {whose}"))
        .label(span, "not a registered variable")
        .help(help)
}

fn valueless_problem(
    file: &SourceFile,
    whose: &str,
    span: Range<usize>,
    name: &str,
    assembly: &PromptAssembly,
) -> Problem {
    let help = if name == CWD_VARIABLE {
        "the session has no working directory: give it one with `--cwd DIR`, or drop `<<cwd>>` from the persona".to_owned()
    } else {
        let owner = assembly
            .variables
            .owner(name)
            .map(|owner| format!(" (owned by `{}` of {})", owner.item, owner.krate))
            .unwrap_or_default();
        format!(
            "variable `{name}`{owner} gives no value for this agent; drop `<<{name}>>`, or {ESCAPE_HINT}"
        )
    };
    file.problem(format!("`<<{name}>>` has no value in {whose}"))
        .label(span, "no value for this session")
        .help(help)
}
