//! `Tokenizer`: how many tokens a text is for an agent's model.
//!
//! The loop owns which encoding a model uses, as it owns the model's name:
//! the model name selects it, a deployment's `[adapter.*] tokenizer = "…"`
//! overrides it, and a model no table knows gets [`Tokenizer::DEFAULT`],
//! saying so. Nothing here runs while a prompt is assembled or rendered:
//! tokens are counted only when a front end asks (`dsh prompt --format
//! explain`, `dsh check`, `dsh run --trace`).

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use dsh_system_prompt::inspect::RenderedPrompt;

mod bpe;

use crate::TokenizerError;

/// `text` in pieces of at most [`Tokenizer::CHUNK_BYTES`] (bar a character), cut
/// before a space that separates two words where one can be found.
fn chunks(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        if rest.len() <= Tokenizer::CHUNK_BYTES {
            return Some(std::mem::take(&mut rest));
        }
        let bytes = rest.as_bytes();
        let mut limit = Tokenizer::CHUNK_BYTES;
        while !rest.is_char_boundary(limit) {
            limit -= 1;
        }
        // `word| word`: the pre-tokenizer starts a piece at that space.
        let cut = (1..limit)
            .rev()
            .find(|&at| {
                bytes[at] == b' '
                    && !bytes[at - 1].is_ascii_whitespace()
                    && bytes
                        .get(at + 1)
                        .is_some_and(|next| !next.is_ascii_whitespace())
            })
            .unwrap_or(limit);
        let (chunk, after) = rest.split_at(cut);
        rest = after;
        Some(chunk)
    })
}

/// A byte-pair encoding whose ranks ship inside this build (this
/// crate's `tokens/*.ranks`, made from `tiktoken-rs`'s): counting never
/// downloads anything.
///
/// ```
/// use dsh_agent_loop::Encoding;
///
/// let encoding: Encoding = "cl100k_base".parse()?;
/// assert_eq!(encoding, Encoding::Cl100kBase);
/// assert_eq!(Encoding::for_model("gpt-4o-mini"), Some(Encoding::O200kBase));
///
/// let unknown = "cl100k".parse::<Encoding>().unwrap_err().to_string();
/// assert!(unknown.contains("(did you mean `cl100k_base`?)"), "{unknown}");
/// # Ok::<(), dsh_agent_loop::TokenizerError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Encoding {
    /// `o200k_base`: GPT-5, GPT-4.1, GPT-4o and the o-series.
    O200kBase,
    /// `cl100k_base`: GPT-4 and GPT-3.5.
    Cl100kBase,
}

impl Encoding {
    /// Every encoding of this build, in the order messages list them.
    pub const ALL: [Encoding; 2] = [Encoding::O200kBase, Encoding::Cl100kBase];

