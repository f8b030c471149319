//! `AdapterConfig`: which model adapter a deployment uses, as its file
//! says it.

use std::borrow::Borrow;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{
    CompactAt, ContextBudget, Encoding, ModelAdapter, ModelError, OpenAiAdapter, OpenAiConfig,
    ScriptedAdapter, Tokenizer, TokenizerError,
};

/// The model adapter of a deployment, and the default model of its agents:
/// the `[adapter.<kind>]` table of a deployment file.
///
/// ```
/// use dsh_agent_loop::AdapterConfig;
///
/// #[derive(serde::Deserialize)]
/// struct Deployment {
///     adapter: AdapterConfig,
/// }
///
/// let openai: Deployment = toml::from_str(r#"
///     [adapter.openai]
///     base_url = "https://api.openai.com/v1"
///     model = "gpt-5"
///     api_key_env = "OPENAI_API_KEY"
/// "#)?;
/// assert_eq!(openai.adapter.model().map(String::as_str), Some("gpt-5"));
///
/// let scripted: Deployment = toml::from_str(r#"
///     [adapter.scripted]
///     answers = "answers.toml"
///     tokenizer = "cl100k_base"
/// "#)?;
/// assert!(matches!(scripted.adapter, AdapterConfig::Scripted { .. }));
/// let tokenizer = scripted.adapter.tokenizer_for("dsh-scripted")?;
/// assert_eq!(tokenizer.encoding().name(), "cl100k_base");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// `S` is how the config holds a string: `String`, or a type that also
/// keeps where it was written (`toml::Spanned<String>`), so that a front
/// end deserializes this one schema and still points its diagnostics at
/// the key that is wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum AdapterConfig<S = String> {
    /// `[adapter.openai]`: an OpenAI-compatible chat-completions API
    /// ([`OpenAiAdapter`]).
    #[serde(rename = "openai")]
    OpenAi {
        /// The API's base URL, up to and without `/chat/completions`.
        base_url: S,
        /// The default model of the deployment's agents.
        model: Option<S>,
        /// The environment variable that holds the API key; without it
        /// no key is sent (a local server).
        api_key_env: Option<S>,
        /// How long one request may take, in milliseconds
        /// ([`OpenAiConfig::DEFAULT_TIMEOUT_MS`] when left out).
        timeout_ms: Option<u64>,
        /// The [`Encoding`] tokens are counted with (`o200k_base`,
        /// `cl100k_base`); left out, each agent's model selects it
        /// ([`Tokenizer::for_model`]).
        tokenizer: Option<S>,
        /// The model's context window in tokens, for a model the table
        /// of [`context_window_for`](crate::context_window_for) does not
        /// know (or knows wrong).
        context_window: Option<u64>,
        /// The fraction of the window at which the loop compacts
        /// ([`CompactAt::DEFAULT`] when left out).
        compact_at: Option<CompactAt>,
    },
    /// `[adapter.scripted]`: canned answers from a script file
    /// ([`Script`](crate::Script)): deterministic and offline.
    Scripted {
        /// The script file; a relative path is resolved against the
        /// directory given to [`build_in`](AdapterConfig::build_in).
        answers: S,
        /// The default model name the agents report as `<<model>>`.
        model: Option<S>,
        /// The [`Encoding`] tokens are counted with, as for `openai`.
        tokenizer: Option<S>,
        /// The context window, as for `openai`.
        context_window: Option<u64>,
        /// When to compact, as for `openai`.
        compact_at: Option<CompactAt>,
    },
}

/// Whether building an adapter reads its secrets.
#[derive(Clone, Copy)]
enum ApiKey {
    FromEnv,
    Unread,
}

impl<S: Borrow<str>> AdapterConfig<S> {
    /// The default model of the deployment's agents, when the table sets
    /// one.
    pub fn model(&self) -> Option<&S> {
        match self {
            Self::OpenAi { model, .. } | Self::Scripted { model, .. } => model.as_ref(),
        }
    }

