//! `dsh diff` as data: two request prefixes of one agent compared the way
//! a reviewer reads a prompt change — by owner, in tokens, and in what it
//! costs the provider's prompt cache.
//!
//! Each side ([`read_sides`]) is a deployment file or a dump that `dsh
//! prompt --format json` wrote ([`write_dump`]: one module writes the
//! dump's format and reads it back); both become a [`Prefix`] (the system
//! prompt, then the tools as sent, every part with its owner and tokens),
//! rendered for the same agent in the same working directory and counted
//! with the same tokenizer. [`compare`] makes a [`PromptDiff`]: the
//! sections added, removed, changed (word by word) and moved; the
//! variables whose values differ; the tools added, removed, changed
//! (description, schema) and moved; where the prefix breaks for a cache
//! and what that costs ([`CacheBreak`]); the totals. A front end renders
//! it (`dsh diff`: text, markdown, or this type's JSON).
//!
//! ```no_run
//! use dsh_deployment::reports::agent_prompt::ServerStart;
//! use dsh_deployment::reports::diff::{SessionDirectory, SideOptions, compare, read_sides};
//! use std::path::Path;
//!
//! let options = SideOptions {
//!     agent: None,
//!     cwd: SessionDirectory::Given(Some("/".into())),
//!     mcp: ServerStart::Leave,
//! };
//! let (old, new) = read_sides(Path::new("old.json"), Path::new("dsh.toml"), &options)
//!     .map_err(|problems| problems[0].message().to_owned())?;
//! let diff = compare(&old, &new, 10);
//! println!("{} sections changed", diff.sections.changes.len());
//! # Ok::<(), String>(())
//! ```

mod cache;
mod dump;
mod prefix;
mod render;
mod sections;
mod sides;
mod tools;
mod words;

use serde::Serialize;

use crate::measure::tokens::Size;

pub use cache::{
    ANTHROPIC, CacheBreak, CacheEstimate, CachePricing, Cost, Multiple, OPENAI_GPT_4O,
    OPENAI_GPT_5, PRICINGS, PricedBreak, Threshold,
};
pub use dump::{DUMP_FORMAT_VERSION, write_dump};
pub use prefix::{PartOwner, Prefix, PrefixSection, PrefixTool};
pub use sections::{Cause, SectionChange, SectionChanges, SectionSide, VariableChange};
pub use sides::{SessionDirectory, Side, SideOptions, SourceKind, read_sides};
pub use tools::{SchemaChange, ToolChange, ToolChanges, ToolSide};
pub use words::{DIRECT_WORD_PAIRS, WORD_DIFF_TIME, WordOp, WordRun, word_diff, word_diff_until};

/// The version of the JSON of a [`PromptDiff`] (`dsh diff --format
/// json`), its `format_version`: a field removed or changed in meaning
/// makes another version.
pub const DIFF_FORMAT_VERSION: u32 = 1;

/// What happened to a section, a tool or a part of a tool's schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Only the new side has it.
    Added,
    /// Only the old side has it.
    Removed,
    /// Both have it, not alike.
    Changed,
    /// Both have it alike, in another place.
    Moved,
}

/// Two request prefixes of one agent, compared. Its JSON is `dsh diff
/// --format json`'s (`docs/diff.md` documents each field).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptDiff {
    /// [`DIFF_FORMAT_VERSION`].
    pub format_version: u32,
    /// Whether the two prefixes are the same, byte for byte.
    pub same: bool,
    /// The old side.
    pub old: SideSummary,
    /// The new side.
    pub new: SideSummary,
    /// The encoding both sides are counted with: the new side's agent's.
    pub tokenizer: String,
    /// The sections of the system prompt.
    pub sections: SectionChanges,
    /// The variables whose values differ.
    pub variables: Vec<VariableChange>,
    /// The tools.
    pub tools: ToolChanges,
    /// Where the prefix breaks for a provider's cache; `None` when the
    /// prefixes are the same.
    pub cache: Option<CacheBreak>,
    /// The sizes of both sides.
    pub totals: Totals,
}

impl PromptDiff {
    /// The comparison as `dsh diff --format json` prints it (documented in
    /// `docs/diff.md`), pretty-printed, with a final newline.
    pub fn json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self).map(|json| format!("{json}\n"))
    }

    /// The comparison for a terminal, as `dsh diff --format text` prints
    /// it: the sides, each changed section and tool with its owners,
    /// tokens and word diff, the variables, the cache break and its
    /// estimate, the totals; one line when the prefixes are the same.
    pub fn text(&self) -> String {
        render::text::text(self)
    }

    /// The comparison as a pull request's comment (`dsh diff --format
    /// markdown`), for any front end that posts one.
    pub fn markdown(&self) -> String {
        render::markdown::markdown(self)
    }
}

/// A side, as a report names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SideSummary {
    /// The file, as given.
    pub path: String,
    /// A deployment file, or a dump.
    pub kind: SourceKind,
    /// The agent.
    pub agent: String,
    /// Its model.
    pub model: String,
    /// The session's working directory.
    pub cwd: Option<String>,
}

/// The sizes of both sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// The system prompt's.
    pub system_prompt: Sides<Size>,
    /// The tools' (their canonical JSON).
    pub tools: Sides<Size>,
    /// Both together: the prefix.
    pub prefix: Sides<Size>,
}

/// A value on each side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Sides<T> {
    /// The old side's.
    pub old: T,
    /// The new side's.
    pub new: T,
}

/// Compares `old` with `new`, both counted with the same tokenizer (as
/// [`read_sides`] reads them); the cache estimate is for sessions of
/// `requests` requests.
pub fn compare(old: &Side, new: &Side, requests: u32) -> PromptDiff {
    let (before, after) = (&old.prefix, &new.prefix);
    let tokenizer = after.tokenizer().unwrap_or_else(|| {
        // A side's tokenizer is checked when it is read; the agent's
        // encoding, said to be a default, otherwise.
        dsh_agent_loop::Tokenizer::for_model(&after.model)
    });
    let cache = cache::cache_break(before, after, tokenizer, requests);
    // One budget for every word diff of the comparison: a thousand
    // changed sections cost no more than one rewritten book.
    let words_until = std::time::Instant::now() + WORD_DIFF_TIME;
    PromptDiff {
        format_version: DIFF_FORMAT_VERSION,
        same: cache.is_none(),
        old: summary(old),
        new: summary(new),
        tokenizer: after.tokenizer.clone(),
        sections: sections::compare(before, after, words_until),
        variables: sections::variables(before, after),
        tools: tools::compare(before, after, words_until),
        cache,
        totals: Totals {
            system_prompt: Sides {
                old: before.system_size(),
                new: after.system_size(),
            },
            tools: Sides {
                old: before.tools_size(),
                new: after.tools_size(),
            },
            prefix: Sides {
                old: cache::total(before),
                new: cache::total(after),
            },
        },
    }
}

fn summary(side: &Side) -> SideSummary {
    SideSummary {
        path: side.path.clone(),
        kind: side.kind,
        agent: side.prefix.agent.clone(),
        model: side.prefix.model.clone(),
        cwd: side.prefix.cwd.clone(),
    }
}
