//! The deployment's model adapter, and a wrapper that records what is sent.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use dsh_agent_loop::{
    AdapterConfig, ModelAdapter, ModelError, ModelRequest, ModelResponse, TextSink, async_trait,
};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::file::{Deployment, TablePlaces};
use crate::problem::Problem;

/// Whether building the adapter may read secrets from the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// `dsh run`: the adapter will be used, so the API key must be there.
    Run,
    /// `dsh check`: only the configuration is checked; no key is read.
    Check,
}

/// The adapter a command that talks to the model uses: the deployment's,
/// recording every request to `record` when given.
pub(crate) fn for_running(
    deployment: &Deployment,
    record: Option<&Path>,
) -> Result<Arc<dyn ModelAdapter>, Problem> {
    let model = build(deployment, Purpose::Run)?;
    Ok(match record {
        Some(path) => {
            crate::file::check_output(deployment, path, "--record-requests")?;
            // The adapter's secrets, so that no request log ever holds
            // one, whatever route it took into the conversation.
            let secrets = deployment
                .adapter
                .secret_env_vars()
                .into_iter()
                .filter_map(|name| Some((name.to_owned(), std::env::var(name).ok()?)))
                .filter(|(_, value)| value.len() >= MIN_REDACTED_LEN)
                .collect();
            Arc::new(RequestRecording::new(model, path)?.redacting(secrets))
        }
        None => model,
    })
}

/// Builds the deployment's adapter, by the agent loop's own
/// [`AdapterConfig`] rules (relative paths against the deployment's
/// directory). A problem of the file (a bad base URL, an unreadable script)
/// points at its key; a missing API key is one line.
pub(crate) fn build(
    deployment: &Deployment,
    purpose: Purpose,
) -> Result<Arc<dyn ModelAdapter>, Problem> {
    let dir = deployment.dir.as_deref().unwrap_or(Path::new(""));
    let adapter = &deployment.adapter;
    let built = match purpose {
        Purpose::Run => adapter.build_in(dir),
        Purpose::Check => adapter.check_in(dir),
    };
    built.map_err(|error| {
        let file = &deployment.file;
        match (adapter, &error) {
            (AdapterConfig::OpenAi { base_url, .. }, ModelError::InvalidBaseUrl { .. }) => file
                .problem(error.to_string())
                .label(base_url.span(), "not an http(s) URL"),
            (
                AdapterConfig::Anthropic {
                    base_url: Some(base_url),
                    ..
                },
                ModelError::InvalidBaseUrl { .. },
            ) => file
                .problem(error.to_string())
                .label(base_url.span(), "not an http(s) URL"),
            (AdapterConfig::Anthropic { .. }, ModelError::InvalidThinkingBudget { .. }) => {
                let place = TablePlaces::in_file(file, &["adapter", "anthropic"])
                    .map(|table| table.key("thinking_budget"));
                let problem = file.problem(error.to_string());
                match place {
                    Some(place) => problem.label(place, "not a budget the API takes"),
                    None => problem,
                }
            }
            (AdapterConfig::Scripted { answers, .. }, _) => file
                .problem(error.to_string())
                .label(answers.span(), "this script")
                .help("the path is relative to the deployment file"),
            _ => Problem::new(error.to_string()),
        }
    })
}

/// An adapter that appends every request to a file, one JSON object a
/// line, before passing it on: exactly what the model is told, step by
/// step.
pub(crate) struct RequestRecording {
    inner: Arc<dyn ModelAdapter>,
    file: Mutex<File>,
    /// Secret values (and their variables' names), replaced in each line
    /// by `[redacted $NAME]`.
    secrets: Vec<(String, String)>,
}

/// Secret values shorter than this are not redacted: replacing every
/// occurrence of a two-letter value would garble the log, and no real API
/// key is that short.
const MIN_REDACTED_LEN: usize = 8;

impl RequestRecording {
    /// Wraps `inner`, appending each request and answer to `path`
    /// (replacing it).
    pub(crate) fn new(inner: Arc<dyn ModelAdapter>, path: &Path) -> Result<Self, Problem> {
        let file = File::create(path).map_err(|error| {
            Problem::new(format!(
                "cannot create `{}` to record requests: {error}",
                path.display()
            ))
        })?;
        Ok(Self {
            inner,
            file: Mutex::new(file),
            secrets: Vec::new(),
        })
    }

    /// Redacts the values of `secrets` (name, value) in every line.
    pub(crate) fn redacting(mut self, secrets: Vec<(String, String)>) -> Self {
        self.secrets = secrets;
        self
    }
}

impl RequestRecording {
    /// Appends `request` to the file, as one JSON line.
    fn record(&self, request: &ModelRequest) -> Result<(), ModelError> {
        let mut line =
            serde_json::to_string(request).map_err(|error| ModelError::Other(error.into()))?;
        for (name, value) in &self.secrets {
            if line.contains(value.as_str()) {
                line = line.replace(value.as_str(), &format!("[redacted ${name}]"));
            }
        }
        let mut file = self.file.lock();
        writeln!(file, "{line}")
            .and_then(|()| file.flush())
            .map_err(|error| {
                ModelError::Other(format!("cannot record the request: {error}").into())
            })
    }
}

impl std::fmt::Debug for RequestRecording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestRecording").finish_non_exhaustive()
    }
}

#[async_trait]
impl ModelAdapter for RequestRecording {
    async fn complete(
        &self,
        request: &ModelRequest,
        on_text: TextSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        self.record(request)?;
        self.inner.complete(request, on_text, cancel).await
    }
}
