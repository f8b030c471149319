//! Counting with OpenAI's byte-pair encodings from a table that costs
//! next to nothing to load.
//!
//! `tiktoken-rs` builds an encoding from its base64 rank text: 200,000
//! ranks decoded and copied into a map, a reverse map, and a sorted copy
//! of every token (~150 ms, paid by the first count of every process). A
//! count needs only the ranks. Each `*.ranks` file beside this one holds
//! an encoding's tokens in rank order, each as one byte of length and its
//! bytes (made once from `tiktoken-rs` 0.12.1's assets; the test
//! `the_tables_are_tiktokens_token_for_token` checks every token against
//! `tiktoken-rs`): the map borrows its keys from the binary, so loading
//! allocates nothing but the map. The merge is `tiktoken`'s own (its
//! `_byte_pair_merge` and, for long pieces, `_byte_pair_merge_large`, MIT
//! licensed), reading the same ranks, so the tokens are the same; the
//! pre-tokenizer patterns are `tiktoken-rs`'s.

use std::collections::BinaryHeap;
use std::sync::OnceLock;

use rustc_hash::FxHashMap;

/// A token's rank.
type Rank = u32;

/// One encoding's ranks and pre-tokenizer.
pub(super) struct Ranks {
    ranks: FxHashMap<&'static [u8], Rank>,
    pattern: fancy_regex::Regex,
}

/// `cl100k_base`'s pre-tokenizer, as `tiktoken-rs` 0.12.1 builds it.
const CL100K_BASE_PATTERN: &str = "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|\\p{N}{1,3}+| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+|\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s";

