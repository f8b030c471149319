//! Where two request prefixes part, and what that costs a provider's
//! prompt cache: the tokens before the first differing byte, which a
//! cache warmed by the old prefix still serves, and those after it, which
//! it no longer does — per request, and for a session of N requests, on
//! Anthropic's and OpenAI's published cached-token prices (an estimate).
//!
//! The prefix is measured as [`canonical_request`] states it (the system
//! prompt, then each tool's canonical JSON), and the first differing byte
//! is found as `dsh run --trace` finds it between two requests
//! ([`shared_prefix`]).

use std::str::FromStr;

use dsh_agent_loop::Tokenizer;
use dsh_system_prompt::suggestion::closest;
use dsh_system_prompt::template::quoted_list;
use serde::{Serialize, Serializer};

use super::prefix::Prefix;
use crate::measure::canonical_request::{self, PartKind};
use crate::measure::tokens::Size;
use crate::measure::trace::{CountedPart, shared_prefix};
use crate::problem::Problem;

/// A price, as a multiple of the model's base input price, in hundredths
/// (`10` is 0.1×): exact arithmetic on token counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Multiple(pub u64);

impl Multiple {
    /// The multiple as a number (`0.1`).
    pub(crate) fn value(self) -> f64 {
        self.0 as f64 / 100.0
    }
}

impl Serialize for Multiple {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.value())
    }
}

/// A provider's prices for a prompt cache, as multiples of its base input
/// price.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CachePricing {
    /// Whose prices, and for which models.
    pub name: &'static str,
    /// What an input token read from the cache costs.
    pub cache_read: Multiple,
    /// What an input token not read from the cache costs: the base price,
    /// or more where writing it to the cache costs more.
    pub cache_write: Multiple,
}

/// Anthropic's prompt caching: a cache read costs 0.1× the base input
/// price, a write to the 5-minute cache 1.25× (the 1-hour cache's 2×).
/// Source: Anthropic's "Prompt caching" documentation, "Pricing"
/// (docs.anthropic.com/en/docs/build-with-claude/prompt-caching).
pub const ANTHROPIC: CachePricing = CachePricing {
    name: "Anthropic, 5-minute cache",
    cache_read: Multiple(10),
    cache_write: Multiple(125),
};

/// OpenAI's prompt caching for gpt-4o-class models (gpt-4o, gpt-4.1, the
/// o-series): cached input tokens at 0.5× the input price; no charge for
/// writing. Source: openai.com/api/pricing ("Cached input") and the
/// "Prompt caching" guide (platform.openai.com/docs/guides/prompt-caching).
pub const OPENAI_GPT_4O: CachePricing = CachePricing {
    name: "OpenAI, gpt-4o class",
    cache_read: Multiple(50),
    cache_write: Multiple(100),
};

/// OpenAI's prompt caching for gpt-5-class models: cached input tokens
/// at 0.1× the input price; no charge for writing. Source:
/// openai.com/api/pricing ("Cached input").
pub const OPENAI_GPT_5: CachePricing = CachePricing {
    name: "OpenAI, gpt-5 class",
    cache_read: Multiple(10),
    cache_write: Multiple(100),
};

/// The prices an estimate is given on, in the order reports show them.
pub const PRICINGS: [CachePricing; 3] = [ANTHROPIC, OPENAI_GPT_4O, OPENAI_GPT_5];

/// Where the new prefix parts from the old one, and what it costs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CacheBreak {
    /// The first byte where the two prefixes differ, from the prefix's
    /// start (the system prompt's first byte).
    pub byte: usize,
    /// Whether it is in the system prompt or in the tools.
    pub part: PartKind,
    /// In the system prompt: the new side's section the byte falls in (or,
    /// between two sections, the one after it); the old side's when the
    /// new prompt ends there.
    pub section: Option<String>,
    /// In the tools: the new side's tool the byte falls in; the old
    /// side's when the new tools end there.
    pub tool: Option<String>,
    /// The prefix before the byte: what a cache warmed by the old prefix
    /// still serves.
    pub kept: Size,
    /// The new prefix from the byte on: what it no longer serves.
    pub lost: Size,
    /// What that costs, estimated.
    pub estimate: CacheEstimate,
}

