//! The client's side of a connection: what dsh says it is, and what it
//! answers a server's requests with — the roots a server may work in, and
//! through the host's [`Asker`](crate::Asker), sampling and elicitation.
//!
//! What a server says of a running call (`notifications/progress`) goes
//! to the call's display; its log messages (`notifications/message`) to
//! dsh's stderr, with its name.
//!
//! A `list_changed` notification of tools is not handled here but where
//! it is read (`Watched`), which wakes the one task that re-lists them.

// rmcp marks roots deprecated (SEP-2577, for the protocol after
// 2025-11-25); the version dsh speaks has them, and servers of today
// (`server-filesystem`) ask for them.
#![allow(
    deprecated,
    reason = "rmcp marks roots and logging deprecated; 2025-11-25 has them"
)]

use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::RwLock;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    FormElicitationCapability, Implementation, ListRootsResult, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProtocolVersion, Root, RootsCapabilities, SamplingCapability,
    UrlElicitationCapability,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};

use crate::questions::asker::{self, Callers, ElicitKind, Origin, SharedAsker};
use crate::questions::sampling::SamplingGate;
use crate::resources::prompts::PromptList;
use crate::tools::progress::CallProgress;
use crate::{McpLogLevel, ServerLine, ServerOutput};
use rmcp::{ClientHandler, ErrorData, RoleClient};

/// The directories a server may work in, as `roots/list` answers them:
/// shared by the connection's handler, which answers, and the server,
/// which changes them.
#[derive(Clone, Debug, Default)]
pub(crate) struct Roots {
    dirs: Arc<RwLock<Vec<PathBuf>>>,
}

impl Roots {
    pub(crate) fn new(dirs: Vec<PathBuf>) -> Self {
        Self {
            dirs: Arc::new(RwLock::new(dirs)),
        }
    }

    /// The directories now.
    pub(crate) fn dirs(&self) -> Vec<PathBuf> {
        self.dirs.read().clone()
    }

    /// Puts `dirs` in place; whether they differ from what was there.
    pub(crate) fn replace(&self, dirs: Vec<PathBuf>) -> bool {
        let mut current = self.dirs.write();
        if *current == dirs {
            return false;
        }
        *current = dirs;
        true
    }

    /// The roots as the protocol has them: a `file://` URI each (a
    /// relative path, which no URI can name, is left out), named by the
    /// directory's last component.
    pub(crate) fn listed(&self) -> Vec<Root> {
        self.dirs
            .read()
            .iter()
            .filter_map(|dir| {
                let uri = reqwest::Url::from_directory_path(dir).ok()?;
                // `file:///work/` names the directory as well as
                // `file:///work`, which is how roots are usually written;
                // `file:///` keeps its slash.
                let uri = match uri.as_str() {
                    "file:///" => "file:///",
                    uri => uri.trim_end_matches('/'),
                };
                let root = Root::new(uri);
                Some(match dir.file_name() {
                    Some(name) => root.with_name(name.to_string_lossy()),
                    None => root,
                })
            })
            .collect()
    }

    /// Tells a server its roots changed (`notifications/roots/list_changed`);
    /// it asks `roots/list` again when it cares.
    pub(crate) async fn announce(peer: &Peer<RoleClient>) -> bool {
        peer.notify_roots_list_changed().await.is_ok()
    }
}

/// What dsh is to a server: its name, the protocol version it speaks
/// after `initialize`, and the capabilities it has (roots, whose list
/// changes). It also answers the questions of a 2026-07-28 server's
/// rounds (`crate::questions::mrtr`), as it answers a 2025-11-25 server's requests.
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) roots: Roots,
    /// The server's prompts, listed again when it says they changed.
    pub(crate) prompts: Arc<PromptList>,
    /// The server's name, for what is said of it.
    pub(crate) server: Arc<str>,
    /// Who answers its sampling and elicitation requests; no one when
    /// `None`, and neither is advertised.
    pub(crate) asker: Option<SharedAsker>,
    /// The sessions it works for.
    pub(crate) callers: Callers,
    /// The displays of the server's running calls, by progress token.
    pub(crate) progress: Arc<CallProgress>,
    /// The least severe of its log messages shown.
    pub(crate) log_level: McpLogLevel,
    /// Where its log messages, and the questions declined, are said.
    pub(crate) output: ServerOutput,
    /// Its sampling's bounds, and what it spent.
    pub(crate) sampling: Arc<SamplingGate>,
}

