//! Approvals and questions: what a server asks of dsh, and who answers.
//!
//! - [`client`]: the client handler that answers the server (roots,
//!   sampling, elicitation, its notifications).
//! - [`asker`]: the host's [`Asker`](crate::Asker), which decides who
//!   answers a server's sampling and elicitation, and the sessions a
//!   request belongs to.
//! - [`sampling`]: sampling bounded per server, call and session.
//! - [`mrtr`]: a 2026-07-28 server's rounds (`input_required`), answered
//!   and sent again.

pub(crate) mod asker;
pub(crate) mod client;
pub(crate) mod mrtr;
pub(crate) mod sampling;