    /// The `tokenizer` key as written, when the table sets one.
    pub fn tokenizer_name(&self) -> Option<&S> {
        match self {
            Self::OpenAi { tokenizer, .. } | Self::Scripted { tokenizer, .. } => tokenizer.as_ref(),
        }
    }

    /// The encoding the table's `tokenizer` names, when it sets one; an
    /// error when that is no encoding of this build.
    pub fn tokenizer(&self) -> Result<Option<Encoding>, TokenizerError> {
        self.tokenizer_name()
            .map(|name| name.borrow().parse())
            .transpose()
    }

    /// How the tokens of an agent on `model` are counted: with the table's
    /// `tokenizer`, else with the encoding `model` selects.
    pub fn tokenizer_for(&self, model: &str) -> Result<Tokenizer, TokenizerError> {
        Ok(Tokenizer::select(model, self.tokenizer()?))
    }

    /// The context budget of an agent on `model`: the table's
    /// `context_window` and `compact_at`, else the model's window and the
    /// default; counted with [`tokenizer_for`](Self::tokenizer_for).
    pub fn budget_for(&self, model: &str) -> Result<ContextBudget, TokenizerError> {
        let (window, compact_at) = self.context_budget();
        Ok(ContextBudget::for_model(model, window, compact_at)
            .with_tokenizer(self.tokenizer_for(model)?))
    }

    /// The table's `context_window` and `compact_at`, as written.
    pub fn context_budget(&self) -> (Option<u64>, Option<CompactAt>) {
        // A new adapter kind adds its two keys here, and nothing else.
        match self {
            Self::OpenAi {
                context_window,
                compact_at,
                ..
            }
            | Self::Scripted {
                context_window,
                compact_at,
                ..
            } => (*context_window, *compact_at),
        }
    }

    /// Builds the adapter; relative paths are taken as they are.
    pub fn build(&self) -> Result<Arc<dyn ModelAdapter>, ModelError> {
        self.build_in(Path::new(""))
    }

    /// Builds the adapter, resolving relative paths against `dir` (the
    /// directory of the config file that names them). The OpenAI adapter
    /// reads its API key from the environment now, so a missing key fails
    /// here rather than at the first request.
    pub fn build_in(&self, dir: &Path) -> Result<Arc<dyn ModelAdapter>, ModelError> {
        self.build_with(dir, ApiKey::FromEnv)
    }

    /// Builds the adapter like [`build_in`](Self::build_in), but reads no
    /// secret: the OpenAI adapter it returns sends no API key. For checking
    /// a configuration (its URL, its script) where the key is not set.
    pub fn check_in(&self, dir: &Path) -> Result<Arc<dyn ModelAdapter>, ModelError> {
        self.build_with(dir, ApiKey::Unread)
    }

