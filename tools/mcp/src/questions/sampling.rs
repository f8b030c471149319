//! How much of the person's model one server's sampling may spend, in
//! every mode: one request of the server in flight at a time, and for
//! each call it serves and each session it works for, a count of requests
//! and a budget of tokens ([`SamplingLimits`], `[mcp.<name>]`'s
//! `sampling_*` keys). A request past a limit is refused at once, before
//! it waits its turn, with an error the server reads (code `-1`), and
//! the person is told once for each call or session that reached it, not
//! once a request.
//!
//! A request costs its `maxTokens` within 1 and [`MAX_SAMPLED_TOKENS`]
//! (what it may spend, known before the model answers), and counts when
//! it is admitted, whatever comes of it: a declined request still put a
//! question to the person.

use std::collections::{HashMap, HashSet};

use parking_lot::Mutex;
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::questions::asker::Origin;

/// The most tokens of a sampled answer, whatever a server asks: a
/// server's request spends the person's model.
pub const MAX_SAMPLED_TOKENS: u32 = 4096;

/// The bounds of one server's sampling.
///
/// ```
/// use dsh_tool_mcp::SamplingLimits;
///
/// let limits = SamplingLimits::default();
/// assert_eq!(limits.requests_per_call, 8);
/// assert_eq!(limits.tokens_per_session, 65_536);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SamplingLimits {
    /// Requests during one tool call of the server (`0`: none).
    pub requests_per_call: u32,
    /// Requests for one session.
    pub requests_per_session: u32,
    /// Tokens (each request's capped `maxTokens`) during one tool call.
    pub tokens_per_call: u64,
    /// Tokens for one session.
    pub tokens_per_session: u64,
}

impl Default for SamplingLimits {
    /// 8 requests and 16 384 tokens a call (four answers of the largest
    /// size, or a handful of short ones: a server summarizing or
    /// classifying asks once or a few times a call), and 32 requests and
    /// 65 536 tokens a session (four such calls).
    fn default() -> Self {
        Self {
            requests_per_call: 8,
            requests_per_session: 32,
            tokens_per_call: 16_384,
            tokens_per_session: 65_536,
        }
    }
}

impl SamplingLimits {
    /// The limits with `requests_per_call`, the others as they are.
    pub fn with_requests_per_call(mut self, requests: u32) -> Self {
        self.requests_per_call = requests;
        self
    }

    /// The limits with `requests_per_session`.
    pub fn with_requests_per_session(mut self, requests: u32) -> Self {
        self.requests_per_session = requests;
        self
    }

    /// The limits with `tokens_per_call`.
    pub fn with_tokens_per_call(mut self, tokens: u64) -> Self {
        self.tokens_per_call = tokens;
        self
    }

    /// The limits with `tokens_per_session`.
    pub fn with_tokens_per_session(mut self, tokens: u64) -> Self {
        self.tokens_per_session = tokens;
        self
    }
}

/// What a request may spend: its `maxTokens` within 1 and
/// [`MAX_SAMPLED_TOKENS`].
pub fn sampled_tokens(max_tokens: u32) -> u32 {
    max_tokens.clamp(1, MAX_SAMPLED_TOKENS)
}

/// One server's sampling so far, and its one place in flight.
#[derive(Debug)]
pub(crate) struct SamplingGate {
    limits: SamplingLimits,
    in_flight: Semaphore,
    spent: Mutex<Spent>,
}

/// What was spent, by call and by session, and the limits already said.
#[derive(Debug, Default)]
struct Spent {
    calls: HashMap<String, Cost>,
    sessions: HashMap<String, Cost>,
    said: HashSet<(Per, String)>,
}

/// Requests and tokens.
#[derive(Debug, Default, Clone, Copy)]
struct Cost {
    requests: u32,
    tokens: u64,
}

/// What a limit is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Per {
    Call,
    Session,
}

/// A request refused by a limit: why, and whether the person is yet to
/// be told (the first refusal of its call or session).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OverLimit {
    pub(crate) why: String,
    pub(crate) first: bool,
}

impl SamplingGate {
    pub(crate) fn new(limits: SamplingLimits) -> Self {
        Self {
            limits,
            in_flight: Semaphore::new(1),
            spent: Mutex::new(Spent::default()),
        }
    }

