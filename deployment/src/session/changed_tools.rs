//! A tool that changes mid-session is a new tool for approval. An MCP
//! server may change a tool's description, input schema or annotations
//! at any time (`notifications/tools/list_changed`); what a person
//! answered, and the annotations that decided whether to ask, were about
//! the tool as it was. So when what a tool says it is ([`ToolPrint`])
//! differs from what the session knew it by:
//!
//! - the answers given "always" for it lapse (in the store too: the
//!   digest of the print they were given for is recorded beside them,
//!   `print:<tool>`, and a session resumed with another print lapses
//!   them again);
//! - the change is said: a notice in the session (stderr in `dsh run`,
//!   the editor's notice), and a line of the trace (`tool_changed`);
//! - a change that would ask less (a destructive tool that now says
//!   `readOnlyHint: true`) is not believed: the stricter of the old and
//!   the new standing decides, until the person allows a call of the
//!   tool as it is now.
//!
//! The tool keeps its place in the session's tool order
//! ([`StickyTools`](super::tool_order::StickyTools)): it is new for
//! approval, not for the prompt's cached prefix.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use dsh_system_prompt::template::series;
use dsh_tool_mcp::ToolPrint;
use sha2::{Digest, Sha256};

use super::SessionShared;
use super::events::SessionEvent;
use crate::measure::trace::{Trace, hex};
use crate::policy::always::Scope;
use crate::policy::approval::{ApprovalPolicy, Standing};

/// The store's key prefix of the print an "always" was given for.
const PRINT_PREFIX: &str = "print:";

/// What a session knows its MCP tools by.
#[derive(Debug, Default)]
pub(crate) struct Prints {
    /// Each tool seen: its print, its digest, and its standing then.
    known: HashMap<String, Known>,
    /// The digests the store recorded with an "always", by tool: what a
    /// resumed session's remembered answers were given for.
    recorded: HashMap<String, String>,
    /// The tools whose change loosened their standing, with the standing
    /// before: the stricter decides until the person allows a call.
    distrusted: HashMap<String, Standing>,
}

impl Prints {
    /// The digests `settings` recorded (a recorded session's).
    pub(crate) fn restore(settings: &BTreeMap<String, String>) -> Self {
        let recorded = (settings.iter())
            .filter_map(|(key, digest)| {
                Some((key.strip_prefix(PRINT_PREFIX)?.to_owned(), digest.clone()))
            })
            .collect();
        Self {
            recorded,
            ..Self::default()
        }
    }
}

/// A tool as the session knows it.
#[derive(Debug)]
struct Known {
    print: ToolPrint,
    digest: String,
    standing: Standing,
}

/// What changed of one tool, to be said.
struct Change {
    tool: String,
    server: String,
    parts: Vec<&'static str>,
    loosened: bool,
}

/// Watches one session's MCP tools for changes, for its approval and
/// its steps.
pub(crate) struct ChangedTools {
    policy: ApprovalPolicy,
    shared: Arc<SessionShared>,
    trace: Arc<Trace>,
}

impl ChangedTools {
    pub(crate) fn new(
        policy: ApprovalPolicy,
        shared: Arc<SessionShared>,
        trace: Arc<Trace>,
    ) -> Self {
        Self {
            policy,
            shared,
            trace,
        }
    }

    /// The standing a call of `tool` in `session` is decided by: its own,
    /// or, after a change that loosened it, the stricter of it and the
    /// one before until the person allows a call. A change is found,
    /// lapsed and said here first.
    pub(crate) fn standing(&self, tool: &str, session: &str) -> Standing {
        self.look(tool, session);
        let now = self.policy.standing(tool, session);
        let prints = self.shared.prints.lock();
        match prints.distrusted.get(tool) {
            Some(before) => now.stricter(*before),
            None => now,
        }
    }

    /// The person allowed a call of `tool` as it is now: a loosened
    /// standing is believed from now on.
    pub(crate) fn allowed(&self, tool: &str) {
        self.shared.prints.lock().distrusted.remove(tool);
    }

    /// The person said "always" for `tool`: the digest of its print now
    /// is recorded beside the answer.
    pub(crate) fn remembered(&self, tool: &str) {
        let digest = (self.shared.prints.lock().known.get(tool)).map(|known| known.digest.clone());
        if let Some(digest) = digest {
            self.shared
                .record(&format!("{PRINT_PREFIX}{tool}"), &digest);
        }
    }

    /// A step of `session` offers `tools`: each MCP tool's print is
    /// compared with what the session knew it by.
    pub(crate) fn offered<'a>(&self, tools: impl Iterator<Item = &'a str>, session: &str) {
        for tool in tools {
            self.look(tool, session);
        }
    }

    /// Compares what `tool` says it is now with what the session knew it
    /// by; a change lapses its remembered answers and is said.
    fn look(&self, tool: &str, session: &str) {
        let Some((server, print)) = self.policy.print(tool, session) else {
            return;
        };
        // The same as known: the common case, at every step, unhashed.
        let same =
            (self.shared.prints.lock().known.get(tool)).is_some_and(|known| known.print == print);
        if same {
            return;
        }
        let digest = digest(&print);
        let standing = self.policy.standing(tool, session);
        let change = {
            let mut prints = self.shared.prints.lock();
            let (before, parts) = match prints.known.get(tool) {
                Some(known) if known.digest == digest => return,
                Some(known) => (Some(known.standing), print.changes_from(&known.print)),
                // First seen: as the store's remembered answers were given
                // for (what changed is not known, only that it did), or
                // new to the session.
                None => match prints.recorded.get(tool) {
                    Some(recorded) if *recorded != digest => {
                        (Some(Standing::STRICTEST), Vec::new())
                    }
                    _ => (None, Vec::new()),
                },
            };
            let known = Known {
                print,
                digest,
                standing,
            };
            prints.known.insert(tool.to_owned(), known);
            let Some(before) = before else {
                return;
            };
            let loosened = standing.loosens(before);
            if loosened {
                let kept = prints.distrusted.get(tool).copied().unwrap_or(before);
                prints
                    .distrusted
                    .insert(tool.to_owned(), kept.stricter(before));
            }
            Change {
                tool: tool.to_owned(),
                server,
                parts,
                loosened,
            }
        };
        self.shared.remembered.lock().forget(&Scope::tool(tool));
        self.said(&change, session);
    }

    /// Says `change`: a notice in the session, a line of the trace.
    fn said(&self, change: &Change, session: &str) {
        let Change {
            tool,
            server,
            parts,
            loosened,
        } = change;
        let what = if parts.is_empty() {
            "since this session's answers about it".to_owned()
        } else {
            format!("({})", series(parts.iter().copied(), "and"))
        };
        let mut text = format!(
            "MCP server `{server}` changed its tool `{tool}` {what}: it is a new tool for \
             approval, and what was answered \"always\" about it no longer holds"
        );
        if *loosened {
            text.push_str(
                "; it now asks for less approval than before, which is not believed until \
                 a call of it is allowed",
            );
        }
        self.shared.show(SessionEvent::Notice { text });
        self.trace.tool_changed(session, tool, server, parts);
    }
}

/// The digest of `print`, as the store keeps it.
fn digest(print: &ToolPrint) -> String {
    let mut hasher = Sha256::new();
    for part in [&print.description, &print.input_schema, &print.annotations] {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    hex(&hasher.finalize())
}