impl Ranks {
    /// `o200k_base`, loaded on first use and shared by the process.
    pub(super) fn o200k_base() -> &'static Self {
        static RANKS: OnceLock<Ranks> = OnceLock::new();
        RANKS.get_or_init(|| {
            Self::load(
                include_bytes!("o200k_base.ranks"),
                tiktoken_rs::O200K_BASE_PAT_STR,
            )
        })
    }

    /// `cl100k_base`, loaded on first use and shared by the process.
    pub(super) fn cl100k_base() -> &'static Self {
        static RANKS: OnceLock<Ranks> = OnceLock::new();
        RANKS.get_or_init(|| Self::load(include_bytes!("cl100k_base.ranks"), CL100K_BASE_PATTERN))
    }

    /// The ranks of `table` (length-prefixed tokens in rank order) and the
    /// pre-tokenizer `pattern`. Both are this build's own data.
    fn load(table: &'static [u8], pattern: &str) -> Self {
        let mut ranks = FxHashMap::with_capacity_and_hasher(table.len() / 8, Default::default());
        let (mut at, mut rank) = (0, 0);
        while let Some(&len) = table.get(at) {
            let end = (at + 1 + usize::from(len)).min(table.len());
            ranks.insert(&table[at + 1..end], rank);
            (at, rank) = (end, rank + 1);
        }
        // The patterns are `tiktoken-rs`'s constants, which it compiles
        // the same way; a failure would be a defect of this build, so
        // it matches nothing rather than panic (every count 0, which the
        // tests would catch).
        let pattern = fancy_regex::Regex::new(pattern)
            .or_else(|_| fancy_regex::Regex::new("$^"))
            .unwrap_or_else(|_| unreachable!("`$^` compiles"));
        Self { ranks, pattern }
    }

    /// Calls `token` with the length in bytes of each token of `text`, in
    /// order (its ordinary encoding: special-token markers are text).
    pub(super) fn tokens(&self, text: &str, token: &mut impl FnMut(usize)) {
        let mut done = 0;
        for piece in self.pattern.find_iter(text) {
            let Ok(piece) = piece else {
                // The pre-tokenizer gave up (its backtracking limit):
                // what is left is one piece.
                break;
            };
            self.piece(piece.as_str().as_bytes(), token);
            done = piece.end();
        }
        if done < text.len() {
            self.piece(&text.as_bytes()[done..], token);
        }
    }

    /// The tokens of one pre-tokenized piece, as `tiktoken`'s
    /// `byte_pair_encode` makes them.
    fn piece(&self, piece: &[u8], token: &mut impl FnMut(usize)) {
        if self.ranks.contains_key(piece) || piece.len() < 2 {
            token(piece.len());
        } else if piece.len() < 100 {
            for pair in self.merge(piece).windows(2) {
                token(pair[1].0 - pair[0].0);
            }
        } else {
            self.merge_large(piece, token);
        }
    }

    fn rank(&self, bytes: &[u8]) -> Rank {
        self.ranks.get(bytes).copied().unwrap_or(Rank::MAX)
    }

    /// `tiktoken`'s `_byte_pair_merge`: the parts' starts (and the end),
    /// quadratic in the piece, fast for the short pieces text is made of.
    fn merge(&self, piece: &[u8]) -> Vec<(usize, Rank)> {
        let mut parts = Vec::with_capacity(piece.len() + 1);
        let mut min_rank: (Rank, usize) = (Rank::MAX, usize::MAX);
        for i in 0..piece.len() - 1 {
            let rank = self.rank(&piece[i..i + 2]);
            if rank < min_rank.0 {
                min_rank = (rank, i);
            }
            parts.push((i, rank));
        }
        parts.push((piece.len() - 1, Rank::MAX));
        parts.push((piece.len(), Rank::MAX));
        let get_rank = |parts: &Vec<(usize, Rank)>, i: usize| {
            if i + 3 < parts.len() {
                self.rank(&piece[parts[i].0..parts[i + 3].0])
            } else {
                Rank::MAX
            }
        };
        while min_rank.0 != Rank::MAX {
            let i = min_rank.1;
            if i > 0 {
                parts[i - 1].1 = get_rank(&parts, i - 1);
            }
            parts[i].1 = get_rank(&parts, i);
            parts.remove(i + 1);
            min_rank = (Rank::MAX, usize::MAX);
            for (i, &(_, rank)) in parts[..parts.len() - 1].iter().enumerate() {
                if rank < min_rank.0 {
                    min_rank = (rank, i);
                }
            }
        }
        parts
    }

    /// `tiktoken`'s `_byte_pair_merge_large`: the same merges in order of
    /// rank by a heap, for long pieces.
    fn merge_large(&self, piece: &[u8], token: &mut impl FnMut(usize)) {
        let mut state = Vec::with_capacity(piece.len());
        state.push(State::new(usize::MAX, 1));
        let mut heap = BinaryHeap::with_capacity(piece.len());
        for i in 0..piece.len() - 1 {
            let rank = self.rank(&piece[i..i + 2]);
            if rank != Rank::MAX {
                heap.push(Merge { start: i, rank });
                state[i].next_rank = rank;
            }
            state.push(State::new(i, i + 2));
        }
        let potential = |state: &mut Vec<State>, heap: &mut BinaryHeap<Merge>, start, next_end| {
            let at: &mut State = &mut state[start];
            at.next_end = next_end;
            at.next_rank = Rank::MAX;
            if next_end <= piece.len() {
                let rank = self.rank(&piece[start..next_end]);
                if rank != Rank::MAX {
                    heap.push(Merge { start, rank });
                    at.next_rank = rank;
                }
            }
        };
        while let Some(left) = heap.pop() {
            if left.rank != state[left.start].next_rank {
                continue;
            }
            let left_start = left.start;
            let right_start = state[left_start].end;
            let right_end = state[left_start].next_end;
            let right_next_end = state[right_start].next_end;
            state[left_start].end = right_end;
            potential(&mut state, &mut heap, left_start, right_next_end);
            if right_end < state.len() {
                state[right_end].prev = left_start;
            }
            if left_start > 0 {
                let prev_start = state[left_start].prev;
                potential(&mut state, &mut heap, prev_start, right_end);
            }
            state[right_start].next_rank = Rank::MAX;
        }
        let mut i = 0;
        while i < state.len() {
            token(state[i].end - i);
            i = state[i].end;
        }
    }
}

/// A part of a long piece being merged (`tiktoken`'s `State`).
struct State {
    prev: usize,
    end: usize,
    next_end: usize,
    next_rank: Rank,
}

impl State {
    fn new(prev: usize, end: usize) -> Self {
        Self {
            prev,
            end,
            next_end: end + 1,
            next_rank: Rank::MAX,
        }
    }
}

/// A possible merge: the lowest rank first, then the leftmost.
#[derive(PartialEq, Eq)]
struct Merge {
    start: usize,
    rank: Rank,
}

impl Ord for Merge {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (other.rank, other.start).cmp(&(self.rank, self.start))
    }
}

impl PartialOrd for Merge {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