    /// Counts a request of `origin` asking for `max_tokens`, or refuses
    /// it when it would pass a limit of its call or its session.
    pub(crate) fn admit(&self, origin: &Origin, max_tokens: u32) -> Result<(), OverLimit> {
        let tokens = u64::from(sampled_tokens(max_tokens));
        let call = origin.call.clone().unwrap_or_default();
        let session = origin.session.clone().unwrap_or_default();
        let mut spent = self.spent.lock();
        let checks = [
            (
                Per::Call,
                call.clone(),
                self.limits.requests_per_call,
                self.limits.tokens_per_call,
            ),
            (
                Per::Session,
                session.clone(),
                self.limits.requests_per_session,
                self.limits.tokens_per_session,
            ),
        ];
        for (per, key, requests, budget) in checks {
            let cost = spent.cost(per, &key);
            let over = if cost.requests >= requests {
                Some(format!("{requests} requests"))
            } else if cost.tokens + tokens > budget {
                Some(format!(
                    "{budget} tokens ({} spent, {tokens} asked)",
                    cost.tokens
                ))
            } else {
                None
            };
            if let Some(limit) = over {
                let first = spent.said.insert((per, key));
                return Err(OverLimit {
                    why: refusal(&origin.server, per, &limit),
                    first,
                });
            }
        }
        for (per, key) in [(Per::Call, call), (Per::Session, session)] {
            let cost = spent.cost_mut(per, key);
            cost.requests += 1;
            cost.tokens += tokens;
        }
        Ok(())
    }

    /// Waits for the server's one place in flight.
    pub(crate) async fn turn(&self) -> Option<SemaphorePermit<'_>> {
        self.in_flight.acquire().await.ok()
    }
}

impl Spent {
    fn map(&self, per: Per) -> &HashMap<String, Cost> {
        match per {
            Per::Call => &self.calls,
            Per::Session => &self.sessions,
        }
    }

    fn cost(&self, per: Per, key: &str) -> Cost {
        self.map(per).get(key).copied().unwrap_or_default()
    }

    fn cost_mut(&mut self, per: Per, key: String) -> &mut Cost {
        let map = match per {
            Per::Call => &mut self.calls,
            Per::Session => &mut self.sessions,
        };
        map.entry(key).or_default()
    }
}

/// The refusal of a request of `server` past `limit` (`8 requests`) of
/// one call or one session, with the key that raises it.
fn refusal(server: &str, per: Per, limit: &str) -> String {
    let (of, key) = match (per, limit.ends_with("requests")) {
        (Per::Call, true) => ("one tool call", "sampling_requests_per_call"),
        (Per::Call, false) => ("one tool call", "sampling_tokens_per_call"),
        (Per::Session, true) => ("one session", "sampling_requests_per_session"),
        (Per::Session, false) => ("one session", "sampling_tokens_per_session"),
    };
    format!(
        "MCP server `{server}` reached its sampling limit of {limit} for {of}, so dsh \
         refuses its further requests to use the model; the deployment's \
         `[mcp.{server}] {key}` sets it"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(session: &str, call: &str) -> Origin {
        Origin {
            server: "docs".into(),
            session: Some(session.into()),
            call: Some(call.into()),
        }
    }

    #[test]
    fn a_call_and_a_session_each_have_a_count_said_once() {
        let gate = SamplingGate::new(
            SamplingLimits::default()
                .with_requests_per_call(2)
                .with_requests_per_session(3),
        );
        assert_eq!(gate.admit(&origin("s", "c1"), 10), Ok(()));
        assert_eq!(gate.admit(&origin("s", "c1"), 10), Ok(()));
        let over = gate.admit(&origin("s", "c1"), 10).expect_err("a third");
        assert!(over.first);
        assert!(
            over.why.contains("limit of 2 requests for one tool call"),
            "{}",
            over.why
        );
        assert!(over.why.contains("`[mcp.docs] sampling_requests_per_call`"));
        assert!(!gate.admit(&origin("s", "c1"), 10).expect_err("again").first);
        // Another call of the session: one more, then the session's limit.
        assert_eq!(gate.admit(&origin("s", "c2"), 10), Ok(()));
        let over = gate
            .admit(&origin("s", "c2"), 10)
            .expect_err("the session's");
        assert!(
            over.why.contains("3 requests for one session"),
            "{}",
            over.why
        );
        // Another session is counted apart.
        assert_eq!(gate.admit(&origin("t", "c3"), 10), Ok(()));
    }

    #[test]
    fn tokens_are_each_requests_capped_max_tokens() {
        let gate = SamplingGate::new(SamplingLimits::default().with_tokens_per_call(5000));
        assert_eq!(gate.admit(&origin("s", "c"), u32::MAX), Ok(()));
        let over = gate.admit(&origin("s", "c"), 1000).expect_err("past 5000");
        assert!(
            over.why.contains("5000 tokens (4096 spent, 1000 asked)"),
            "{}",
            over.why
        );
        assert_eq!(gate.admit(&origin("s", "c"), 0), Ok(()), "0 costs 1");
    }

    #[test]
    fn zero_requests_refuse_every_one() {
        let gate = SamplingGate::new(SamplingLimits::default().with_requests_per_call(0));
        assert!(gate.admit(&origin("s", "c"), 1).is_err());
    }
}
