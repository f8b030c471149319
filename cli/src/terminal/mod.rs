//! The terminal front end of `dsh run`: the chat, its console, and the
//! person at the terminal.

mod chat;
mod console;
mod person;
mod tty;

pub(crate) use chat::Chat;
pub(crate) use console::{Console, out};
pub(crate) use person::TerminalPerson;