impl Handler {
    fn origin(&self) -> Origin {
        Origin {
            server: self.server.to_string(),
            session: self.callers.current(),
            call: self.callers.call(),
        }
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        let mut roots = RootsCapabilities::default();
        roots.list_changed = Some(true);
        capabilities.roots = Some(roots);
        if let Some(asker) = &self.asker {
            if asker.0.samples() {
                capabilities.sampling = Some(SamplingCapability::default());
            }
            let elicits = asker.0.elicits();
            if elicits.form || elicits.url {
                let mut elicitation = ElicitationCapability::default();
                elicitation.form = elicits.form.then(FormElicitationCapability::default);
                elicitation.url = elicits.url.then(UrlElicitationCapability::default);
                capabilities.elicitation = Some(elicitation);
            }
        }
        let mut config = ClientConfig::new(
            capabilities,
            Implementation::new("dsh", env!("CARGO_PKG_VERSION")),
        );
        // The version of `initialize`, for a server that has no
        // `server/discover` (2026-07-28 is found by that, `server::lifecycle`).
        config.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        config
    }

    async fn on_prompt_list_changed(&self, context: NotificationContext<RoleClient>) {
        // Not here: rmcp may read the next message only once this
        // returns, and the list's answer is one.
        let prompts = Arc::clone(&self.prompts);
        tokio::spawn(async move { prompts.relist(&context.peer).await });
    }

