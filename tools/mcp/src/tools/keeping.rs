//! A server's lists kept current: what is listed at its start, and the
//! task that reads its tools again when it says they changed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::RwLock;
use rmcp::RoleClient;
use rmcp::model::{Resource, ResourceTemplate};
use rmcp::service::{ClientCacheConfig, Peer, ServiceError};
use tokio_util::sync::CancellationToken;

use crate::connection::connect::is_modern;
use crate::connection::logging::set_log_level;
use crate::connection::watched::Announcements;
use crate::resources::prompts::{PromptList, ServerPrompt, list_prompts};
use crate::resources::read::{list_resources, list_templates};
use crate::tasks::TaskOnly;
use crate::tools::tool_list::{Listed, MIN_RELIST_INTERVAL, list_tools};
use crate::tools::tool_set::ToolSet;
use crate::{McpError, ServerConfig};

/// What the server and the task that keeps its tools current share.
pub(crate) struct Shared {
    pub(crate) config: ServerConfig,
    pub(crate) tools: RwLock<Arc<ToolSet>>,
    /// Counts the tool lists received: the first is 1.
    pub(crate) generation: AtomicU64,
    /// The `list_changed` notifications read off the transport, which
    /// shares them (`Watched`).
    pub(crate) announced: Arc<Announcements>,
    /// How many of those the tools have been read again since (or
    /// failed to be): a call waits for it to reach `announced`.
    pub(crate) handled: tokio::sync::watch::Sender<u64>,
    /// The server's resources, as listed at its start; `None` when it
    /// has no resources capability.
    pub(crate) resources: RwLock<Option<Arc<[Resource]>>>,
    /// Its resource templates (`recipe://{name}`), as listed at its start:
    /// the reader's description shows them.
    pub(crate) templates: RwLock<Arc<[ResourceTemplate]>>,
    /// Its prompts, as listed at its start and again on
    /// `notifications/prompts/list_changed`; `None` when it has no
    /// prompts capability.
    pub(crate) prompts: Arc<PromptList>,
    /// The tools it runs only as tasks, as read off a stdio server's
    /// answers (`tasks`): left out of its tool set.
    pub(crate) task_only: Arc<TaskOnly>,
    /// The last list read, as the server sent it, and how long it stays
    /// fresh (`ttlMs`).
    pub(crate) last: RwLock<Listed>,
    /// Set when the server (over HTTP) answers 401 after all: it wants a
    /// login, or a new one (`TappedHttp`).
    pub(crate) refused: Arc<AtomicBool>,
}

impl Shared {
    /// Puts a list read in place: the tools as the model sees them now,
    /// read after `covered` notifications.
    pub(crate) fn listed(&self, listed: Listed, covered: u64) {
        let resources = self.resources.read().clone();
        let templates = Arc::clone(&self.templates.read());
        let task_only = self.task_only.names();
        *self.tools.write() = Arc::new(ToolSet::new(
            &self.config,
            listed.tools.clone(),
            (resources.as_deref(), &templates),
            &task_only,
        ));
        *self.last.write() = listed;
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.handled
            .send_modify(|handled| *handled = (*handled).max(covered));
    }

    /// Starts the task that keeps the server's tools current
    /// ([`keep_tools_current`](Self::keep_tools_current)); cancelling the
    /// token ends it.
    pub(crate) fn keep_current(shared: &Arc<Self>, peer: &Peer<RoleClient>) -> CancellationToken {
        let stop = CancellationToken::new();
        let (shared, peer, token) = (Arc::clone(shared), peer.clone(), stop.clone());
        tokio::spawn(async move { shared.keep_tools_current(peer, token).await });
        stop
    }

