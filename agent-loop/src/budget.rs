//! The context budget: how many tokens a model reads at most, when the
//! loop compacts, and how a request's size is known without counting it
//! on every step.
//!
//! A model's context window comes from the deployment
//! (`[adapter.*] context_window = N`), else from [`context_window_for`]'s
//! table of common models; a model in neither has no window, and the loop
//! then compacts only on request. Compaction starts when a request would
//! reach [`compact_at`](ContextBudget::compact_at) of the window (0.85
//! unless configured).
//!
//! Counting a request's tokens costs far more than assembling it (see
//! BENCHMARKS.md), so [`ContextBudget::assess`] avoids it: the size the API
//! reported for the last request ([`Usage::prompt_tokens`](crate::Usage)),
//! plus the bytes of the messages added since — a token is at least one
//! byte — is an upper bound; only when that bound reaches the threshold
//! are the new messages counted, and only when the count does too is the
//! whole request counted, message by message, to compact it.
//!
//! ```
//! use dsh_agent_loop::{ContextBudget, context_window_for};
//!
//! assert_eq!(context_window_for("gpt-4o-2024-08-06"), Some(128_000));
//! assert_eq!(context_window_for("anthropic/claude-sonnet-4-5"), Some(200_000));
//! assert_eq!(context_window_for("my-local-model"), None);
//!
//! let budget = ContextBudget::for_model("gpt-4o", None, None);
//! assert_eq!(budget.window(), Some(128_000));
//! assert_eq!(budget.threshold(), Some(108_800));
//! ```

use std::fmt;
use std::sync::Arc;

use dsh_system_prompt::ToolSchema;
use serde::{Deserialize, Deserializer, Serialize};

use crate::{Message, Tokenizer};

/// The context windows of common models, in tokens of input: each entry
/// matches a model name that is the prefix itself or the prefix followed by
/// `-` (a date, a size), after any `provider/` in front; the longest
/// prefix wins, so `gpt-4.1-mini` is not `gpt-4.1`'s and `gpt-4o` is not
/// `gpt-4`'s.
///
/// Where a provider states a smaller input limit than the window (the
/// `gpt-5` family: 400,000 in all, at most 272,000 of input), the input
/// limit is the entry: it is what a request must fit.
const CONTEXT_WINDOWS: &[(&str, u64)] = &[
    // OpenAI.
    ("gpt-3.5-turbo", 16_385),
    ("gpt-4", 8_192),
    ("gpt-4-32k", 32_768),
    ("gpt-4-turbo", 128_000),
    ("gpt-4o", 128_000),
    ("gpt-4o-mini", 128_000),
    ("chatgpt-4o", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4.1-mini", 1_047_576),
    ("gpt-4.1-nano", 1_047_576),
    ("gpt-5", 272_000),
    ("gpt-5-mini", 272_000),
    ("gpt-5-nano", 272_000),
    ("gpt-5-codex", 272_000),
    ("gpt-5-chat", 128_000),
    ("o1", 200_000),
    ("o1-mini", 128_000),
    ("o1-pro", 200_000),
    ("o3", 200_000),
    ("o3-mini", 200_000),
    ("o3-pro", 200_000),
    ("o4-mini", 200_000),
    // Anthropic: 200,000 for every model of 3.5 to 4.5 (the 1M window of
    // some is a beta a request must ask for).
    ("claude-3-5-haiku", 200_000),
    ("claude-3-5-sonnet", 200_000),
    ("claude-3-7-sonnet", 200_000),
    ("claude-3-haiku", 200_000),
    ("claude-3-opus", 200_000),
    ("claude-haiku-4-5", 200_000),
    ("claude-opus-4", 200_000),
    ("claude-opus-4-1", 200_000),
    ("claude-opus-4-5", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-sonnet-4-5", 200_000),
];

/// The context window of `model` from the table of common models, `None`
/// for a model it does not know.
pub fn context_window_for(model: &str) -> Option<u64> {
    let name = model.rsplit('/').next().unwrap_or(model);
    CONTEXT_WINDOWS
        .iter()
        .filter(|(prefix, _)| {
            name.strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
        })
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|&(_, window)| window)
}

/// Where a budget's window came from, for the line that reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WindowSource {
    /// `context_window` in the adapter's table.
    Configured,
    /// The table of common models ([`context_window_for`]).
    Model,
    /// Neither: the model is unknown and no window is configured, so the
    /// loop compacts only on request.
    Unknown,
}

/// The fraction of the window at which compaction starts: more than 0,
/// at most 1. Deserialized from a number (`compact_at = 0.85`), checked.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CompactAt(f64);

