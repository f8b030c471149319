//! Findings and comparisons, as data for a front end to render: the
//! prompt of an agent as a session gets it ([`agent_prompt`]), who owns
//! each part of it (`dsh prompt --format explain`, [`explain`]), what
//! `dsh check` finds ([`check`]), and two request prefixes compared (`dsh
//! diff`, [`diff`]).

pub mod agent_prompt;
pub mod check;
pub mod diff;
pub mod explain;
pub mod table;
