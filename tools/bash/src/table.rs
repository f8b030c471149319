//! `[tools.bash]`: the bash tool's table in a deployment file.

use std::borrow::Borrow;

use dsh_tools::Permission;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::BashTool;

/// `[tools.bash]`: how a deployment configures the `bash` tool.
///
/// ```toml
/// [tools.bash]
/// permission = "ask"
/// env_remove = ["GITHUB_TOKEN"]
/// ```
///
/// `S` is how the table holds a string: `String`, or a type that also
/// keeps where the string was written (`toml::Spanned<String>`), so a
/// front end deserializes this one schema and still points into its file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
// The bound is stated: serde's own would ask `S: Default` for the
// defaulted list, which a spanned string is not.
#[serde(deny_unknown_fields, bound(deserialize = "S: Deserialize<'de>"))]
pub struct BashTable<S = String> {
    /// `"allow"` (the default) runs each command at once; `"ask"` asks
    /// the user before each command where the front end can ask (`dsh
    /// acp`, in an editor) and refuses it where it cannot.
    #[serde(default)]
    pub permission: Permission,
    /// Environment variables the commands run without, by name (a token
    /// the model must not print). The model adapter's API key variable is
    /// always removed, listed here or not. Default: none.
    #[serde(default)]
    pub env_remove: Vec<S>,
    /// Variables whose names look secret (they contain `KEY`, `SECRET`,
    /// `TOKEN` or `PASSWORD`), which commands otherwise run without, that
    /// they keep: `["GITHUB_TOKEN"]`. The adapter's key, MCP bearer
    /// tokens and `[environment] secrets` are never kept. Default: none.
    #[serde(default)]
    pub env_keep: Vec<S>,
}

impl<S> Default for BashTable<S> {
    fn default() -> Self {
        Self {
            permission: Permission::default(),
            env_remove: Vec::new(),
            env_keep: Vec::new(),
        }
    }
}

impl<S: Borrow<str>> BashTable<S> {
    /// `tool` with the table's settings: its commands run without the
    /// table's `env_remove` too. `permission` is the caller's to enforce,
    /// since asking a person is a front end's business.
    ///
    /// ```
    /// use dsh_tool_bash::{BashTable, BashTool};
    ///
    /// let table = BashTable { env_remove: vec!["GITHUB_TOKEN".to_owned()], ..BashTable::default() };
    /// let tool = table.configure(BashTool::new().without_env(["OPENAI_API_KEY"]));
    /// assert_eq!(tool.env_removed(), ["OPENAI_API_KEY", "GITHUB_TOKEN"]);
    /// ```
    pub fn configure(&self, tool: BashTool) -> BashTool {
        tool.without_env(self.env_remove.iter().map(|name| name.borrow().to_owned()))
    }
}

impl<S> BashTable<S> {
    /// The same table with every string mapped by `f` (a front end drops
    /// the places it kept: `table.map(Spanned::into_inner)`).
    pub fn map<T>(self, mut f: impl FnMut(S) -> T) -> BashTable<T> {
        BashTable {
            permission: self.permission,
            env_remove: self.env_remove.into_iter().map(&mut f).collect(),
            env_keep: self.env_keep.into_iter().map(f).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use dsh_tools::table_testing::{assert_described, assert_refused, table_schema};

    use super::*;

    #[test]
    fn a_good_table_deserializes_and_configures_the_tool() {
        let table: BashTable =
            toml::from_str("permission = \"ask\"\nenv_remove = [\"A\", \"B\"]").expect("valid");
        assert!(table.permission.asks());
        assert_eq!(table.configure(BashTool::new()).env_removed(), ["A", "B"]);
        let empty: BashTable = toml::from_str("").expect("valid");
        assert_eq!(empty, BashTable::default());
    }

    #[test]
    fn spans_are_kept_where_the_caller_asks() {
        let text = "env_remove = [\"A\"]";
        let table: BashTable<toml::Spanned<String>> = toml::from_str(text).expect("valid");
        let span = table.env_remove[0].span();
        assert_eq!(&text[span], "\"A\"");
    }

    #[test]
    fn a_misspelled_key_is_refused_by_name() {
        assert_refused::<BashTable>("env_remvoe = [\"A\"]", "unknown field `env_remvoe`");
        // `roots` is a key of the file tools', not of bash's.
        assert_refused::<BashTable>("roots = [\"/tmp\"]", "unknown field `roots`");
    }

    #[test]
    fn the_schema_has_the_keys_and_refuses_others() {
        let schema = table_schema::<BashTable>(&["permission", "env_remove", "env_keep"]);
        assert_described(&schema, "env_remove", "API key");
    }
}
