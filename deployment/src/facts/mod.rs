//! What a session brings from outside the binary: the project's
//! instruction files ([`instructions`]), a front end's own prompt
//! ([`client_prompt`]), context attached to a prompt ([`attach`]), and its
//! working directory ([`cwd`]).

pub mod attach;
pub mod client_prompt;
pub mod cwd;
pub mod instructions;
pub mod rules;
