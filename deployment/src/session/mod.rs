//! What happens between opening a session and closing it: the session a
//! front end opens ([`Host::open_session`](crate::host::Host::open_session):
//! new, continued, resumed), and what a person types in it ([`Commands`],
//! [`parse_input`]).

mod input;
mod open;

pub use input::{
    CommandError, Commands, Input, ListedCommand, PromptCall, SlashCommand, parse_input,
};
pub use open::{OpenedSession, Resume};
