//! Where a table of the file is, and each of its keys: what a table's own
//! checks ([`TableProblem`]) need to point into the file, and how a
//! table or value is deserialized from the parsed document with its
//! places kept.

use std::collections::BTreeMap;
use std::ops::Range;

use dsh_tools::TableProblem;
use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeValue, ValueDeserializer};

use crate::problem::{Problem, SourceFile};

/// The places of one table of the file: the table's, and the value of
/// each of its keys.
#[derive(Debug, Clone)]
pub struct TablePlaces {
    table: Range<usize>,
    keys: BTreeMap<String, Range<usize>>,
}

impl TablePlaces {
    /// The places of `value`, a table (a value that is not one has only
    /// its own place).
    pub(super) fn of(value: &Spanned<DeValue<'_>>) -> Self {
        let keys = value
            .get_ref()
            .as_table()
            .map(|table| {
                table
                    .iter()
                    .map(|(key, value)| (key.get_ref().to_string(), value.span()))
                    .collect()
            })
            .unwrap_or_default();
        Self {
            table: value.span(),
            keys,
        }
    }

    /// The places of the table at `path` of `file` (`["adapter",
    /// "anthropic"]`), read again from its text: for a check made after
    /// the file was read, of a value that keeps no place of its own (a
    /// number); `None` when the file has no such table.
    pub(crate) fn in_file(file: &SourceFile, path: &[&str]) -> Option<Self> {
        let root = toml::de::DeTable::parse(file.text()).ok()?;
        let (first, rest) = path.split_first()?;
        let mut value = root.get_ref().get(*first)?;
        for key in rest {
            value = value.get_ref().as_table()?.get(*key)?;
        }
        Some(Self::of(value))
    }

    /// The table's place.
    pub fn span(&self) -> Range<usize> {
        self.table.clone()
    }

    /// The place of the value of `key`, else the table's.
    pub(crate) fn key(&self, key: &str) -> Range<usize> {
        self.keys.get(key).unwrap_or(&self.table).clone()
    }

    /// Whether the table writes `key`.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.keys.contains_key(key)
    }

    /// A problem a table's own checks found, labelled at each of its
    /// places: the string at fault when it knows one, else its key's
    /// value, else the table.
    pub(super) fn problem<P>(&self, file: &SourceFile, problem: &P) -> Problem
    where
        P: TableProblem<Spanned<String>>,
    {
        let mut located = file.problem(problem.to_string());
        for place in problem.places() {
            let span = match (place.value, place.key) {
                (Some(value), _) => value.span(),
                (None, Some(key)) => self.key(key),
                (None, None) => self.span(),
            };
            located = located.label(span, place.label);
        }
        match problem.help() {
            Some(help) => located.help(help),
            None => located,
        }
    }
}

/// `value` deserialized as a `T`, or the deserializer's problem located
/// in the file.
pub(super) fn deserialize<'i, T: Deserialize<'i>>(
    file: &SourceFile,
    value: Spanned<DeValue<'i>>,
) -> Result<T, Problem> {
    T::deserialize(ValueDeserializer::from(value))
        .map_err(|error| deserializer_problem(file, &error))
}

/// A deserializer's error as a problem, labelled at its place when it has
/// one.
pub(super) fn deserializer_problem(file: &SourceFile, error: &toml::de::Error) -> Problem {
    match error.span() {
        Some(span) => file
            .problem(error.message().to_owned())
            .label(span, label_for(error.message())),
        None => Problem::new(format!("{}: {}", file.name(), error.message())),
    }
}

/// A short label for the span of a deserializer error.
fn label_for(message: &str) -> &'static str {
    if message.starts_with("unknown field") {
        "unknown key"
    } else if message.starts_with("unknown variant") {
        "unknown value"
    } else if message.starts_with("invalid type") {
        "wrong type"
    } else if message.starts_with("missing field") {
        "in this table"
    } else if message.starts_with("duplicate key") {
        "duplicate key"
    } else {
        "here"
    }
}

/// The entries of the table `value` (`[tools]`, `[mcp]`), by key; a
/// value that is not a table is a problem, and has none.
pub(super) fn entries<'i>(
    file: &SourceFile,
    key: &str,
    value: Option<Spanned<DeValue<'i>>>,
    problems: &mut Vec<Problem>,
) -> BTreeMap<String, Spanned<DeValue<'i>>> {
    let Some(value) = value else {
        return BTreeMap::new();
    };
    let span = value.span();
    match value.into_inner() {
        DeValue::Table(table) => table
            .into_iter()
            .map(|(name, value)| (name.into_inner().into_owned(), value))
            .collect(),
        other => {
            problems.push(
                file.problem(format!(
                    "invalid type: {}, expected a table of `[{key}.<name>]` tables",
                    other.type_str()
                ))
                .label(span, "wrong type"),
            );
            BTreeMap::new()
        }
    }
}