    /// The encoding's name, as `tokenizer = "…"` writes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
            Self::Cl100kBase => "cl100k_base",
        }
    }

    /// The encoding OpenAI's model `model` uses, when it is one of this
    /// build's; `None` for any other model.
    ///
    /// The table is `tiktoken`'s own (kept in step with OpenAI's by the
    /// `tiktoken-rs` crate), matched without regard to case and after a
    /// router's `provider/` prefix (`openai/gpt-4o`). `gpt-oss` models
    /// count as `o200k_base`: their encoding adds special tokens only,
    /// which ordinary text never produces.
    pub fn for_model(model: &str) -> Option<Self> {
        use tiktoken_rs::tokenizer::{Tokenizer as Tiktoken, get_tokenizer};
        let model = model.rsplit('/').next().unwrap_or(model).to_lowercase();
        match get_tokenizer(&model)? {
            Tiktoken::O200kBase | Tiktoken::O200kHarmony => Some(Self::O200kBase),
            Tiktoken::Cl100kBase => Some(Self::Cl100kBase),
            // The completion-era encodings of models no chat API serves.
            Tiktoken::P50kBase | Tiktoken::P50kEdit | Tiktoken::R50kBase | Tiktoken::Gpt2 => None,
        }
    }

    /// Loads the encoding on a thread of its own, once per process, so
    /// that the first count does not wait for it: for a front end to call
    /// when a session opens, while the person types its first message
    /// (the load is ~20 ms; a count that comes first waits for the rest of
    /// it, never loads twice).
    pub fn warm(self) {
        static WARMING: [std::sync::Once; Encoding::ALL.len()] =
            [std::sync::Once::new(), std::sync::Once::new()];
        let index = Self::ALL.iter().position(|e| *e == self).unwrap_or(0);
        WARMING[index].call_once(|| {
            // A thread that cannot be spawned leaves the load to the
            // first count, as without warming.
            let _ = std::thread::Builder::new()
                .name(format!("dsh-{self}"))
                .spawn(move || {
                    self.bpe();
                });
        });
    }

    /// The encoding's ranks, loaded on first use and shared by the
    /// process: a few milliseconds, where building `tiktoken-rs`'s
    /// encoding took ~150 ([`bpe`]).
    fn bpe(self) -> &'static bpe::Ranks {
        match self {
            Self::O200kBase => bpe::Ranks::o200k_base(),
            Self::Cl100kBase => bpe::Ranks::cl100k_base(),
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Encoding {
    type Err = TokenizerError;

    /// An encoding by its name; an unknown name is an error that lists the
    /// known ones.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|encoding| encoding.name() == name)
            .ok_or_else(|| TokenizerError::Unknown {
                name: name.to_owned(),
            })
    }
}

/// How a [`Tokenizer`]'s encoding was chosen, so a front end can say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TokenizerChoice {
    /// The deployment names it (`[adapter.*] tokenizer = "…"`).
    Configured,
    /// The model's name selects it ([`Encoding::for_model`]).
    Model,
    /// No table knows the model: [`Tokenizer::DEFAULT`], a guess.
    Default,
    /// A Claude model (a name that starts with `claude`), or any model of
    /// the `[adapter.anthropic]` table: Anthropic ships no offline
    /// tokenizer, so the counts are estimates with `o200k_base`
    /// ([`Tokenizer::ESTIMATE`]); the API's own counts, in a trace, are
    /// the real ones.
    Estimate,
}

/// Which tokenizer counts an agent's tokens, for every model a deployment
/// may run: the one rule `explain`, `check`, the context budget and the
/// trace all ask, so they never count one request two ways.
///
/// A configured encoding wins; else every model is an estimate when the
/// API serves only models without an offline tokenizer (Anthropic's), and
/// each model's own encoding otherwise ([`Tokenizer::for_model`]).
///
/// ```
/// use dsh_agent_loop::{Encoding, TokenizerChoice, TokenizerRule};
///
/// let rule = TokenizerRule::by_model();
/// assert_eq!(rule.for_model("gpt-4").encoding(), Encoding::Cl100kBase);
/// let anthropic = TokenizerRule::estimate_all();
/// assert_eq!(anthropic.for_model("gpt-4").choice(), TokenizerChoice::Estimate);
/// let configured = TokenizerRule::configured(Encoding::Cl100kBase);
/// assert_eq!(configured.for_model("gpt-5").encoding(), Encoding::Cl100kBase);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TokenizerRule {
    /// Each model's own encoding ([`Tokenizer::for_model`]).
    #[default]
    ByModel,
    /// Every model is an estimate ([`Tokenizer::estimate`]).
    EstimateAll,
    /// Every model is counted with this encoding.
    Configured(Encoding),
}

impl TokenizerRule {
    /// Each model's own encoding ([`Tokenizer::for_model`]).
    pub fn by_model() -> Self {
        Self::ByModel
    }

    /// Every model is an estimate ([`Tokenizer::estimate`]).
    pub fn estimate_all() -> Self {
        Self::EstimateAll
    }

    /// Every model is counted with `encoding`.
    pub fn configured(encoding: Encoding) -> Self {
        Self::Configured(encoding)
    }

    /// The tokenizer of an agent on `model`.
    pub fn for_model(&self, model: &str) -> Tokenizer {
        match *self {
            Self::EstimateAll => Tokenizer::estimate(),
            Self::Configured(encoding) => Tokenizer::select(model, Some(encoding)),
            Self::ByModel => Tokenizer::select(model, None),
        }
    }
}

