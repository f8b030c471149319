//! `subscriptions/listen` (MCP 2026-07-28): a server of that version says
//! its lists changed only on a subscription the client opened and asked
//! for them on. dsh opens one where the server offers changes of its
//! tools or prompts (`listChanged` in its capabilities), asking for
//! those it offers, and keeps it open while the server runs.
//!
//! Tool changes on it are read off the transport like a 2025-11-25
//! server's (`Watched`), which wakes the one re-list; prompt changes
//! come through the subscription and list the prompts again.

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{ServerNotification, SubscriptionFilter};
use rmcp::service::{Peer, Subscription};
use tokio_util::sync::CancellationToken;

use crate::ServerOutput;
use crate::resources::prompts::PromptList;

/// The changes `peer`'s server offers to tell (its capabilities'
/// `listChanged`, for tools and prompts); `None` when it offers none.
pub(crate) fn offered(peer: &Peer<RoleClient>) -> Option<SubscriptionFilter> {
    let info = peer.peer_info()?;
    let capabilities = &info.capabilities;
    let tools = (capabilities.tools.as_ref()).is_some_and(|tools| tools.list_changed == Some(true));
    let prompts =
        (capabilities.prompts.as_ref()).is_some_and(|prompts| prompts.list_changed == Some(true));
    let mut filter = SubscriptionFilter::builder();
    if tools {
        filter = filter.tools_list_changed();
    }
    if prompts {
        filter = filter.prompts_list_changed();
    }
    (tools || prompts).then(|| filter.build())
}

/// Opens the subscription for what `filter` asks and keeps it until
/// `stop` (or until the server ends it): the prompts it says changed
/// are listed again. The task that keeps it, which ends once `stop` has
/// ended it at the server. A server that refuses is said to `output`,
/// and its lists are what they were at its start.
pub(crate) async fn listen(
    peer: &Peer<RoleClient>,
    filter: SubscriptionFilter,
    (prompts, stop): (Arc<PromptList>, CancellationToken),
    (server, output): (&str, &ServerOutput),
) -> Option<tokio::task::JoinHandle<()>> {
    match peer.listen(filter).await {
        Ok(subscription) => {
            let peer = peer.clone();
            Some(tokio::spawn(keep(subscription, peer, prompts, stop)))
        }
        Err(error) => {
            output.failed(
                server,
                format!(
                    "it offers to say when its lists change, but `subscriptions/listen` failed: \
                 {error}; its tools and prompts are what they were at its start"
                ),
            );
            None
        }
    }
}

/// Reads the subscription until it ends or `stop` fires, and then ends
/// it at the server (`notifications/cancelled`): a server waits for its
/// open requests before it exits.
async fn keep(
    mut subscription: Subscription,
    peer: Peer<RoleClient>,
    prompts: Arc<PromptList>,
    stop: CancellationToken,
) {
    loop {
        let notification = tokio::select! {
            notification = subscription.next() => notification,
            () = stop.cancelled() => {
                let _ = subscription.cancel().await;
                return;
            }
        };
        match notification {
            Ok(Some(ServerNotification::PromptListChangedNotification(_))) => {
                prompts.relist(&peer).await;
            }
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => return,
        }
    }
}
