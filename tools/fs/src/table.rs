//! `[tools.write]` and `[tools.edit]`: the changing tools' table in a
//! deployment file. `read` has no key but `permission`, so its table is
//! [`dsh_tools::PermissionTable`].

use std::borrow::Borrow;
use std::path::PathBuf;

use dsh_tools::{Permission, ProblemPlace, TableProblem};
use schemars::JsonSchema;
use serde::Deserialize;

/// `[tools.write]` and `[tools.edit]`: how a deployment configures a
/// tool that changes files.
///
/// ```toml
/// [tools.write]
/// permission = "ask"
/// roots = ["/tmp"]
/// ```
///
/// `S` is how the table holds a string: `String`, or a type that also
/// keeps where the string was written (`toml::Spanned<String>`), so a
/// front end deserializes this one schema and still points into its file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
// The bound is stated: serde's own would ask `S: Default` for the
// defaulted list, which a spanned string is not.
#[serde(deny_unknown_fields, bound(deserialize = "S: Deserialize<'de>"))]
pub struct ChangeToolTable<S = String> {
    /// `"allow"` (the default) changes files at once; `"ask"` asks the
    /// user before each change where the front end can ask (`dsh acp`, in
    /// an editor) and refuses it where it cannot.
    #[serde(default)]
    pub permission: Permission,
    /// Directories outside the session's working directory where the tool
    /// changes files without asking, each an absolute path (`/tmp`).
    /// Anywhere else outside the working directory, a change is refused
    /// unless the front end asks the user. Default: none.
    #[serde(default)]
    pub roots: Vec<S>,
}

impl<S> Default for ChangeToolTable<S> {
    fn default() -> Self {
        Self {
            permission: Permission::default(),
            roots: Vec::new(),
        }
    }
}

impl<S: Borrow<str> + Clone> ChangeToolTable<S> {
    /// The table's `roots` for the tool named `tool` (its table's key,
    /// `write`), each checked to be absolute — the value of
    /// [`WriteTool::with_roots`](crate::WriteTool::with_roots) and
    /// [`EditTool::with_roots`](crate::EditTool::with_roots). `Err` has
    /// every root that is not.
    ///
    /// ```
    /// use dsh_tool_fs::ChangeToolTable;
    ///
    /// let table = ChangeToolTable { roots: vec!["/tmp".to_owned(), "tmp".to_owned()], ..Default::default() };
    /// let errors = table.roots("write").expect_err("a relative root");
    /// assert_eq!(errors[0].to_string(), "root `tmp` of `[tools.write]` is not an absolute path");
    /// ```
    pub fn roots(&self, tool: &str) -> Result<Vec<PathBuf>, Vec<ChangeToolTableError<S>>> {
        let mut roots = Vec::with_capacity(self.roots.len());
        let mut errors = Vec::new();
        for root in &self.roots {
            let path = PathBuf::from(root.borrow());
            if path.is_absolute() {
                roots.push(path);
            } else {
                errors.push(ChangeToolTableError::RelativeRoot {
                    tool: tool.to_owned(),
                    root: root.clone(),
                });
            }
        }
        if errors.is_empty() {
            Ok(roots)
        } else {
            Err(errors)
        }
    }
}

impl<S> ChangeToolTable<S> {
    /// The same table with every string mapped by `f` (a front end drops
    /// the places it kept: `table.map(Spanned::into_inner)`).
    pub fn map<T>(self, f: impl FnMut(S) -> T) -> ChangeToolTable<T> {
        ChangeToolTable {
            permission: self.permission,
            roots: self.roots.into_iter().map(f).collect(),
        }
    }
}

/// A problem of a [`ChangeToolTable`] that the deserializer cannot see.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeToolTableError<S: Borrow<str>> {
    /// A root is a relative path: relative to what would depend on where
    /// dsh runs, so it is refused.
    #[error("root `{}` of `[tools.{tool}]` is not an absolute path", .root.borrow())]
    RelativeRoot {
        /// The table's key: the tool's name.
        tool: String,
        /// The root as written.
        root: S,
    },
}

impl<S: Borrow<str> + std::fmt::Debug> TableProblem<S> for ChangeToolTableError<S> {
    fn places(&self) -> Vec<ProblemPlace<'_, S>> {
        match self {
            Self::RelativeRoot { root, .. } => vec![ProblemPlace::value("roots", root, "relative")],
        }
    }

    fn help(&self) -> Option<String> {
        match self {
            Self::RelativeRoot { .. } => {
                Some("write the directory's absolute path, like `/tmp`".to_owned())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use dsh_tools::table_testing::{assert_described, assert_refused, table_schema};

    use super::*;

    #[test]
    fn a_good_table_deserializes_with_absolute_roots() {
        let table: ChangeToolTable =
            toml::from_str("permission = \"ask\"\nroots = [\"/tmp\", \"/srv/data\"]")
                .expect("valid");
        assert!(table.permission.asks());
        assert_eq!(
            table.roots("write").expect("absolute"),
            [PathBuf::from("/tmp"), PathBuf::from("/srv/data")]
        );
        let empty: ChangeToolTable = toml::from_str("").expect("valid");
        assert_eq!(empty.roots("edit").expect("none"), Vec::<PathBuf>::new());
    }

    #[test]
    fn every_relative_root_is_an_error_at_its_place() {
        let text = "roots = [\"tmp\", \"/srv\", \"../up\"]";
        let table: ChangeToolTable<toml::Spanned<String>> = toml::from_str(text).expect("valid");
        let errors = table.roots("edit").expect_err("relative roots");
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            [
                "root `tmp` of `[tools.edit]` is not an absolute path",
                "root `../up` of `[tools.edit]` is not an absolute path",
            ]
        );
        let places = errors[1].places();
        assert_eq!(places[0].key, Some("roots"));
        let span = places[0].value.expect("the root").span();
        assert_eq!(&text[span], "\"../up\"");
        assert!(errors[0].help().is_some_and(|help| help.contains("/tmp")));
    }

    #[test]
    fn a_misspelled_key_is_refused_by_name() {
        assert_refused::<ChangeToolTable>("root = [\"/tmp\"]", "unknown field `root`");
        // `env_remove` is bash's key, not the file tools'.
        assert_refused::<ChangeToolTable>("env_remove = []", "unknown field `env_remove`");
    }

    #[test]
    fn the_schema_has_the_keys_and_refuses_others() {
        let schema = table_schema::<ChangeToolTable>(&["permission", "roots"]);
        assert_described(&schema, "roots", "absolute path");
    }
}
