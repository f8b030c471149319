//! The terminal front end of `dsh run`: the chat and its console.

mod chat;
mod console;

pub(crate) use chat::{Chat, NoOneToAsk};
pub(crate) use console::{Console, out};
