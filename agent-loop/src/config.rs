//! `AdapterConfig`: which model adapter a deployment uses.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{ModelAdapter, ModelError, OpenAiAdapter, OpenAiConfig, ScriptedAdapter};

/// The model adapter of a deployment, as its config names it.
///
/// ```
/// use dsh_agent_loop::AdapterConfig;
///
/// let openai: AdapterConfig = toml::from_str(r#"
///     adapter = "openai"
///     base_url = "https://api.openai.com/v1"
///     api_key_env = "OPENAI_API_KEY"
/// "#)?;
/// assert!(matches!(openai, AdapterConfig::OpenAi(_)));
///
/// let scripted: AdapterConfig = toml::from_str(r#"
///     adapter = "scripted"
///     script = "demo.toml"
/// "#)?;
/// assert!(matches!(scripted, AdapterConfig::Scripted { .. }));
/// # Ok::<(), toml::de::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "adapter", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AdapterConfig {
    /// Canned answers from a script file ([`Script`](crate::Script)).
    Scripted {
        /// The script file; a relative path is resolved against the
        /// directory given to [`build_in`](AdapterConfig::build_in).
        script: PathBuf,
    },
    /// An OpenAI-compatible chat-completions API.
    #[serde(rename = "openai")]
    OpenAi(OpenAiConfig),
}

impl AdapterConfig {
    /// Builds the adapter; relative paths are taken as they are.
    pub fn build(&self) -> Result<Arc<dyn ModelAdapter>, ModelError> {
        self.build_in(Path::new(""))
    }

    /// Builds the adapter, resolving relative paths against `dir` (the
    /// directory of the config file that names them). The OpenAI adapter
    /// reads its API key from the environment now, so a missing key fails
    /// here rather than at the first request.
    pub fn build_in(&self, dir: &Path) -> Result<Arc<dyn ModelAdapter>, ModelError> {
        Ok(match self {
            Self::Scripted { script } => Arc::new(ScriptedAdapter::from_file(dir.join(script))?),
            Self::OpenAi(config) => Arc::new(OpenAiAdapter::from_env(config.clone())?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_are_rejected() {
        let error = toml::from_str::<AdapterConfig>(
            "adapter = \"openai\"\nbase_url = \"http://x\"\napi_key = \"sk\"\n",
        )
        .err()
        .map(|error| error.to_string())
        .unwrap_or_default();
        assert!(error.contains("api_key"), "{error}");
    }

    #[test]
    fn a_relative_script_is_found_beside_the_config() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("demo.toml"), "[[answers]]\ntext = \"hi\"\n")?;
        let config: AdapterConfig =
            toml::from_str("adapter = \"scripted\"\nscript = \"demo.toml\"\n")?;
        config.build_in(dir.path())?;
        let missing = config
            .build()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(missing.contains("demo.toml"), "{missing}");
        Ok(())
    }
}