/// What a cache break costs, in base-price input tokens, on each
/// provider's prices — an estimate: it counts the prefix alone (no
/// conversation), with this dsh's tokenizer, and takes a cache warmed by
/// the old prefix when the session starts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CacheEstimate {
    /// How many requests a session has (`--requests`).
    pub requests: u32,
    /// The estimate on each provider's prices.
    pub pricings: Vec<PricedBreak>,
}

/// A cache break on one provider's prices.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PricedBreak {
    /// The prices.
    pub pricing: CachePricing,
    /// The prefix of the first request after the change: the old one all
    /// read from the cache, the new one read up to the break and written
    /// (or paid in full) after it.
    pub first_request: Cost,
    /// The prefixes of a session's requests: the old ones all read from
    /// the cache; the new ones the first request's, then the whole new
    /// prefix read from the cache.
    pub session: Cost,
}

/// A cost in base-price input tokens, before and after the change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Cost {
    /// With the old prefix.
    pub old: Multiple,
    /// With the new prefix.
    pub new: Multiple,
}

/// Where `new` parts from `old`, counted with `tokenizer`; `None` when
/// the two prefixes are the same, byte for byte.
pub(super) fn cache_break(
    old: &Prefix,
    new: &Prefix,
    tokenizer: Tokenizer,
    requests: u32,
) -> Option<CacheBreak> {
    let (old_parts, new_parts) = (counted_parts(old), counted_parts(new));
    let shared = shared_prefix(&old_parts, &new_parts, Some(tokenizer));
    // A new prefix that only adds to the old one parts where the old ends.
    let (index, part) = match shared.broke_at {
        Some(broke_at) => broke_at,
        None => {
            let added = new_parts.get(old_parts.len())?;
            (old_parts.len(), added.part.kind)
        }
    };
    let (section, tool) = match part {
        PartKind::SystemPrompt => (
            section_at(new, shared.bytes).or(section_at(old, shared.bytes)),
            None,
        ),
        _ => {
            let at = index.saturating_sub(1);
            let name = |prefix: &Prefix| prefix.tools.get(at).map(|tool| tool.name.clone());
            (None, name(new).or_else(|| name(old)))
        }
    };
    let (old_total, new_total) = (total(old), total(new));
    let kept = Size {
        bytes: shared.bytes,
        tokens: shared.tokens,
    };
    let lost = Size {
        bytes: new_total.bytes.saturating_sub(kept.bytes),
        tokens: new_total.tokens.saturating_sub(kept.tokens),
    };
    let estimate = CacheEstimate {
        requests,
        pricings: (PRICINGS.iter())
            .map(|pricing| {
                priced(
                    *pricing,
                    old_total.tokens,
                    kept.tokens,
                    lost.tokens,
                    requests,
                )
            })
            .collect(),
    };
    Some(CacheBreak {
        byte: shared.bytes,
        part,
        section,
        tool,
        kept,
        lost,
        estimate,
    })
}

/// The prefix's canonical parts (no messages), each with its tokens.
fn counted_parts(prefix: &Prefix) -> Vec<CountedPart> {
    let parts = canonical_request::parts(&prefix.system_prompt, &prefix.tool_schemas(), &[]);
    let tokens =
        std::iter::once(prefix.system_tokens).chain(prefix.tools.iter().map(|tool| tool.tokens));
    (parts.into_iter().zip(tokens))
        .map(|(part, tokens)| CountedPart { part, tokens })
        .collect()
}

/// The whole prefix's bytes and tokens.
pub(super) fn total(prefix: &Prefix) -> Size {
    let (system, tools) = (prefix.system_size(), prefix.tools_size());
    Size {
        bytes: system.bytes + tools.bytes,
        tokens: system.tokens + tools.tokens,
    }
}

