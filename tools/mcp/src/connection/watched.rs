//! A transport that takes `notifications/tools/list_changed` as it is
//! read, before rmcp's serve loop would hand it to a task of its own.
//!
//! A server that changes its tools during a call sends the notification
//! before the call's result. The server's tools are re-listed on a task
//! of their own, which may run after the result is back; counting the
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
use tokio::sync::Notify;

/// The `list_changed` notifications read off a transport: how many, and
/// the wake-up of the one task that re-lists the tools.
#[derive(Debug, Default)]
pub(crate) struct Announcements {
    count: AtomicU64,
    /// Holds at most one wake-up: any number of notifications while a
    /// re-list runs make one more re-list, no more.
    wake: Notify,
}

impl Announcements {
    fn announce(&self) {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.wake.notify_one();
    }

    /// How many notifications have been read so far.
    pub(crate) fn count(&self) -> u64 {
        self.count.load(Ordering::SeqCst)
    }

    /// Waits until a notification was read since the last wake-up.
    pub(crate) async fn changed(&self) {
        self.wake.notified().await;
    }
}

/// A transport, and the notifications read off it that the server shares.
/// Those alone, not the server's state, so that this module and `server`
/// do not import each other.
pub(crate) struct Watched<T> {
    pub(crate) inner: T,
    pub(crate) announced: Arc<Announcements>,
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

    /// The next message, but for `list_changed` notifications: those are
    /// counted here and go no further, since the re-list is woken from
    /// here and rmcp would only spend a task on each (a server may send
    /// thousands a second).
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let message = self.inner.receive().await;
            if let Some(JsonRpcMessage::Notification(notification)) = &message
                && matches!(
                    notification.notification,
                    ServerNotification::ToolListChangedNotification(_)
                )
            {
                self.announced.announce();
                continue;
            }
            return message;
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
