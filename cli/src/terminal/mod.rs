//! The terminal front end of `dsh run`: the chat and its console.

mod approval;
mod chat;
mod console;
mod questions;
mod tty;

pub(crate) use approval::AskOnTheTerminal;
pub(crate) use chat::Chat;
pub(crate) use console::{Console, out};