impl CompactAt {
    /// 0.85: room for the answer and a few more steps before the window
    /// is full, without compacting early.
    pub const DEFAULT: Self = Self(0.85);

    /// `fraction`, when it is more than 0 and at most 1.
    pub fn new(fraction: f64) -> Option<Self> {
        (fraction > 0.0 && fraction <= 1.0).then_some(Self(fraction))
    }

    /// The fraction.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl Default for CompactAt {
    fn default() -> Self {
        Self::DEFAULT
    }
}

// Never NaN (`new` refuses it), so equality is total.
impl PartialEq for CompactAt {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for CompactAt {}

// Written by hand, as `Deserialize` is: the schema states the range
// `CompactAt::new` accepts, so an editor flags `compact_at = 2` as dsh does.
impl schemars::JsonSchema for CompactAt {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CompactAt".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "The fraction of the context window at which the loop compacts: more than 0, at most 1.",
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": 1,
        })
    }
}

impl<'de> Deserialize<'de> for CompactAt {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let fraction = f64::deserialize(deserializer)?;
        Self::new(fraction).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "`compact_at = {fraction}` is not a fraction of the context window; \
                 write a number more than 0 and at most 1, such as 0.85"
            ))
        })
    }
}

/// One agent's context budget: its model's window, when compaction
/// starts, and the tokenizer its requests are counted with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextBudget {
    window: Option<u64>,
    source: WindowSource,
    compact_at: CompactAt,
    tokenizer: Tokenizer,
}

/// What the API or a count last said a session's request took: the
/// request's size in tokens, how many messages it carried, and a print
/// of its prefix (system prompt bytes, tool count), which invalidates the
/// size when it changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownSize {
    /// The request's tokens.
    pub tokens: u64,
    /// How many messages it carried.
    pub messages: usize,
    /// `system.len()` and the number of tools of that request.
    pub prefix: (usize, usize),
}

/// [`ContextBudget::assess`]'s verdict on one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Assessment {
    /// No window: nothing to assess.
    Unbounded,
    /// The upper bound (known size plus the new messages' bytes) is below
    /// the threshold: nothing was counted.
    FarBelow {
        /// The upper bound, in tokens.
        bound: u64,
    },
    /// Counted, and below the threshold.
    Below {
        /// The request's tokens as counted.
        tokens: u64,
    },
    /// Counted, and at or over the threshold: compact before sending.
    Over {
        /// The request's tokens as counted.
        tokens: u64,
    },
}

/// Tokens of framing a message costs beyond its text (role, separators),
/// as OpenAI documents for its chat format; close for others.
pub const MESSAGE_FRAMING_TOKENS: u64 = 4;

/// What one image (a user's, or a tool's in its result) is counted as:
/// the most Anthropic's
/// vision charges for one (about 1,600 tokens); OpenAI's detail levels
/// stay under it for images of usual sizes. An estimate: neither API
/// says before the request.
pub const IMAGE_TOKENS: u64 = 1_600;

impl ContextBudget {
    /// The budget of an agent on `model`: `window` if the deployment sets
    /// one, else the table's ([`context_window_for`]); `compact_at`, else
    /// [`CompactAt::DEFAULT`]. Tokens are counted with the tokenizer the
    /// model selects ([`with_tokenizer`](Self::with_tokenizer) sets
    /// another).
    pub fn for_model(model: &str, window: Option<u64>, compact_at: Option<CompactAt>) -> Self {
        let (window, source) = match (window, context_window_for(model)) {
            (Some(window), _) => (Some(window), WindowSource::Configured),
            (None, Some(window)) => (Some(window), WindowSource::Model),
            (None, None) => (None, WindowSource::Unknown),
        };
        Self {
            window,
            source,
            compact_at: compact_at.unwrap_or_default(),
            tokenizer: Tokenizer::for_model(model),
        }
    }

    /// Counts with `tokenizer`.
    pub fn with_tokenizer(mut self, tokenizer: Tokenizer) -> Self {
        self.tokenizer = tokenizer;
        self
    }

    /// The model's context window, if known.
    pub fn window(&self) -> Option<u64> {
        self.window
    }

    /// Where the window came from.
    pub fn source(&self) -> WindowSource {
        self.source
    }

    /// The fraction of the window at which compaction starts.
    pub fn compact_at(&self) -> CompactAt {
        self.compact_at
    }

    /// The tokenizer requests are counted with.
    pub fn tokenizer(&self) -> Tokenizer {
        self.tokenizer
    }

