//! `[sessions]`: where the deployment's sessions are recorded, or that
//! they are not.
//!
//! ```toml
//! [sessions]
//! enabled = true                  # default; false: nothing is recorded or resumed
//! path = "state/sessions.db"      # default: $XDG_STATE_HOME/dsh/sessions.db
//! ```
//!
//! A relative `path` is relative to the deployment file's directory, like
//! every path the file names. `--no-store` on `dsh run` and `dsh acp`
//! turns the store off for one process.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;

/// `[sessions]`: where the deployment's sessions are recorded.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SessionsTable {
    /// `false`: no session is recorded, and none can be resumed. Default:
    /// `true`.
    enabled: Option<bool>,
    /// The session database; a relative path is relative to the
    /// deployment file's directory. Default:
    /// `$XDG_STATE_HOME/dsh/sessions.db`.
    path: Option<PathBuf>,
}

/// Where sessions are recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionStore {
    /// `[sessions] enabled = false`: nowhere.
    Off,
    /// The default file (`dsh_session_store::Store::default_path`).
    Default,
    /// The file `[sessions] path` names, resolved.
    At(PathBuf),
}

impl SessionsTable {
    /// The table's meaning, with a relative path resolved against `dir`,
    /// the deployment file's directory.
    pub(super) fn resolve(self, dir: Option<&Path>) -> SessionStore {
        if self.enabled == Some(false) {
            return SessionStore::Off;
        }
        match self.path {
            Some(path) if path.is_relative() => match dir {
                Some(dir) => SessionStore::At(dir.join(path)),
                None => SessionStore::At(path),
            },
            Some(path) => SessionStore::At(path),
            None => SessionStore::Default,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> SessionsTable {
        toml::from_str(text).expect("a [sessions] table")
    }

    #[test]
    fn sessions_are_recorded_by_default() {
        assert_eq!(table("").resolve(None), SessionStore::Default);
    }

    #[test]
    fn a_relative_path_is_the_deployment_files() {
        assert_eq!(
            table(r#"path = "s.db""#).resolve(Some(Path::new("/d"))),
            SessionStore::At("/d/s.db".into())
        );
        assert_eq!(
            table(r#"path = "/abs/s.db""#).resolve(Some(Path::new("/d"))),
            SessionStore::At("/abs/s.db".into())
        );
    }

    #[test]
    fn enabled_false_turns_the_store_off() {
        assert_eq!(
            table("enabled = false\npath = \"x\"").resolve(None),
            SessionStore::Off
        );
    }
}
