//! `AdapterConfig`: which model adapter a deployment uses, as its file
//! says it.

use std::borrow::Borrow;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    AnthropicAdapter, AnthropicConfig, CacheTtl, CompactAt, ContextBudget, Encoding, ModelAdapter,
    ModelError, OpenAiAdapter, OpenAiConfig, ScriptedAdapter, Tokenizer, TokenizerError,
    TokenizerRule,
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
/// let anthropic: Deployment = toml::from_str(r#"
///     [adapter.anthropic]
///     model = "claude-sonnet-4-5"
///     cache_ttl = "1h"
/// "#)?;
/// assert!(matches!(anthropic.adapter, AdapterConfig::Anthropic { .. }));
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
///
/// The JSON Schema of the table, for editors and `dsh.toml` checks, is
/// that of `AdapterConfig<String>` (`schemars::schema_for!`); unknown
/// keys are refused there as in serde (`additionalProperties: false`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
// The schema's own description: the type's documentation is written for
// Rust readers (its example is Rust), an editor's tooltip for the file's.
#[schemars(
    description = "The model adapter of the deployment and the default model of its agents: one `[adapter.<kind>]` table, `openai`, `anthropic` or `scripted`."
)]
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
        /// The models a person may pick for a session (an editor's model
        /// picker, `dsh run --model`, `/model`); `model`, when set, is the
        /// default. Default: `model` alone.
        models: Option<Vec<S>>,
        /// The reasoning efforts a person may pick for a session (an
        /// editor's `thought_level` picker), as the API names them
        /// (`reasoning_effort`: `"low"`, `"medium"`, `"high"`); the first
        /// is the default. Default: none, and no picker.
        efforts: Option<Vec<S>>,
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
        /// Whether requests carry `prompt_cache_key` = the session's id
        /// ([`OpenAiConfig::prompt_cache_key`]); on when left out.
        prompt_cache_key: Option<bool>,
        /// How many times a busy server (HTTP 429) is asked again
        /// ([`OpenAiConfig::DEFAULT_MAX_RETRIES`] when left out; 0 never
        /// retries).
        max_retries: Option<u32>,
        /// The model's context window in tokens, for a model the table
        /// of [`context_window_for`](crate::context_window_for) does not
        /// know (or knows wrong).
        context_window: Option<u64>,
        /// The fraction of the window at which the loop compacts
        /// ([`CompactAt::DEFAULT`] when left out).
        compact_at: Option<CompactAt>,
    },
    /// `[adapter.anthropic]`: Anthropic's Messages API
    /// ([`AnthropicAdapter`]), its cache breakpoints placed by what dsh
    /// keeps stable.
    Anthropic {
        /// The default model of the deployment's agents
        /// (`claude-sonnet-4-5`).
        model: Option<S>,
        /// The models a person may pick for a session (an editor's model
        /// picker, `dsh run --model`, `/model`); `model`, when set, is the
        /// default. Default: `model` alone.
        models: Option<Vec<S>>,

        /// The environment variable that holds the API key
        /// ([`AnthropicConfig::DEFAULT_API_KEY_ENV`] when left out).
        api_key_env: Option<S>,
        /// The API's base URL, without `/v1`
        /// ([`AnthropicConfig::DEFAULT_BASE_URL`] when left out).
        base_url: Option<S>,
        /// The most tokens one answer may take
        /// ([`AnthropicConfig::DEFAULT_MAX_TOKENS`] when left out).
        max_tokens: Option<u32>,
        /// Extended thinking: the most tokens the model thinks in before
        /// it answers, at least 1024 and below `max_tokens`
        /// ([`AnthropicConfig::thinking_budget`]); no thinking when left
        /// out.
        thinking_budget: Option<u32>,
        /// How long cached prefixes live, `"5m"` (when left out) or
        /// `"1h"`.
        cache_ttl: Option<CacheTtl>,
        /// How long one request may take, in milliseconds.
        timeout_ms: Option<u64>,
        /// How many times a busy API is asked again
        /// ([`AnthropicConfig::DEFAULT_MAX_RETRIES`] when left out).
        max_retries: Option<u32>,
        /// The [`Encoding`] tokens are counted with; left out, Claude
        /// models are estimated with `o200k_base`
        /// ([`TokenizerChoice::Estimate`](crate::TokenizerChoice::Estimate)),
        /// since Anthropic ships no offline tokenizer.
        tokenizer: Option<S>,
        /// The context window, as for `openai`.
        context_window: Option<u64>,
        /// When to compact, as for `openai`.
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
        /// The models a person may pick for a session (an editor's model
        /// picker, `dsh run --model`, `/model`); `model`, when set, is the
        /// default. Default: `model` alone.
        models: Option<Vec<S>>,

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
            Self::OpenAi { model, .. }
            | Self::Anthropic { model, .. }
            | Self::Scripted { model, .. } => model.as_ref(),
        }
    }

    /// The models a person may pick for a session (`models`), as written.
    pub fn models(&self) -> &[S] {
        match self {
            Self::OpenAi { models, .. }
            | Self::Anthropic { models, .. }
            | Self::Scripted { models, .. } => models.as_deref().unwrap_or_default(),
        }
    }

    /// The reasoning efforts a person may pick (`efforts`, OpenAI's
    /// `reasoning_effort`), as written; none for the other APIs.
    pub fn efforts(&self) -> &[S] {
        match self {
            Self::OpenAi { efforts, .. } => efforts.as_deref().unwrap_or_default(),
            Self::Anthropic { .. } | Self::Scripted { .. } => &[],
        }
    }

    /// The environment variables that hold this adapter's secrets (its
    /// API key): what a tool's subprocess must not inherit, and what a
    /// request log must not contain. A new adapter with a secret adds its
    /// arm here, and every front end that strips or redacts secrets covers
    /// it.
    pub fn secret_env_vars(&self) -> Vec<&str> {
        match self {
            Self::OpenAi { api_key_env, .. } => {
                api_key_env.iter().map(|var| var.borrow()).collect()
            }
            // Anthropic reads its default variable when the table names
            // none: that one is the secret then.
            Self::Anthropic { api_key_env, .. } => vec![
                api_key_env
                    .as_ref()
                    .map_or(crate::AnthropicConfig::DEFAULT_API_KEY_ENV, |var| {
                        var.borrow()
                    }),
            ],
            Self::Scripted { .. } => Vec::new(),
        }
    }

    /// The `tokenizer` key as written, when the table sets one.
    pub fn tokenizer_name(&self) -> Option<&S> {
        match self {
            Self::OpenAi { tokenizer, .. }
            | Self::Anthropic { tokenizer, .. }
            | Self::Scripted { tokenizer, .. } => tokenizer.as_ref(),
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
    ///
    /// Under `[adapter.anthropic]` every model's tokens are an estimate
    /// ([`Tokenizer::estimate`]) unless the table names a tokenizer: the
    /// API serves Claude models only, and none has an offline tokenizer.
    pub fn tokenizer_for(&self, model: &str) -> Result<Tokenizer, TokenizerError> {
        Ok(self.tokenizer_rule()?.for_model(model))
    }

    /// The rule that picks the tokenizer of every model under this table
    /// (see [`tokenizer_for`](Self::tokenizer_for)); an error when its
    /// `tokenizer` names no encoding of this build.
    pub fn tokenizer_rule(&self) -> Result<TokenizerRule, TokenizerError> {
        Ok(match (self, self.tokenizer()?) {
            (_, Some(configured)) => TokenizerRule::configured(configured),
            (Self::Anthropic { .. }, None) => TokenizerRule::estimate_all(),
            (_, None) => TokenizerRule::by_model(),
        })
    }

    /// The context budget of an agent on `model`: the table's
    /// `context_window` and `compact_at`, else the model's window and the
    /// default; counted with [`tokenizer_for`](Self::tokenizer_for).
    pub fn budget_for(&self, model: &str) -> Result<ContextBudget, TokenizerError> {
        Ok(self.budget_with(model, self.tokenizer_rule()?))
    }

    /// [`budget_for`](Self::budget_for) with the tokenizer rule already
    /// checked (a deployment checks it once, when it loads).
    pub fn budget_with(&self, model: &str, tokenizers: TokenizerRule) -> ContextBudget {
        let (window, compact_at) = self.context_budget();
        ContextBudget::for_model(model, window, compact_at)
            .with_tokenizer(tokenizers.for_model(model))
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
            | Self::Anthropic {
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
            Self::OpenAi { .. } => {
                let config = self.openai_config().ok_or_else(|| {
                    ModelError::Other(
                        "an `[adapter.openai]` table made no OpenAI configuration".into(),
                    )
                })?;
                match key {
                    ApiKey::FromEnv => Arc::new(OpenAiAdapter::from_env(config)?),
                    ApiKey::Unread => Arc::new(OpenAiAdapter::new(config, None)?),
                }
            }
            Self::Anthropic { .. } => {
                let config = self.anthropic_config().ok_or_else(|| {
                    ModelError::Other(
                        "an `[adapter.anthropic]` table made no Anthropic configuration".into(),
                    )
                })?;
                match key {
                    ApiKey::FromEnv => Arc::new(AnthropicAdapter::from_env(config)?),
                    ApiKey::Unread => Arc::new(AnthropicAdapter::new(config, None)?),
                }
            }
        })
    }

    /// The adapter's configuration of an `[adapter.openai]` table, its
    /// defaults where the table is silent; `None` for another kind.
    fn openai_config(&self) -> Option<OpenAiConfig> {
        let Self::OpenAi {
            base_url,
            api_key_env,
            timeout_ms,
            prompt_cache_key,
            max_retries,
            ..
        } = self
        else {
            return None;
        };
        let mut config = OpenAiConfig::new(base_url.borrow());
        if let Some(var) = api_key_env {
            config = config.with_api_key_env(var.borrow());
        }
        if let Some(timeout_ms) = timeout_ms {
            config = config.with_timeout(Duration::from_millis(*timeout_ms));
        }
        if let Some(send) = prompt_cache_key {
            config = config.with_prompt_cache_key(*send);
        }
        if let Some(max_retries) = max_retries {
            config.max_retries = *max_retries;
        }
        Some(config)
    }

    /// The adapter's configuration of an `[adapter.anthropic]` table, its
    /// defaults where the table is silent; `None` for another kind.
    fn anthropic_config(&self) -> Option<AnthropicConfig> {
        let Self::Anthropic {
            api_key_env,
            base_url,
            max_tokens,
            cache_ttl,
            timeout_ms,
            max_retries,
            thinking_budget,
            ..
        } = self
        else {
            return None;
        };
        let defaults = AnthropicConfig::default();
        Some(AnthropicConfig {
            base_url: base_url
                .as_ref()
                .map_or(defaults.base_url, |url| url.borrow().to_owned()),
            api_key_env: api_key_env
                .as_ref()
                .map_or(defaults.api_key_env, |var| var.borrow().to_owned()),
            max_tokens: max_tokens.unwrap_or(defaults.max_tokens),
            cache_ttl: cache_ttl.unwrap_or(defaults.cache_ttl),
            timeout_ms: timeout_ms.unwrap_or(defaults.timeout_ms),
            max_retries: max_retries.unwrap_or(defaults.max_retries),
            retry_base_ms: defaults.retry_base_ms,
            thinking_budget: *thinking_budget,
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
    fn an_adapters_secret_variables_are_its_key_variables() -> Result<(), toml::de::Error> {
        let openai =
            parse("[adapter.openai]\nbase_url = \"http://x\"\napi_key_env = \"MY_KEY\"\n")?;
        assert_eq!(openai.secret_env_vars(), ["MY_KEY"]);
        let local = parse("[adapter.openai]\nbase_url = \"http://x\"\n")?;
        assert!(local.secret_env_vars().is_empty());
        let scripted = parse("[adapter.scripted]\nanswers = \"a.toml\"\n")?;
        assert!(scripted.secret_env_vars().is_empty());
        // Anthropic's default variable is its secret when none is named.
        let anthropic = parse("[adapter.anthropic]\nmodel = \"claude-x\"\n")?;
        assert_eq!(anthropic.secret_env_vars(), ["ANTHROPIC_API_KEY"]);
        let named = parse("[adapter.anthropic]\nmodel = \"c\"\napi_key_env = \"K\"\n")?;
        assert_eq!(named.secret_env_vars(), ["K"]);
        Ok(())
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
    fn an_anthropic_table_needs_only_a_model() -> Result<(), Box<dyn std::error::Error>> {
        let config = parse(
            "[adapter.anthropic]\nmodel = \"claude-sonnet-4-5\"\n\
             api_key_env = \"DSH_TEST_UNSET_ANTHROPIC_KEY\"\ncache_ttl = \"1h\"\n",
        )?;
        assert!(matches!(
            config,
            AdapterConfig::Anthropic {
                cache_ttl: Some(CacheTtl::OneHour),
                ..
            }
        ));
        config.check_in(Path::new(""))?;
        let missing = build_error(&config);
        assert!(
            missing.contains("DSH_TEST_UNSET_ANTHROPIC_KEY"),
            "{missing}"
        );
        // Any model of the table is an estimate, unless a tokenizer is named.
        assert_eq!(
            config.tokenizer_for("not-a-claude-name")?.choice(),
            crate::TokenizerChoice::Estimate
        );
        let named = parse("[adapter.anthropic]\ntokenizer = \"cl100k_base\"\n")?;
        assert_eq!(
            named.tokenizer_for("claude-sonnet-4-5")?,
            Tokenizer::configured(Encoding::Cl100kBase)
        );
        let wrong = parse("[adapter.anthropic]\ncache_ttl = \"2h\"\n")
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
        assert!(wrong.contains("`5m` or `1h`"), "{wrong}");
        Ok(())
    }

    #[test]
    fn a_thinking_budget_is_checked_against_max_tokens() -> Result<(), toml::de::Error> {
        let on = parse("[adapter.anthropic]\nmax_tokens = 4096\nthinking_budget = 2048\n")?;
        assert_eq!(
            on.anthropic_config()
                .and_then(|config| config.thinking_budget),
            Some(2048)
        );
        assert!(on.check_in(Path::new("")).is_ok());
        let too_big = parse("[adapter.anthropic]\nthinking_budget = 8192\n")?;
        let error = too_big
            .check_in(Path::new(""))
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
        assert!(error.contains("below `max_tokens` = 8192"), "{error}");
        Ok(())
    }

    #[test]
    fn the_openai_cache_key_can_be_turned_off() -> Result<(), toml::de::Error> {
        let off = parse("[adapter.openai]\nbase_url = \"http://x\"\nprompt_cache_key = false\n")?;
        assert!(matches!(
            off,
            AdapterConfig::OpenAi {
                prompt_cache_key: Some(false),
                ..
            }
        ));
        Ok(())
    }

    #[test]
    fn the_openai_retries_come_from_the_table() -> Result<(), toml::de::Error> {
        let table = "[adapter.openai]\nbase_url = \"http://x\"\n";
        let default = parse(table)?
            .openai_config()
            .map(|config| config.max_retries);
        assert_eq!(default, Some(OpenAiConfig::DEFAULT_MAX_RETRIES));
        let never = parse(&format!("{table}max_retries = 0\n"))?;
        assert_eq!(
            never.openai_config().map(|config| config.max_retries),
            Some(0)
        );
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

    /// The schema of each `[adapter.<kind>]` table: its keys, which of
    /// them are required, and whether unknown keys are refused.
    fn table_schemas() -> Result<Vec<(String, serde_json::Value)>, String> {
        let schema = serde_json::to_value(schemars::schema_for!(AdapterConfig<String>))
            .map_err(|error| error.to_string())?;
        let variants = schema["oneOf"]
            .as_array()
            .ok_or_else(|| format!("no `oneOf` in {schema:#}"))?;
        let mut tables = Vec::new();
        for variant in variants {
            let properties = variant["properties"]
                .as_object()
                .ok_or_else(|| format!("a variant without properties: {variant:#}"))?;
            for (kind, table) in properties {
                tables.push((kind.clone(), table.clone()));
            }
            assert_eq!(
                variant["additionalProperties"],
                serde_json::Value::Bool(false),
                "one kind a table: {variant:#}"
            );
        }
        Ok(tables)
    }

    #[test]
    fn the_json_schema_names_every_key_and_refuses_others() -> Result<(), String> {
        let tables = table_schemas()?;
        let kinds: Vec<&str> = tables.iter().map(|(kind, _)| kind.as_str()).collect();
        assert_eq!(kinds, ["openai", "anthropic", "scripted"]);
        let expected: [&[&str]; 3] = [
            &[
                "base_url",
                "model",
                "models",
                "efforts",
                "api_key_env",
                "timeout_ms",
                "tokenizer",
                "prompt_cache_key",
                "max_retries",
                "context_window",
                "compact_at",
            ],
            &[
                "model",
                "models",
                "api_key_env",
                "base_url",
                "max_tokens",
                "thinking_budget",
                "cache_ttl",
                "timeout_ms",
                "max_retries",
                "tokenizer",
                "context_window",
                "compact_at",
            ],
            &[
                "answers",
                "model",
                "models",
                "tokenizer",
                "context_window",
                "compact_at",
            ],
        ];
        for ((kind, table), keys) in tables.iter().zip(expected) {
            let properties = table["properties"]
                .as_object()
                .ok_or_else(|| format!("`{kind}` has no properties: {table:#}"))?;
            let names: Vec<&str> = properties.keys().map(String::as_str).collect();
            assert_eq!(names, keys, "the keys of `[adapter.{kind}]`");
            assert_eq!(
                table["additionalProperties"],
                serde_json::Value::Bool(false),
                "`[adapter.{kind}]` refuses unknown keys, as serde does"
            );
        }
        // The required keys are the ones serde requires.
        assert_eq!(tables[0].1["required"], serde_json::json!(["base_url"]));
        assert_eq!(tables[2].1["required"], serde_json::json!(["answers"]));
        Ok(())
    }

    #[test]
    fn the_json_schema_states_the_values_serde_accepts() -> Result<(), String> {
        let schema = serde_json::to_value(schemars::schema_for!(AdapterConfig<String>))
            .map_err(|error| error.to_string())?;
        let text = schema.to_string();
        assert!(
            text.contains(r#""5m""#) && text.contains(r#""1h""#),
            "{text}"
        );
        let compact_at = &schema["$defs"]["CompactAt"];
        assert_eq!(compact_at["exclusiveMinimum"], 0, "{schema:#}");
        assert_eq!(compact_at["maximum"], 1, "{schema:#}");
        Ok(())
    }
}