    /// The size, in tokens, at which a request is compacted before it is
    /// sent: `compact_at` of the window.
    pub fn threshold(&self) -> Option<u64> {
        // Windows are far below 2^52, so the product is exact enough.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "a window of at most millions of tokens times a fraction in (0, 1]"
        )]
        self.window
            .map(|window| (window as f64 * self.compact_at.get()) as u64)
    }

    /// What compaction aims at: 60% of the threshold, so the next steps
    /// have room before it is reached again.
    pub fn target(&self) -> Option<u64> {
        self.threshold().map(|threshold| threshold / 10 * 6)
    }

    /// Whether a request of `system`, `tools` and `messages` must be
    /// compacted, counting only what the known size does not cover, and
    /// only when the bound without counting could reach the threshold.
    /// `known` is what the API (or a count) said of an earlier request
    /// whose messages are the first `known.messages` of these.
    pub fn assess(
        &self,
        known: Option<KnownSize>,
        system: &str,
        tools: &[Arc<ToolSchema>],
        messages: &[Message],
    ) -> Assessment {
        let Some(threshold) = self.threshold() else {
            return Assessment::Unbounded;
        };
        let prefix = (system.len(), tools.len());
        let known =
            known.filter(|known| known.prefix == prefix && known.messages <= messages.len());
        let (base, new) = match known {
            Some(known) => (known.tokens, &messages[known.messages..]),
            None => (self.tokenizer_free_bound(system, tools), messages),
        };
        let bound = base + new.iter().map(message_bytes).sum::<u64>();
        if bound < threshold {
            return Assessment::FarBelow { bound };
        }
        let tokens = match known {
            Some(known) => known.tokens + self.count_messages(new),
            None => self.count_request(system, tools, messages),
        };
        if tokens < threshold {
            Assessment::Below { tokens }
        } else {
            Assessment::Over { tokens }
        }
    }

    /// The bytes of the prefix: an upper bound of its tokens.
    fn tokenizer_free_bound(&self, system: &str, tools: &[Arc<ToolSchema>]) -> u64 {
        len(system) + tools.iter().map(|tool| tool_bytes(tool)).sum::<u64>()
    }

    /// The tokens of a whole request: system prompt, tool schemas (their
    /// JSON), and messages with their framing.
    pub fn count_request(
        &self,
        system: &str,
        tools: &[Arc<ToolSchema>],
        messages: &[Message],
    ) -> u64 {
        self.count_prefix(system, tools) + self.count_messages(messages)
    }

    /// The tokens of the system prompt and the tool schemas.
    pub fn count_prefix(&self, system: &str, tools: &[Arc<ToolSchema>]) -> u64 {
        let tools: u64 = tools
            .iter()
            .map(|tool| self.count(&serde_json::to_string(&**tool).unwrap_or_default()))
            .sum();
        self.count(system) + tools
    }

    /// The tokens of `messages`, with their framing.
    pub fn count_messages(&self, messages: &[Message]) -> u64 {
        messages
            .iter()
            .map(|message| self.count_message(message))
            .sum()
    }

    /// The tokens of one message, with its framing.
    pub fn count_message(&self, message: &Message) -> u64 {
        let text = match message {
            Message::User { text } => self.count(text),
            Message::Tool { text, images, .. } => self.count(text) + images_tokens(images),
            Message::UserImage { .. } => IMAGE_TOKENS,
            Message::Assistant {
                text, tool_calls, ..
            } => {
                self.count(text)
                    + tool_calls
                        .iter()
                        .map(|call| self.count(&call.name) + self.count(&call.arguments))
                        .sum::<u64>()
            }
        };
        text + MESSAGE_FRAMING_TOKENS
    }

    fn count(&self, text: &str) -> u64 {
        u64::try_from(self.tokenizer.count(text)).unwrap_or(u64::MAX)
    }
}

impl fmt::Display for ContextBudget {
    /// `the 128000-token context window of the model (compacting at 85%)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let percent = (self.compact_at.get() * 100.0).round();
        match (self.window, self.source) {
            (Some(window), WindowSource::Configured) => write!(
                f,
                "the configured {window}-token context window (compacting at {percent}%)"
            ),
            (Some(window), _) => write!(
                f,
                "the model's {window}-token context window (compacting at {percent}%)"
            ),
            (None, _) => f.write_str("no known context window"),
        }
    }
}

/// The tokens of a tool result's images: [`IMAGE_TOKENS`] each.
fn images_tokens(images: &[crate::Image]) -> u64 {
    IMAGE_TOKENS.saturating_mul(u64::try_from(images.len()).unwrap_or(u64::MAX))
}

