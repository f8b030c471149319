//! `[tools.<name>]`: each table is read as the type of the crate that
//! owns it, chosen by its name and its `kind`.
//!
//! | table | type |
//! |---|---|
//! | `[tools.bash]` | `dsh_tool_bash::BashTable` |
//! | `[tools.write]`, `[tools.edit]` | `dsh_tool_fs::ChangeToolTable` |
//! | another built-in's (`read`, `todo_write`) | `dsh_tools::PermissionTable` |
//! | any other name, with `kind = "subagent"` | `dsh_tool_subagent::SubagentTable` |
//!
//! Each table is deserialized on its own, so a mistake in one does not
//! hide the mistakes of the others; each type refuses keys it does not
//! know. `ToolsSchema` is the same choice written as a type, for the
//! file's JSON Schema ([`schema`](super::schema)).

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use dsh_system_prompt::template::quoted_list;
use dsh_tool_bash::BashTable;
use dsh_tool_fs::{ChangeToolTable, EDIT_TOOL_NAME, WRITE_TOOL_NAME};
use dsh_tool_subagent::SubagentTable;
use dsh_tools::PermissionTable;
use schemars::JsonSchema;
use toml::Spanned;
use toml::de::DeValue;

use super::places::{TablePlaces, deserialize};
use crate::problem::{Problem, SourceFile};

/// `[tools]` as the schema describes it: the built-in tools' tables by
/// name, and any other name a subagent instance. The loader makes the
/// same choice table by table ([`read_tool_tables`]).
#[derive(JsonSchema)]
#[schemars(
    rename = "Tools",
    description = "`[tools.<name>]`: a built-in tool's settings under its name, or a subagent tool instance under any other name."
)]
// A schema of the file, never deserialized: the loader reads each table
// on its own, to report every broken table at once.
#[allow(dead_code)]
pub(super) struct ToolsSchema {
    /// The `bash` tool: when it asks, and what its commands run without.
    bash: Option<BashTable>,
    /// The `read` tool: when it asks.
    read: Option<PermissionTable>,
    /// The `todo_write` tool: when it asks.
    todo_write: Option<PermissionTable>,
    /// The `write` tool: when it asks, and where outside the working
    /// directory it may change files.
    write: Option<ChangeToolTable>,
    /// The `edit` tool, as `write`.
    edit: Option<ChangeToolTable>,
    /// Any other name: a subagent tool instance, which the model calls by
    /// that name.
    #[serde(flatten)]
    instances: BTreeMap<String, SubagentTable>,
}

/// A `[tools.<name>]` tool instance, checked: its table, and where its
/// keys are written.
#[derive(Debug)]
pub struct ToolInstance {
    /// The table, each string with its place.
    pub table: SubagentTable<Spanned<String>>,
    /// Where the table and each of its keys are.
    pub places: TablePlaces,
}

/// What the `[tools.<name>]` tables say, checked.
#[derive(Debug, Default)]
pub(super) struct ToolTables {
    /// The tool instances.
    pub instances: BTreeMap<String, ToolInstance>,
    /// The instance tables with a problem, reported already.
    pub broken: HashSet<String>,
    /// The tools whose calls are approved first (`permission = "ask"`).
    pub ask_first: Vec<String>,
    /// The `roots` of `[tools.write]` and `[tools.edit]`, by tool.
    pub roots: BTreeMap<String, Vec<PathBuf>>,
    /// `[tools.bash]`.
    pub bash: BashTable,
}

/// Reads each `[tools.<name>]` table as its type, pushing each problem.
pub(super) fn read_tool_tables(
    file: &SourceFile,
    tables: BTreeMap<String, Spanned<DeValue<'_>>>,
    builtin_tools: &[&str],
    problems: &mut Vec<Problem>,
) -> ToolTables {
    let mut read = ToolTables::default();
    for (name, value) in tables {
        let places = TablePlaces::of(&value);
        let result = if builtin_tools.contains(&name.as_str()) {
            read.builtin(file, &name, value, &places)
        } else {
            read.instance(file, &name, value, places, builtin_tools)
        };
        if let Err(mut found) = result {
            problems.append(&mut found);
        }
    }
    read
}

impl ToolTables {
    /// A built-in tool's table: its crate's type, never a `kind`.
    fn builtin(
        &mut self,
        file: &SourceFile,
        name: &str,
        value: Spanned<DeValue<'_>>,
        places: &TablePlaces,
    ) -> Result<(), Vec<Problem>> {
        // The built-in's guidance section is bound to its name.
        if places.has("kind") {
            return Err(vec![
                file.problem(format!(
                    "tool instance `{name}` takes the name of the built-in tool `{name}`"
                ))
                .label(places.key("kind"), "an instance's `kind`")
                .help(format!(
                    "name the instance differently, e.g. `[tools.{name}_agent]`; \
                     a table named after a built-in sets only its own keys"
                )),
            ]);
        }
        let permission = match name {
            dsh_tool_bash::TOOL_NAME => {
                let table: BashTable<Spanned<String>> =
                    deserialize(file, value).map_err(|problem| vec![problem])?;
                self.bash = table.map(Spanned::into_inner);
                self.bash.permission
            }
            WRITE_TOOL_NAME | EDIT_TOOL_NAME => {
                let table: ChangeToolTable<Spanned<String>> =
                    deserialize(file, value).map_err(|problem| vec![problem])?;
                let roots = table.roots(name).map_err(|errors| {
                    let to_problem = |error| places.problem(file, &error);
                    errors.into_iter().map(to_problem).collect::<Vec<_>>()
                })?;
                self.roots.insert(name.to_owned(), roots);
                table.permission
            }
            _ => {
                let table: PermissionTable =
                    deserialize(file, value).map_err(|problem| vec![problem])?;
                table.permission
            }
        };
        if permission.asks() {
            self.ask_first.push(name.to_owned());
        }
        Ok(())
    }

    /// A tool instance's table: a `kind`, then the kind's type and checks.
    fn instance(
        &mut self,
        file: &SourceFile,
        name: &str,
        value: Spanned<DeValue<'_>>,
        places: TablePlaces,
        builtin_tools: &[&str],
    ) -> Result<(), Vec<Problem>> {
        // Every problem of an instance's table is reported here, not again
        // where an agent lists the instance.
        self.broken.insert(name.to_owned());
        if !places.has("kind") {
            return Err(vec![
                file.problem(format!("tool instance `{name}` has no `kind`"))
                    .label(places.span(), "this table")
                    .help(format!(
                        "set `kind = \"{}\"` and a `provider`; the built-in tools, \
                         whose tables need no kind, are {}",
                        SubagentTable::KIND,
                        quoted_list(builtin_tools)
                    )),
            ]);
        }
        let table: SubagentTable<Spanned<String>> =
            deserialize(file, value).map_err(|problem| vec![problem])?;
        table.check(name).map_err(|errors| {
            let to_problem = |error| places.problem(file, &error);
            errors.into_iter().map(to_problem).collect::<Vec<_>>()
        })?;
        if table.permission.asks() {
            self.ask_first.push(name.to_owned());
        }
        self.broken.remove(name);
        self.instances
            .insert(name.to_owned(), ToolInstance { table, places });
        Ok(())
    }
}
