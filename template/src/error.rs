//! Syntax errors, their positions, and interpolation errors.

use std::fmt;
use std::ops::Range;

/// A place in a template: byte offset and 1-based line and column.
///
/// The column counts characters (Unicode scalar values), not bytes, so it
/// matches what an editor shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Position {
    /// Byte offset from the start of the template.
    pub offset: usize,
    /// 1-based line number.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// How to write a literal `<<`: every message about `<<` ends with it.
pub const ESCAPE_HINT: &str = "write `\\<<` for a literal `<<`";

/// What is wrong with a piece of template syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// A complete `<<…>>` group whose inside is not a variable name.
    MalformedReference,
    /// A `<<` that opens no complete group while a `>>` follows later.
    UnclosedOpening,
}

/// One syntax error in a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// What is wrong.
    pub kind: ParseErrorKind,
    /// Byte range of the offending text in the template.
    pub span: Range<usize>,
    /// Where the offending text starts.
    pub position: Position,
    /// The offending text, as written.
    pub text: String,
    /// A valid reference the author probably meant (`<<model>>` for
    /// `<< Model >>`), when there is one.
    pub suggestion: Option<String>,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            kind,
            position,
            text,
            suggestion,
            ..
        } = self;
        match kind {
            ParseErrorKind::MalformedReference => {
                write!(
                    f,
                    "malformed reference `{text}` at {position}: a reference is `<<name>>` \
                     with a name matching `{}`",
                    crate::VARIABLE_NAME_GRAMMAR
                )?;
                if let Some(suggestion) = suggestion {
                    write!(f, " (did you mean `{suggestion}`?)")?;
                }
            }
            ParseErrorKind::UnclosedOpening => write!(
                f,
                "`<<` at {position} opens no reference, but a `>>` follows (in `{text}`)"
            )?,
        }
        write!(f, "; {ESCAPE_HINT}")
    }
}

impl ParseError {
    /// How to fix it: the reference the author probably meant, if any, and
    /// the escape for a literal `<<`.
    pub fn help(&self) -> String {
        match &self.suggestion {
            Some(suggestion) => format!("did you mean `{suggestion}`? {ESCAPE_HINT}"),
            None => ESCAPE_HINT.to_owned(),
        }
    }
}

impl std::error::Error for ParseError {}

/// Every syntax error of one template, in order of position. Never empty.
pub type ParseErrors = ErrorList<ParseError>;

/// Names as every message of the workspace lists them: each in
/// backticks, joined by `, ` (the one formatter of such lists, so they all
/// read the same). Empty for no names: say what none means where it is
/// called.
///
/// ```
/// use dsh_prompt_template::quoted_list;
///
/// assert_eq!(quoted_list(["cwd", "model"]), "`cwd`, `model`");
/// assert_eq!(quoted_list(Vec::<String>::new()), "");
/// ```
pub fn quoted_list<I>(names: I) -> String
where
    I: IntoIterator,
    I::Item: fmt::Display,
{
    use fmt::Write as _;
    let mut list = String::new();
    for (at, name) in names.into_iter().enumerate() {
        let separator = if at > 0 { ", " } else { "" };
        // Writing to a `String` cannot fail.
        let _ = write!(list, "{separator}`{name}`");
    }
    list
}

/// Items as a sentence lists them: `a`, `a and b`, `a, b and c` — with
/// `conjunction` (`"and"`, `"or"`) before the last. The one way a message
/// of dsh lists numbers or names in prose.
///
/// ```
/// use dsh_prompt_template::series;
///
/// assert_eq!(series([3, 5, 8], "and"), "3, 5 and 8");
/// assert_eq!(series(["`order`", "`name`"], "or"), "`order` or `name`");
/// assert_eq!(series([1], "and"), "1");
/// assert_eq!(series(Vec::<u8>::new(), "and"), "");
/// ```
pub fn series<I>(items: I, conjunction: &str) -> String
where
    I: IntoIterator,
    I::Item: fmt::Display,
{
    let items: Vec<String> = items.into_iter().map(|item| item.to_string()).collect();
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} {conjunction} {last}", rest.join(", ")),
    }
}

/// A list of errors that is never empty, in the order a pass found them:
/// what a check that reports every problem, not just the first, returns.
///
/// [`ParseErrors`] is one; crates that build on the grammar use it for
/// their own all-problems reports, so every such list reads the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorList<E> {
    errors: Vec<E>,
}

impl<E> ErrorList<E> {
    /// The list of `errors`, or `None` when there are none.
    pub fn new(errors: Vec<E>) -> Option<Self> {
        (!errors.is_empty()).then_some(Self { errors })
    }

    /// The errors, in the order they were found.
    pub fn iter(&self) -> std::slice::Iter<'_, E> {
        self.errors.iter()
    }

    /// How many errors there are (at least one).
    #[allow(clippy::len_without_is_empty, reason = "never empty by construction")]
    pub fn len(&self) -> usize {
        self.errors.len()
    }

    /// The first error found.
    pub fn first(&self) -> &E {
        &self.errors[0]
    }
}

impl<'a, E> IntoIterator for &'a ErrorList<E> {
    type Item = &'a E;
    type IntoIter = std::slice::Iter<'a, E>;

    fn into_iter(self) -> Self::IntoIter {
        self.errors.iter()
    }
}

impl<E> IntoIterator for ErrorList<E> {
    type Item = E;
    type IntoIter = std::vec::IntoIter<E>;

    fn into_iter(self) -> Self::IntoIter {
        self.errors.into_iter()
    }
}

/// Appends the errors of a later pass (still never empty): how two
/// all-problems reports become one, in order.
impl<E> Extend<E> for ErrorList<E> {
    fn extend<I: IntoIterator<Item = E>>(&mut self, errors: I) {
        self.errors.extend(errors);
    }
}

impl<E: fmt::Display> fmt::Display for ErrorList<E> {
    /// One error a line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, error) in self.errors.iter().enumerate() {
            if index > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for ErrorList<E> {}

/// An error of [`interpolate`](crate::interpolate): the template is malformed,
/// or the lookup failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InterpolateError<E> {
    /// The template has syntax errors.
    Parse(ParseErrors),
    /// The lookup returned an error for a reference.
    Lookup(E),
}

impl<E: fmt::Display> fmt::Display for InterpolateError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Parse(errors) => errors.fmt(f),
            Self::Lookup(error) => error.fmt(f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for InterpolateError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Parse(errors) => Some(errors),
            Self::Lookup(error) => Some(error),
        }
    }
}

/// Turns increasing byte offsets into line:column in one forward pass, so
/// reporting many errors stays linear in the template's length.
#[derive(Debug)]
pub(crate) struct PositionCursor<'s> {
    source: &'s str,
    offset: usize,
    line: usize,
    column: usize,
}

impl<'s> PositionCursor<'s> {
    pub(crate) fn new(source: &'s str) -> Self {
        Self {
            source,
            offset: 0,
            line: 1,
            column: 1,
        }
    }

    /// The position of `offset`, which must not be before the previous one.
    pub(crate) fn advance_to(&mut self, offset: usize) -> Position {
        debug_assert!(offset >= self.offset && offset <= self.source.len());
        let passed = self.source.get(self.offset..offset).unwrap_or_default();
        for ch in passed.chars() {
            if ch == '\n' {
                self.line += 1;
                self.column = 1;
            } else {
                self.column += 1;
            }
        }
        self.offset = offset;
        Position {
            offset,
            line: self.line,
            column: self.column,
        }
    }
}
