//! Connection and transports: everything between a server's table and an
//! open connection to it, and what comes back on it that is not an
//! answer.
//!
//! - [`connect`]: the connection opened, over stdio or streamable HTTP
//!   (headers, login), `server/discover` first, else `initialize`.
//! - [`spawn`] and [`process`]: a stdio server's process group, started
//!   and stopped, and the stdio transport over its pipes.
//! - [`stderr`]: its stderr, read a line at a time for the host.
//! - [`logging`]: the log level asked for and the server's log messages.
//! - [`listen`]: a 2026-07-28 server's `subscriptions/listen`.
//! - [`watched`]: the transport wrapper that counts `list_changed`
//!   notifications.
//! - [`output`]: what a server says for the person, handed to the host.

pub(crate) mod connect;
pub(crate) mod listen;
pub(crate) mod logging;
pub(crate) mod output;
pub(crate) mod process;
pub(crate) mod spawn;
pub(crate) mod stderr;
pub(crate) mod watched;
