//! The tool list: a server's tools as the model sees them, kept current,
//! called, and their results rendered.
//!
//! - [`tool_list`]: a `tools/list` read, paged and bounded.
//! - [`keeping`]: what is listed at a server's start, and the task that
//!   reads its tools again when it says they changed.
//! - [`tool_set`]: the tools as the model sees them now.
//! - [`naming`]: the exposed names (`<server>__<tool>`).
//! - [`annotations`], [`print`](mod@print), [`shown`](mod@shown): how a
//!   front end shows a tool's calls, what a tool says it is, and how a
//!   server's text is shown to a person.
//! - [`section`]: a server's instructions, as its prompt section.
//! - [`call`], [`progress`], [`render`]: a call's round, its progress,
//!   and its result as the model reads it.

pub(crate) mod annotations;
pub(crate) mod call;
pub(crate) mod keeping;
pub(crate) mod naming;
pub(crate) mod print;
pub(crate) mod progress;
pub(crate) mod render;
pub(crate) mod section;
pub(crate) mod shown;
pub(crate) mod tool_list;
pub(crate) mod tool_set;