/// The section of `prefix` that byte `at` of its system prompt falls in,
/// or the first after it (`at` in a separator); `None` past the last.
fn section_at(prefix: &Prefix, at: usize) -> Option<String> {
    (prefix.sections.iter())
        .find(|section| at < section.end || (at == section.start && section.start == section.end))
        .map(|section| section.name.clone())
}

/// The costs of a break on `pricing`: `old` tokens in the old prefix,
/// `kept` and `lost` tokens of the new one, in a session of `requests`.
fn priced(
    pricing: CachePricing,
    old: usize,
    kept: usize,
    lost: usize,
    requests: u32,
) -> PricedBreak {
    let (read, write) = (pricing.cache_read.0, pricing.cache_write.0);
    let tokens = |count: usize| u64::try_from(count).unwrap_or(u64::MAX);
    let (old, kept, lost) = (tokens(old), tokens(kept), tokens(lost));
    let warm_old = old.saturating_mul(read);
    let first_new = (kept.saturating_mul(read)).saturating_add(lost.saturating_mul(write));
    let later = u64::from(requests.saturating_sub(1));
    let warm_new = (kept.saturating_add(lost)).saturating_mul(read);
    PricedBreak {
        pricing,
        first_request: Cost {
            old: Multiple(warm_old),
            new: Multiple(first_new),
        },
        session: Cost {
            old: Multiple(warm_old.saturating_mul(u64::from(requests))),
            new: Multiple(first_new.saturating_add(warm_new.saturating_mul(later))),
        },
    }
}

/// What `--fail-on cache-break` fails on: a break anywhere, or before a
/// section of the new prompt, or before a number of tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Threshold {
    /// Any break.
    Anywhere,
    /// A break before this section of the new prompt starts (`--before
    /// SECTION`): the section and what follows it may change.
    Section(String),
    /// A break before this many tokens (`--before TOKENS`).
    Tokens(usize),
}

impl FromStr for Threshold {
    type Err = std::convert::Infallible;

    /// A number of tokens when `text` is digits (a section's name starts
    /// with a letter), else a section's name.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(match text.parse() {
            Ok(tokens) => Self::Tokens(tokens),
            Err(_) => Self::Section(text.to_owned()),
        })
    }
}

impl Threshold {
    /// Whether `cache` (`None`: no break) breaks before the threshold in
    /// `new`; a problem when the threshold names a section the new prompt
    /// does not have.
    pub fn is_crossed(&self, cache: Option<&CacheBreak>, new: &Prefix) -> Result<bool, Problem> {
        let start = match self {
            Self::Section(name) => Some(section_start(new, name)?),
            Self::Anywhere | Self::Tokens(_) => None,
        };
        let Some(cache) = cache else {
            return Ok(false);
        };
        Ok(match self {
            Self::Anywhere => true,
            Self::Tokens(tokens) => cache.kept.tokens < *tokens,
            Self::Section(_) => cache.part == PartKind::SystemPrompt && Some(cache.byte) < start,
        })
    }
}

/// Where section `name` starts in `new`'s system prompt, or the problem
/// that it has none of that name.
fn section_start(new: &Prefix, name: &str) -> Result<usize, Problem> {
    if let Some(section) = new.sections.iter().find(|section| section.name == name) {
        return Ok(section.start);
    }
    let names: Vec<&str> = new
        .sections
        .iter()
        .map(|section| section.name.as_str())
        .collect();
    let mut help = format!("the new prompt's sections are {}", quoted_list(&names));
    if let Some(closest) = closest(name, &names) {
        help = format!("did you mean `{closest}`? {help}");
    }
    Err(Problem::new(format!(
        "`--before {name}`: the new prompt of agent `{}` has no section `{name}`",
        new.agent
    ))
    .help(help))
}