/// Counts tokens the way an agent's model reads them: one [`Encoding`],
/// and how it was chosen.
///
/// ```
/// use dsh_agent_loop::{Encoding, Tokenizer, TokenizerChoice};
///
/// let gpt5 = Tokenizer::for_model("gpt-5");
/// assert_eq!((gpt5.encoding(), gpt5.choice()), (Encoding::O200kBase, TokenizerChoice::Model));
/// assert_eq!(gpt5.count("Check the exit code."), 5);
///
/// let local = Tokenizer::for_model("llama3.1:8b");
/// assert!(local.is_default());
///
/// let configured = Tokenizer::select("llama3.1:8b", Some(Encoding::Cl100kBase));
/// assert_eq!(configured.choice(), TokenizerChoice::Configured);
/// ```
///
/// Cheap to copy: the BPE behind it is built once per process, on the
/// first count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tokenizer {
    encoding: Encoding,
    choice: TokenizerChoice,
}

impl Tokenizer {
    /// The encoding of a model no table knows: `o200k_base`, that of
    /// OpenAI's current models.
    pub const DEFAULT: Encoding = Encoding::O200kBase;

    /// The encoding Claude models are estimated with: `o200k_base`, the
    /// larger vocabulary of this build, whose counts fall nearer Claude's
    /// own.
    pub const ESTIMATE: Encoding = Encoding::O200kBase;

    /// The tokenizer of `model`: its encoding, or [`DEFAULT`](Self::DEFAULT)
    /// when no table knows it.
    pub fn for_model(model: &str) -> Self {
        let name = model.rsplit('/').next().unwrap_or(model);
        match Encoding::for_model(model) {
            Some(encoding) => Self {
                encoding,
                choice: TokenizerChoice::Model,
            },
            None if name.to_lowercase().starts_with("claude") => Self::estimate(),
            None => Self {
                encoding: Self::DEFAULT,
                choice: TokenizerChoice::Default,
            },
        }
    }

    /// The tokenizer of a model whose vendor ships none offline (Claude's):
    /// [`ESTIMATE`](Self::ESTIMATE), saying it estimates.
    pub fn estimate() -> Self {
        Self {
            encoding: Self::ESTIMATE,
            choice: TokenizerChoice::Estimate,
        }
    }

    /// A tokenizer with the encoding a deployment names.
    pub fn configured(encoding: Encoding) -> Self {
        Self {
            encoding,
            choice: TokenizerChoice::Configured,
        }
    }

    /// The configured encoding when there is one, else `model`'s.
    pub fn select(model: &str, configured: Option<Encoding>) -> Self {
        configured.map_or_else(|| Self::for_model(model), Self::configured)
    }

    /// The encoding it counts with.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// How the encoding was chosen.
    pub fn choice(&self) -> TokenizerChoice {
        self.choice
    }

    /// Whether the encoding is the default for a model no table knows.
    pub fn is_default(&self) -> bool {
        self.choice == TokenizerChoice::Default
    }

    /// The longest piece of text encoded at once (see
    /// [`count`](Self::count)).
    pub const CHUNK_BYTES: usize = 64 * 1024;

    /// The number of tokens `text` encodes to. Special-token markers in
    /// the text (`<|endoftext|>`) count as the ordinary text they are,
    /// which is how an API reads a prompt.
    ///
    /// A text longer than [`CHUNK_BYTES`](Self::CHUNK_BYTES) is encoded a chunk at a time, cut
    /// between a word and the space before the next, so memory stays
    /// bounded: the encoder's state for one run of text is about 60 bytes a
    /// byte (a 10 MB persona without spaces took 630 MB). A cut falls where
    /// the encodings' pre-tokenizer cuts too, so the count is the same; only
    /// a run of [`CHUNK_BYTES`](Self::CHUNK_BYTES) without such a place is cut inside it, which
    /// may change the count by a token at that cut.
    pub fn count(&self, text: &str) -> usize {
        let bpe = self.encoding.bpe();
        let mut count = 0;
        for chunk in chunks(text) {
            bpe.tokens(chunk, &mut |_| count += 1);
        }
        count
    }

