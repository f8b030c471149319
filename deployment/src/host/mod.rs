//! [`Host`]: one agent hosted for a front end, and its lifecycle — loaded
//! and checked, its sessions recorded ([`store`]), its trace attached,
//! served with the ending signals ([`signals`]), its servers and children
//! stopped.

mod serve;
pub mod signals;
pub mod store;

pub use serve::{Host, HostOptions};