fn len(text: &str) -> u64 {
    u64::try_from(text.len()).unwrap_or(u64::MAX)
}

/// An upper bound of a tool schema's tokens without serializing it: its
/// name, description and parameters' JSON are most of it; the rest is a
/// few dozen bytes of keys.
fn tool_bytes(tool: &ToolSchema) -> u64 {
    len(&tool.name) + len(&tool.description) + len(&tool.parameters.to_string()) + 64
}

/// An upper bound of one message's tokens: its bytes, plus its framing.
fn message_bytes(message: &Message) -> u64 {
    let text = match message {
        Message::User { text } => len(text),
        Message::Tool { text, images, .. } => len(text) + images_tokens(images) * 4,
        // The image's bytes bound what its tokens can be; what the API
        // counts is far less (a few hundred to some thousands of tokens).
        Message::UserImage { .. } => IMAGE_TOKENS * 4,
        Message::Assistant {
            text, tool_calls, ..
        } => {
            len(text)
                + tool_calls
                    .iter()
                    .map(|call| len(&call.name) + len(&call.arguments))
                    .sum::<u64>()
        }
    };
    text + MESSAGE_FRAMING_TOKENS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_at_a_boundary_wins() {
        assert_eq!(context_window_for("gpt-4"), Some(8_192));
        assert_eq!(context_window_for("gpt-4-0613"), Some(8_192));
        assert_eq!(context_window_for("gpt-4o"), Some(128_000));
        assert_eq!(
            context_window_for("gpt-4.1-mini-2025-04-14"),
            Some(1_047_576)
        );
        assert_eq!(context_window_for("gpt-5-chat-latest"), Some(128_000));
        assert_eq!(context_window_for("gpt-5"), Some(272_000));
        assert_eq!(context_window_for("o1-mini"), Some(128_000));
        assert_eq!(context_window_for("o3"), Some(200_000));
        assert_eq!(context_window_for("o30"), None);
        assert_eq!(
            context_window_for("claude-opus-4-1-20250805"),
            Some(200_000)
        );
        assert_eq!(
            context_window_for("claude-3-5-sonnet-latest"),
            Some(200_000)
        );
        assert_eq!(context_window_for("openai/gpt-4o-mini"), Some(128_000));
        assert_eq!(context_window_for("dsh-scripted"), None);
    }

    #[test]
    fn a_configured_window_beats_the_table() {
        let budget = ContextBudget::for_model("gpt-4o", Some(1_000), CompactAt::new(0.5));
        assert_eq!(budget.window(), Some(1_000));
        assert_eq!(budget.source(), WindowSource::Configured);
        assert_eq!(budget.threshold(), Some(500));
        assert_eq!(budget.target(), Some(300));
        let unknown = ContextBudget::for_model("local", None, None);
        assert_eq!(unknown.threshold(), None);
        assert_eq!(unknown.assess(None, "", &[], &[]), Assessment::Unbounded);
    }

    #[test]
    fn compact_at_must_be_a_fraction() {
        assert!(CompactAt::new(0.0).is_none());
        assert!(CompactAt::new(1.5).is_none());
        assert!(CompactAt::new(f64::NAN).is_none());
        assert_eq!(CompactAt::new(1.0).map(CompactAt::get), Some(1.0));
        #[derive(Debug, Deserialize)]
        struct Table {
            #[allow(dead_code, reason = "only its parse is tested")]
            compact_at: CompactAt,
        }
        let error = toml::from_str::<Table>("compact_at = 85")
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
        assert!(error.contains("more than 0 and at most 1"), "{error}");
    }

    #[test]
    fn far_below_counts_nothing_and_near_counts_only_what_is_new() {
        let budget = ContextBudget::for_model("gpt-4o", Some(1_000), None);
        let messages = vec![Message::User {
            text: "hello".into(),
        }];
        // 5 bytes + framing: far below 850 without a tokenizer.
        assert!(matches!(
            budget.assess(None, "sys", &[], &messages),
            Assessment::FarBelow { bound: 12 }
        ));
        // A known size near the threshold: the new message is counted.
        let known = KnownSize {
            tokens: 846,
            messages: 0,
            prefix: (3, 0),
        };
        assert_eq!(
            budget.assess(Some(known), "sys", &[], &messages),
            Assessment::Over { tokens: 851 }
        );
        // A known size of another prefix is not used.
        let stale = KnownSize {
            prefix: (4, 0),
            ..known
        };
        assert!(matches!(
            budget.assess(Some(stale), "sys", &[], &messages),
            Assessment::FarBelow { .. }
        ));
    }
}
