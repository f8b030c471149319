//! What every tool's table in a deployment file shares: the `permission`
//! key, the table of a tool that has no other key, and the way a table's
//! own checks say where a problem is.
//!
//! Each tool crate owns its table (`[tools.<name>]`) as a `Deserialize`
//! type that refuses unknown keys. serde's `deny_unknown_fields` does not
//! work together with `flatten`, so the shared key is not a flattened
//! struct: every table declares its own `permission` field of the shared
//! type [`Permission`], and the key is documented once, here.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether a tool's calls run at once or after a person approves each:
/// the `permission` key of every `[tools.<name>]` table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// Run each call without asking (the default).
    #[default]
    Allow,
    /// Ask the user before each call, where the front end can ask (an
    /// editor, over ACP); where it cannot, the call is refused.
    Ask,
}

impl Permission {
    /// Whether each call needs a person's yes first.
    pub fn asks(self) -> bool {
        self == Self::Ask
    }
}

/// `[tools.<name>]` of a built-in tool whose only setting is its
/// permission (`read`, `todo_write`).
///
/// ```
/// use dsh_tools::{Permission, PermissionTable};
///
/// let table: PermissionTable = serde_json::from_str(r#"{"permission": "ask"}"#)?;
/// assert_eq!(table.permission, Permission::Ask);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PermissionTable {
    /// `"allow"` (the default) runs each call of the tool at once; `"ask"`
    /// asks the user before each call where the front end can ask (`dsh
    /// acp`, in an editor) and refuses the call where it cannot.
    #[serde(default)]
    pub permission: Permission,
}

/// One place of a [`TableProblem`] in the table it was found in.
#[derive(Debug)]
#[non_exhaustive]
pub struct ProblemPlace<'a, S> {
    /// The key at fault (`roots`), or `None` for the table as a whole (a
    /// key it lacks, a name it may not have).
    pub key: Option<&'static str>,
    /// The string at fault, when the fault is one string of the table
    /// (one of the `roots`): with `S = toml::Spanned<String>` it knows its
    /// own place in the file, nearer than the key's.
    pub value: Option<&'a S>,
    /// A few words shown under the place (`relative`).
    pub label: &'static str,
}

impl<'a, S> ProblemPlace<'a, S> {
    /// The table as a whole.
    pub fn table(label: &'static str) -> Self {
        Self {
            key: None,
            value: None,
            label,
        }
    }

    /// The key `key`, wherever its value is written.
    pub fn key(key: &'static str, label: &'static str) -> Self {
        Self {
            key: Some(key),
            value: None,
            label,
        }
    }

    /// The string `value`, written under the key `key`.
    pub fn value(key: &'static str, value: &'a S, label: &'static str) -> Self {
        Self {
            key: Some(key),
            value: Some(value),
            label,
        }
    }
}

/// A problem that a table's own checks find after it deserialized (a
/// relative root, a provider without the key it needs), with the places
/// that show it, so that a front end points into the file the table came
/// from. Its message (`Display`) names the table and the key.
pub trait TableProblem<S>: std::error::Error {
    /// Where the problem is, the main place first; never empty.
    fn places(&self) -> Vec<ProblemPlace<'_, S>>;

    /// What to do about it, when the message does not say.
    fn help(&self) -> Option<String>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table_testing::{assert_described, assert_refused, table_schema};

    #[test]
    fn a_permission_table_deserializes_and_defaults_to_allow() {
        let table: PermissionTable = toml::from_str("permission = \"ask\"").expect("valid");
        assert!(table.permission.asks());
        let table: PermissionTable = toml::from_str("").expect("valid");
        assert_eq!(table.permission, Permission::Allow);
    }

    #[test]
    fn a_misspelled_key_or_value_is_refused_by_name() {
        assert_refused::<PermissionTable>("permision = \"ask\"", "unknown field `permision`");
        assert_refused::<PermissionTable>(
            "permission = \"sometimes\"",
            "unknown variant `sometimes`",
        );
    }

    #[test]
    fn the_schema_has_the_key_and_refuses_others() {
        let schema = table_schema::<PermissionTable>(&["permission"]);
        assert_eq!(schema["properties"]["permission"]["default"], "allow");
        assert_described(&schema, "permission", "asks the user");
        let permission = &schema["$defs"]["Permission"];
        assert!(permission.to_string().contains("\"ask\""), "{permission:#}");
    }
}