    /// A message from the person's model (`sampling/createMessage`),
    /// answered by the asker, which asks the person first; refused
    /// (code `-1`, the specification's for a rejected request) with no
    /// asker, while calls of two sessions run (whose person to ask is
    /// not known), past the server's sampling limits (said to the person
    /// once), or when no one allows it. One request of the server is
    /// answered at a time; the others wait their turn.
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let Some(asker) = self.asker.as_ref().filter(|asker| asker.0.samples()) else {
            return Err(asker::sampling_error(asker::AskError::Refused(
                "dsh answers no sampling requests here (it did not advertise sampling)".to_owned(),
            )));
        };
        if self.callers.ambiguous() {
            return Err(asker::sampling_error(asker::AskError::Refused(format!(
                "MCP server `{}` asked to use the model while it serves calls of more than \
                 one session, and dsh cannot tell which session's user to ask; ask during \
                 one session's call alone",
                self.server
            ))));
        }
        let request = asker::sampling_request(params, self.origin());
        if let Err(over) = self.sampling.admit(&request.origin, request.max_tokens) {
            if over.first {
                asker.0.refused(&request.origin, &over.why);
            }
            return Err(asker::sampling_error(asker::AskError::Refused(over.why)));
        }
        // The server may cancel (`notifications/cancelled`), and the call
        // it serves be cancelled: the question and the model's answer are
        // dropped, waiting for their turn or not.
        let call = self.callers.cancel();
        let sampled = tokio::select! {
            sampled = async {
                let _turn = self.sampling.turn().await;
                asker.0.sample(request).await
            } => sampled,
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("the server cancelled the request", None));
            }
            () = call.cancelled() => {
                return Err(ErrorData::internal_error("the call it served was cancelled", None));
            }
        };
        match sampled {
            Ok(sampled) => Ok(asker::message_result(sampled)),
            Err(error) => Err(asker::sampling_error(error)),
        }
    }

    /// A question for the person (`elicitation/create`), put to them by
    /// the asker when it answers its kind (a form, a URL). Otherwise it
    /// is declined, the answer the protocol has for it — as it is while
    /// calls of two sessions run (whom to ask is not known) — and said to
    /// the host's [`ServerOutput`] with the server's message (escaped,
    /// cut), so the person learns what the server wanted.
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let message = match &request {
            ElicitRequestParams::FormElicitationParams { message, .. }
            | ElicitRequestParams::UrlElicitationParams { message, .. } => message.clone(),
            _ => String::new(),
        };
        let elicitation = asker::elicitation(request, self.origin());
        let ambiguous = self.callers.ambiguous();
        let why = if ambiguous {
            "it serves calls of more than one session: whom to ask is not known"
        } else if self.asker.is_some() && elicitation.is_none() {
            "dsh cannot read it: a kind of question or a form it does not know"
        } else {
            "no one here answers it"
        };
        let asker = self.asker.as_ref().filter(|_| !ambiguous);
        if let (Some(asker), Some(elicitation)) = (asker, elicitation) {
            let elicits = asker.0.elicits();
            let answers = match elicitation.kind {
                ElicitKind::Form { .. } => elicits.form,
                ElicitKind::Url { .. } => elicits.url,
            };
            if answers {
                let call = self.callers.cancel();
                let answer = tokio::select! {
                    answer = asker.0.elicit(elicitation) => answer,
                    () = context.ct.cancelled() => crate::ElicitAnswer::Cancel,
                    () = call.cancelled() => crate::ElicitAnswer::Cancel,
                };
                return Ok(asker::elicit_result(answer));
            }
        }
        (self.output).say(ServerLine::declined(&*self.server, why, &message));
        Ok(ElicitResult::new(ElicitationAction::Decline))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.report(&params);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(said) = crate::connection::logging::log_line(&params, self.log_level) {
            self.output.said(&self.server, said);
        }
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(self.roots.listed()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_file_uris_named_by_their_directory() {
        let roots = Roots::new(vec![
            PathBuf::from("/work/my project"),
            PathBuf::from("relative/dir"),
            PathBuf::from("/"),
        ]);
        let listed: Vec<(String, Option<String>)> = roots
            .listed()
            .into_iter()
            .map(|root| (root.uri, root.name))
            .collect();
        assert_eq!(
            listed,
            vec![
                (
                    "file:///work/my%20project".to_owned(),
                    Some("my project".to_owned())
                ),
                ("file:///".to_owned(), None),
            ]
        );
    }

    #[test]
    fn without_an_asker_only_roots_are_advertised() {
        let handler = Handler {
            roots: Roots::default(),
            prompts: Arc::new(PromptList::new(
                "docs",
                std::time::Duration::from_secs(1),
                ServerOutput::default(),
            )),
            server: "docs".into(),
            asker: None,
            callers: Callers::default(),
            progress: Arc::default(),
            log_level: McpLogLevel::default(),
            output: ServerOutput::default(),
            sampling: Arc::new(SamplingGate::new(crate::SamplingLimits::default())),
        };
        let capabilities = handler.get_info().capabilities;
        assert!(capabilities.roots.is_some());
        assert!(capabilities.sampling.is_none() && capabilities.elicitation.is_none());
    }

    /// Answers sampling and forms, never URLs.
    struct FormsOnly;

    #[async_trait::async_trait]
    impl crate::Asker for FormsOnly {
        fn samples(&self) -> bool {
            true
        }
        fn elicits(&self) -> crate::Elicits {
            crate::Elicits {
                form: true,
                url: false,
            }
        }
        async fn sample(
            &self,
            _request: crate::SamplingRequest,
        ) -> Result<crate::Sampled, crate::AskError> {
            Err(crate::AskError::Refused("no".into()))
        }
        async fn elicit(&self, _request: crate::Elicitation) -> crate::ElicitAnswer {
            crate::ElicitAnswer::Decline
        }
    }

    #[test]
    fn an_asker_advertises_what_it_answers() {
        let handler = Handler {
            roots: Roots::default(),
            prompts: Arc::new(PromptList::new(
                "docs",
                std::time::Duration::from_secs(1),
                ServerOutput::default(),
            )),
            server: "docs".into(),
            asker: Some(SharedAsker(Arc::new(FormsOnly))),
            callers: Callers::default(),
            progress: Arc::default(),
            log_level: McpLogLevel::default(),
            output: ServerOutput::default(),
            sampling: Arc::new(SamplingGate::new(crate::SamplingLimits::default())),
        };
        let capabilities = handler.get_info().capabilities;
        assert!(capabilities.sampling.is_some());
        let elicitation = capabilities.elicitation.expect("elicitation advertised");
        assert!(elicitation.form.is_some() && elicitation.url.is_none());
    }

    #[test]
    fn replacing_the_roots_says_whether_they_changed() {
        let roots = Roots::new(vec![PathBuf::from("/a")]);
        assert!(!roots.replace(vec![PathBuf::from("/a")]));
        assert!(roots.replace(vec![PathBuf::from("/a"), PathBuf::from("/b")]));
        assert_eq!(roots.dirs().len(), 2);
    }
}
