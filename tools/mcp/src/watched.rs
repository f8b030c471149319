//! A transport that notices `notifications/tools/list_changed` as it is
//! read, before the serve loop hands it to a task of its own.
//!
//! A server that changes its tools during a call sends the notification
//! before the call's result. The client's handler re-lists the tools on a
//! spawned task, which may run after the result is back; counting the
//! notification here, in the order the messages arrive, lets a call wait
//! for that re-list before it returns, so the next step's assembly has
//! the new tools.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

/// A transport, and the count of `list_changed` notifications read off it
/// that the server shares. The count alone, not the server's state, so
/// that this module and `server` do not import each other.
pub(crate) struct Watched<T> {
    pub(crate) inner: T,
    pub(crate) announced: Arc<AtomicU64>,
}

impl<T> Transport<RoleClient> for Watched<T>
where
    T: Transport<RoleClient> + Send,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if let Some(JsonRpcMessage::Notification(notification)) = &message
            && matches!(
                notification.notification,
                ServerNotification::ToolListChangedNotification(_)
            )
        {
            self.announced.fetch_add(1, Ordering::SeqCst);
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