    fn build_with(&self, dir: &Path, key: ApiKey) -> Result<Arc<dyn ModelAdapter>, ModelError> {
        Ok(match self {
            Self::Scripted { answers, .. } => {
                Arc::new(ScriptedAdapter::from_file(dir.join(answers.borrow()))?)
            }
            Self::OpenAi {
                base_url,
                api_key_env,
                timeout_ms,
                ..
            } => {
                let mut config = OpenAiConfig::new(base_url.borrow());
                if let Some(var) = api_key_env {
                    config = config.with_api_key_env(var.borrow());
                }
                if let Some(timeout_ms) = timeout_ms {
                    config = config.with_timeout(Duration::from_millis(*timeout_ms));
                }
                match key {
                    ApiKey::FromEnv => Arc::new(OpenAiAdapter::from_env(config)?),
                    ApiKey::Unread => Arc::new(OpenAiAdapter::new(config, None)?),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct File {
        adapter: AdapterConfig,
    }

    fn parse(text: &str) -> Result<AdapterConfig, toml::de::Error> {
        toml::from_str::<File>(text).map(|file| file.adapter)
    }

    /// Why `build` (which reads the API key and takes relative paths as
    /// they are) fails for `config`; empty if it does not.
    fn build_error(config: &AdapterConfig) -> String {
        config
            .build()
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let error = parse("[adapter.openai]\nbase_url = \"http://x\"\napi_key = \"sk\"\n")
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
        assert!(error.contains("api_key"), "{error}");
    }

    #[test]
    fn places_can_be_kept() -> Result<(), toml::de::Error> {
        #[derive(Debug, Deserialize)]
        struct Located {
            adapter: AdapterConfig<toml::Spanned<String>>,
        }
        let text = "[adapter.openai]\nbase_url = \"x\"\n";
        let located: Located = toml::from_str(text)?;
        let AdapterConfig::OpenAi { base_url, .. } = located.adapter else {
            return Err(serde::de::Error::custom("an openai adapter"));
        };
        assert_eq!(&text[base_url.span()], "\"x\"");
        Ok(())
    }

    #[test]
    fn the_tokenizer_is_the_tables_or_the_models() -> Result<(), Box<dyn std::error::Error>> {
        let plain = parse("[adapter.scripted]\nanswers = \"a.toml\"\n")?;
        assert_eq!(plain.tokenizer()?, None);
        assert_eq!(plain.tokenizer_for("gpt-4")?, Tokenizer::for_model("gpt-4"));
        let configured =
            parse("[adapter.openai]\nbase_url = \"http://x\"\ntokenizer = \"cl100k_base\"\n")?;
        let tokenizer = configured.tokenizer_for("gpt-5")?;
        assert_eq!(tokenizer, Tokenizer::configured(Encoding::Cl100kBase));
        let unknown = parse("[adapter.scripted]\nanswers = \"a.toml\"\ntokenizer = \"gpt2\"\n")?;
        assert_eq!(
            unknown.tokenizer_for("gpt-5"),
            Err(TokenizerError::Unknown {
                name: "gpt2".to_owned()
            })
        );
        Ok(())
    }

    #[test]
    fn the_budget_is_the_tables_or_the_models() -> Result<(), Box<dyn std::error::Error>> {
        let plain = parse("[adapter.openai]\nbase_url = \"http://x\"\n")?;
        assert_eq!(plain.budget_for("gpt-4o")?.window(), Some(128_000));
        assert_eq!(plain.budget_for("gpt-4o")?.threshold(), Some(108_800));
        let configured = parse(
            "[adapter.scripted]\nanswers = \"a.toml\"\ncontext_window = 2000\ncompact_at = 0.5\n",
        )?;
        let budget = configured.budget_for("dsh-scripted")?;
        assert_eq!(budget.window(), Some(2_000));
        assert_eq!(budget.threshold(), Some(1_000));
        let error = parse("[adapter.scripted]\nanswers = \"a.toml\"\ncompact_at = 2\n")
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
        assert!(error.contains("compact_at"), "{error}");
        Ok(())
    }

    #[test]
    fn checking_reads_no_key() -> Result<(), Box<dyn std::error::Error>> {
        let config = parse(
            "[adapter.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\n\
             api_key_env = \"DSH_TEST_UNSET_KEY\"\n",
        )?;
        config.check_in(Path::new(""))?;
        let missing = build_error(&config);
        assert!(missing.contains("DSH_TEST_UNSET_KEY"), "{missing}");
        Ok(())
    }

    #[test]
    fn a_relative_script_is_found_beside_the_config() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("demo.toml"), "[[answers]]\ntext = \"hi\"\n")?;
        let config = parse("[adapter.scripted]\nanswers = \"demo.toml\"\n")?;
        config.build_in(dir.path())?;
        let missing = build_error(&config);
        assert!(missing.contains("demo.toml"), "{missing}");
        Ok(())
    }
}
