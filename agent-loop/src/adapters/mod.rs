//! The model adapters: one [`ModelAdapter`](crate::ModelAdapter) for each
//! API dsh speaks, the scripted one for tests and offline runs, and the
//! deployment file's table that picks one ([`AdapterConfig`]).
//!
//! The HTTP adapters differ in their wire formats only. Posting a
//! request, telling a busy API from a failed one, reading a stream of
//! server-sent events or a whole body, retrying with backoff, and
//! stopping on cancellation are one exchange, `http::Exchange`, which
//! each adapter drives with its own `http::Wire`: so a retry rule or a
//! transport error is written once and both APIs get it.

mod anthropic;
mod config;
mod http;
mod openai;
mod scripted;

pub use anthropic::{AnthropicAdapter, AnthropicConfig, CacheTtl};
pub use config::AdapterConfig;
pub use http::ResponseLimit;
pub use openai::{OpenAiAdapter, OpenAiConfig};
pub use scripted::{Script, ScriptedAdapter, ScriptedAnswer, ScriptedToolCall};