    /// Encodes `text` once and says how many of its tokens start inside
    /// each of `ranges` (byte ranges of `text`, in order, not
    /// overlapping): the share of each part of a text, such as each
    /// section of a prompt, in the count of the whole.
    ///
    /// A token that spans the end of a range (the encodings merge `.` and
    /// the blank line after it) belongs to the range it starts in, so the
    /// counts of the ranges and of what lies between them add up to the
    /// total.
    ///
    /// ```
    /// use dsh_agent_loop::Tokenizer;
    ///
    /// let text = "First part.\n\nSecond part.";
    /// let counts = Tokenizer::for_model("gpt-5").count_ranges(text, &[0..11, 13..text.len()]);
    /// assert_eq!(counts.total, Tokenizer::for_model("gpt-5").count(text));
    /// assert_eq!(counts.outside(), counts.total - counts.in_ranges.iter().sum::<usize>());
    /// ```
    pub fn count_ranges(&self, text: &str, ranges: &[Range<usize>]) -> RangeTokens {
        let bpe = self.encoding.bpe();
        let mut in_ranges = vec![0; ranges.len()];
        let (mut total, mut range, mut offset) = (0, 0, 0);
        let mut token = |len: usize| {
            while range < ranges.len() && ranges[range].end <= offset {
                range += 1;
            }
            if range < ranges.len() && ranges[range].start <= offset {
                in_ranges[range] += 1;
            }
            total += 1;
            offset += len;
        };
        for chunk in chunks(text) {
            bpe.tokens(chunk, &mut token);
        }
        RangeTokens { total, in_ranges }
    }

    /// The tokens of a rendered system prompt, and each rendered section's
    /// share of them ([`count_ranges`](Self::count_ranges) over the
    /// sections' spans); what lies outside them is the separators'.
    pub fn count_sections(&self, prompt: &RenderedPrompt) -> RangeTokens {
        let ranges: Vec<_> = prompt
            .sections
            .iter()
            .map(|section| section.range.clone())
            .collect();
        self.count_ranges(&prompt.text, &ranges)
    }
}

/// What [`Tokenizer::count_ranges`] counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RangeTokens {
    /// The tokens of the whole text.
    pub total: usize,
    /// The tokens that start inside each range, in the ranges' order.
    pub in_ranges: Vec<usize>,
}

impl RangeTokens {
    /// The tokens that start outside every range.
    pub fn outside(&self) -> usize {
        self.total - self.in_ranges.iter().sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_counts_in_chunks_as_it_counts_whole() {
        let sentence = "The parser reads a line, checks it, and says where it went wrong. ";
        let text = sentence.repeat(3 * Tokenizer::CHUNK_BYTES / sentence.len());
        assert!(chunks(&text).count() > 2);
        assert!(chunks(&text).all(|chunk| chunk.len() <= Tokenizer::CHUNK_BYTES));
        assert_eq!(chunks(&text).collect::<String>(), text);
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let tokenizer = Tokenizer::configured(encoding);
            let whole = tiktoken(encoding).encode_ordinary(&text).len();
            assert_eq!(tokenizer.count(&text), whole, "{encoding:?}");
            assert_eq!(tokenizer.count_ranges(&text, &[0..10, 20..30]).total, whole);
        }
    }

    #[test]
    fn a_long_run_without_spaces_is_cut_at_character_boundaries() {
        let text = "é".repeat(Tokenizer::CHUNK_BYTES);
        let pieces: Vec<&str> = chunks(&text).collect();
        assert_eq!(pieces.concat(), text);
        assert!(
            pieces
                .iter()
                .all(|piece| piece.len() <= Tokenizer::CHUNK_BYTES)
        );
        assert!(Tokenizer::configured(Encoding::O200kBase).count(&text) > 0);
    }