    /// Reads the tools again whenever the server said they changed, until
    /// `stop`: one list at a time (notifications meanwhile make one more,
    /// no more), and at most one every [`MIN_RELIST_INTERVAL`], so a server
    /// that announces without pause costs dsh little. A list that fails
    /// leaves the tools as they were, and says so.
    async fn keep_tools_current(&self, peer: Peer<RoleClient>, stop: CancellationToken) {
        let (name, output) = (&self.config.name, &self.config.output);
        loop {
            tokio::select! {
                () = self.announced.changed() => {}
                () = stop.cancelled() => return,
            }
            let covered = self.announced.count();
            // The notification went no further than `Watched`: rmcp's
            // cache still has the list it changed, fresh or not.
            peer.clear_response_cache().await;
            match tokio::time::timeout(self.config.startup_timeout, list_tools(&peer)).await {
                Ok(Ok(tools)) => self.listed(tools, covered),
                Ok(Err(error)) => output.failed(
                    name,
                    format!("its tool list changed, but could not be read again: {error}"),
                ),
                Err(_) => output.failed(
                    name,
                    "its tool list changed, but listing it again timed out",
                ),
            }
            self.handled
                .send_modify(|handled| *handled = (*handled).max(covered));
            tokio::select! {
                () = tokio::time::sleep(MIN_RELIST_INTERVAL) => {}
                () = stop.cancelled() => return,
            }
        }
    }
}

impl Shared {
    /// What is listed at the start, within the caller's deadline: the
    /// log level asked for (2025-11-25, where the server has logging),
    /// its resources and prompts, then its tools.
    pub(crate) async fn first_lists(&self, peer: &Peer<RoleClient>) -> Result<(), McpError> {
        let config = &self.config;
        // rmcp keeps lists for their `ttlMs`; one that could not be read
        // again is an error, never the old list passed off as new.
        let cache = ClientCacheConfig::default().with_serve_stale_on_error(false);
        peer.set_response_cache_config(cache).await;
        let covered = self.announced.count();
        let logging = (peer.peer_info()).is_some_and(|info| info.capabilities.logging.is_some());
        // 2026-07-28 has no `logging/setLevel`: dsh shows a server's
        // messages at its level all the same (`log_line`).
        if logging && !is_modern(peer) {
            set_log_level(config, peer).await;
        }
        let (resources, templates, prompts) = listed_beside_tools(config, peer).await;
        *self.resources.write() = resources;
        *self.templates.write() = templates;
        self.prompts.set(prompts);
        let listed = list_tools(peer)
            .await
            .map_err(|error| error.at_start(config))?;
        self.listed(listed, covered);
        Ok(())
    }
}

impl Shared {
    /// Opens `subscriptions/listen` to a 2026-07-28 server that offers
    /// to say its lists changed, kept until `stop`; the task that keeps
    /// it.
    pub(crate) async fn listen_if_offered(
        &self,
        peer: &Peer<RoleClient>,
        stop: &CancellationToken,
    ) -> Option<tokio::task::JoinHandle<()>> {
        let filter = crate::connection::listen::offered(peer).filter(|_| is_modern(peer))?;
        let config = &self.config;
        crate::connection::listen::listen(
            peer,
            filter,
            (Arc::clone(&self.prompts), stop.clone()),
            (&config.name, &config.output),
        )
        .await
    }
}

/// What a server has beside its tools, as listed at its start: its
/// resources (`None` when it lacks the capability) and resource
/// templates, and the names of its prompts (`None` likewise). A list that
/// fails is said, and taken as empty: the server's tools work without it.
async fn listed_beside_tools(
    config: &ServerConfig,
    peer: &Peer<RoleClient>,
) -> (
    Option<Arc<[Resource]>>,
    Arc<[ResourceTemplate]>,
    Option<Arc<[ServerPrompt]>>,
) {
    let info = peer.peer_info();
    let capabilities = info.as_ref().map(|info| &info.capabilities);
    let failed = |what: &str, error: ServiceError| {
        config.output.failed(
            &config.name,
            format!("its {what} could not be listed: {error}"),
        );
    };
    let (resources, templates) = match capabilities.and_then(|c| c.resources.as_ref()) {
        None => (None, Arc::default()),
        Some(_) => {
            let resources = list_resources(peer).await.unwrap_or_else(|error| {
                failed("resources", error);
                Vec::new()
            });
            let templates = list_templates(peer).await.unwrap_or_else(|error| {
                failed("resource templates", error);
                Vec::new()
            });
            (Some(resources.into()), templates.into())
        }
    };
    let prompts = match capabilities.and_then(|c| c.prompts.as_ref()) {
        None => None,
        Some(_) => Some(match list_prompts(peer).await {
            Ok(prompts) => prompts.into(),
            Err(error) => {
                failed("prompts", error);
                Arc::default()
            }
        }),
    };
    (resources, templates, prompts)
}