    #[test]
    fn the_model_name_selects_the_encoding() {
        for model in ["gpt-5", "gpt-5-mini", "gpt-4.1", "gpt-4o", "o3", "o4-mini"] {
            let tokenizer = Tokenizer::for_model(model);
            assert_eq!(tokenizer.encoding(), Encoding::O200kBase, "{model}");
            assert_eq!(tokenizer.choice(), TokenizerChoice::Model, "{model}");
        }
        for model in [
            "gpt-4",
            "gpt-4-turbo",
            "gpt-3.5-turbo",
            "GPT-4",
            "openai/gpt-4",
        ] {
            assert_eq!(
                Tokenizer::for_model(model).encoding(),
                Encoding::Cl100kBase,
                "{model}"
            );
        }
        assert_eq!(
            Encoding::for_model("openrouter/openai/gpt-4o"),
            Some(Encoding::O200kBase)
        );
    }

    #[test]
    fn an_unknown_model_gets_the_default_and_says_so() {
        for model in ["dsh-scripted", "llama3.1:8b", "", "davinci"] {
            let tokenizer = Tokenizer::for_model(model);
            assert_eq!(tokenizer.encoding(), Tokenizer::DEFAULT, "{model}");
            assert!(tokenizer.is_default(), "{model}");
        }
    }

    #[test]
    fn claude_models_are_estimated_and_say_so() {
        for model in ["claude-sonnet-4-5", "anthropic/Claude-3-5-haiku"] {
            let tokenizer = Tokenizer::for_model(model);
            assert_eq!(tokenizer.encoding(), Encoding::O200kBase, "{model}");
            assert_eq!(tokenizer.choice(), TokenizerChoice::Estimate, "{model}");
            assert!(!tokenizer.is_default(), "{model}");
        }
    }

    #[test]
    fn a_configured_encoding_overrides_the_model() {
        let tokenizer = Tokenizer::select("gpt-5", Some(Encoding::Cl100kBase));
        assert_eq!(tokenizer.encoding(), Encoding::Cl100kBase);
        assert_eq!(tokenizer.choice(), TokenizerChoice::Configured);
        assert_eq!(
            Tokenizer::select("gpt-5", None),
            Tokenizer::for_model("gpt-5")
        );
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let message = "o200k".parse::<Encoding>().err().map(|e| e.to_string());
        assert_eq!(
            message.as_deref(),
            Some(
                "unknown tokenizer `o200k` (did you mean `o200k_base`?); set `tokenizer` to \
                 one of `o200k_base`, `cl100k_base`, or leave it out to choose by the model's name"
            )
        );
        let message = "bert".parse::<Encoding>().err().map(|e| e.to_string());
        assert!(
            message.is_some_and(|message| message.starts_with("unknown tokenizer `bert`; set")),
        );
        for encoding in Encoding::ALL {
            assert_eq!(encoding.name().parse::<Encoding>().ok(), Some(encoding));
        }
    }

    #[test]
    fn the_encodings_count_differently() {
        // The same text, two vocabularies: o200k_base has the larger one.
        let text = "Verify your work the way the project verifies itself, with its build, tests and linters; 検証してください。";
        let o200k = Tokenizer::configured(Encoding::O200kBase).count(text);
        let cl100k = Tokenizer::configured(Encoding::Cl100kBase).count(text);
        assert!(o200k < cl100k, "o200k {o200k}, cl100k {cl100k}");
        assert_eq!(Tokenizer::for_model("gpt-5").count(""), 0);
    }

    #[test]
    fn ranges_share_the_tokens_of_the_whole() {
        let tokenizer = Tokenizer::for_model("gpt-5");
        let parts = ["You are a coding agent.", "Use read.", "Check the marker."];
        let text = parts.join("\n\n");
        let mut ranges = Vec::new();
        let mut start = 0;
        for part in parts {
            ranges.push(start..start + part.len());
            start += part.len() + 2;
        }
        let counts = tokenizer.count_ranges(&text, &ranges);
        assert_eq!(counts.total, tokenizer.count(&text));
        // Each part, counted in place, is what it counts alone: the blank
        // line after it merges into its last token or starts a token of
        // its own, outside every part.
        for (part, tokens) in parts.iter().zip(&counts.in_ranges) {
            assert_eq!(*tokens, tokenizer.count(part), "{part:?}");
        }
        assert_eq!(
            counts.in_ranges.iter().sum::<usize>() + counts.outside(),
            counts.total
        );
        // Text outside every range is counted as outside.
        let prefix = tokenizer.count_ranges(&text, &[]);
        assert_eq!(prefix.outside(), prefix.total);
    }

    /// The tiktoken-rs encoding of `encoding`, to check the lean tables
    /// against.
    fn tiktoken(encoding: Encoding) -> &'static tiktoken_rs::CoreBPE {
        match encoding {
            Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        }
    }

    #[test]
    fn the_tables_are_tiktokens_token_for_token() {
        for (encoding, table, tokens) in [
            (
                Encoding::O200kBase,
                &include_bytes!("tokens/o200k_base.ranks")[..],
                199_998,
            ),
            (
                Encoding::Cl100kBase,
                &include_bytes!("tokens/cl100k_base.ranks")[..],
                100_256,
            ),
        ] {
            let bpe = tiktoken(encoding);
            let (mut at, mut rank) = (0, 0u32);
            while at < table.len() {
                let end = at + 1 + usize::from(table[at]);
                let theirs = bpe.decode_bytes(&[rank]).expect("a rank of theirs");
                assert_eq!(&table[at + 1..end], &theirs[..], "{encoding:?} rank {rank}");
                (at, rank) = (end, rank + 1);
            }
            assert_eq!(rank, tokens, "{encoding:?}");
        }
    }

    /// Texts of every kind the encodings split differently: words in both
    /// cases and contractions, digit runs, punctuation, white space of
    /// every sort, scripts without spaces, emoji, long runs (the merge of
    /// long pieces), and this repository's own sources.
    fn corpus() -> Vec<String> {
        let mut texts: Vec<String> = [
            "Hello, world! I'm here; you're there. They'll see: WE'VE DONE IT.",
            "  leading and trailing  \t\r\n\n  ",
            "1234567 3.14159 0x1F 1,000,000 2026-12-07T19:00:00Z",
            "検証してください。한국어 텍스트 العربية हिन्दी",
            "👩🏽‍💻 🇫🇷 e\u{301} Ångström ﬁ \u{a0}\u{3000}\u{2028}",
            "fn main() { println!(\"{}\", a[0] + b.c()?); } // <|endoftext|>",
        ]
        .iter()
        .map(|text| (*text).to_owned())
        .collect();
        texts.push("a".repeat(5000));
        texts.push("ab".repeat(3000));
        texts.push(" ".repeat(700));
        texts.push("persona".repeat(400));
        texts.push("é!".repeat(900));
        let mut state = 7u64;
        for _ in 0..300 {
            let mut text = String::new();
            for _ in 0..(state % 120) {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1442695040888963407);
                let pool = [
                    "the", " ", "The", "'s", "\n", "\t", "42", "...", "é", "検", "😀", "ABC", "x",
                    "\r\n", "--", "don't",
                ];
                text.push_str(pool[usize::try_from(state >> 60).unwrap_or(0) % pool.len()]);
            }
            texts.push(text);
        }
        for file in [
            "src/tokens.rs",
            "src/tokens/bpe.rs",
            "src/budget.rs",
            "Cargo.toml",
            "../README.md",
        ] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
            texts.push(std::fs::read_to_string(path).expect("a file of the repository"));
        }
        texts
    }

    #[test]
    fn counts_and_token_lengths_are_tiktokens() {
        let corpus = corpus();
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let (ours, theirs) = (encoding.bpe(), tiktoken(encoding));
            for text in &corpus {
                let mut lengths = Vec::new();
                ours.tokens(text, &mut |len| lengths.push(len));
                let expected: Vec<usize> = (theirs.encode_ordinary(text).iter())
                    .map(|token| theirs.decode_bytes(&[*token]).expect("a token").len())
                    .collect();
                assert_eq!(
                    lengths,
                    expected,
                    "{encoding:?}: {:?}",
                    &text[..text.len().min(60)]
                );
            }
        }
    }
}
