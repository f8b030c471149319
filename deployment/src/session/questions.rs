//! An MCP server's questions — sampling, elicitation — put to the person
//! of the session whose call the server serves: one skeleton for every
//! front end, which only shows the question and reads the answer
//! ([`Person::ask`], [`Person::elicit`]).
//!
//! - **Sampling**: in a mode that asks (all but `full-access`), the
//!   person is asked with the server's name and what it sends (escaped,
//!   cut: [`describe_sampling`]), shown as a call of its own first
//!   ([`SessionEvent::QuestionShown`]); allowed, the host's model answers
//!   with the session's model. The question's call then ends
//!   ([`SessionEvent::QuestionEnded`]), and is recorded with the call its
//!   server served, so a loaded session shows it again. Refused, saying why, when no one
//!   can answer or the request is no session's.
//! - **Elicitation**: put to the person when they can answer its kind;
//!   declined otherwise, and said ([`ServerLine::declined`]).
//!
//! A request is a session's when it came inside one of its calls
//! (`Origin::session`); a front end with one session only answers the
//! others too ([`Reach::only_session`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use dsh_agent_loop::async_trait;
use dsh_session_store::RecordedQuestion;
use dsh_tool_mcp::{
    AskError, Asker, ElicitAnswer, ElicitKind, Elicitation, Elicits, Origin, Sampled,
    SamplingRequest, ServerLine, ServerOutput, ServerSaid,
};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::SessionShared;
use super::events::SessionEvent;
use super::person::{Answer, Question};
use crate::policy::sampling::{
    Sampler, cannot_ask, declined, describe_sampling, sampling_asks, sampling_input, sampling_title,
};

/// Who can answer a server's questions, as the front end says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reach {
    /// Whether sampling requests are answered.
    pub samples: bool,
    /// Which elicitations are answered.
    pub elicits: Elicits,
    /// Whether a request that came outside any call goes to the one open
    /// session (a front end with one session, like a terminal's).
    pub only_session: bool,
    /// Whether a call that would change a file outside a session's
    /// workspace is asked about ([`Question::Outside`]); refused
    /// otherwise.
    pub outside: bool,
}

/// The answerer of a host's MCP servers' questions.
pub(crate) struct Questions {
    sampler: Sampler,
    /// Where a question declined unasked is said.
    output: Mutex<ServerOutput>,
    sessions: Mutex<HashMap<String, Weak<SessionShared>>>,
    reach: Mutex<Reach>,
    /// Numbers the sampling requests' calls.
    asked: AtomicU64,
}

impl std::fmt::Debug for Questions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Questions")
            .field("reach", &*self.reach.lock())
            .finish_non_exhaustive()
    }
}

impl Questions {
    /// Questions answered with `sampler`'s model, by whom `reach` says.
    pub(crate) fn new(sampler: Sampler, reach: Reach) -> Self {
        Self {
            sampler,
            output: Mutex::new(ServerOutput::discarded()),
            sessions: Mutex::new(HashMap::new()),
            reach: Mutex::new(reach),
            asked: AtomicU64::new(0),
        }
    }

    /// Says who can answer from now on.
    pub(crate) fn reach(&self, reach: Reach) {
        *self.reach.lock() = reach;
    }

    /// Who can answer now.
    pub(crate) fn reached(&self) -> Reach {
        *self.reach.lock()
    }

    /// Says a question declined unasked through `output` from now on.
    pub(crate) fn show_with(&self, output: ServerOutput) {
        *self.output.lock() = output;
    }

    /// A session opened: its questions go to its person.
    pub(crate) fn opened(&self, shared: &Arc<SessionShared>) {
        let mut sessions = self.sessions.lock();
        sessions.retain(|_, session| session.strong_count() > 0);
        sessions.insert(shared.id.to_string(), Arc::downgrade(shared));
    }

    /// The open session a request of `origin` is for.
    fn session_of(&self, origin: &Origin) -> Option<Arc<SessionShared>> {
        let sessions = self.sessions.lock();
        if let Some(session) = (origin.session.as_ref()).and_then(|id| sessions.get(id)?.upgrade())
        {
            return Some(session);
        }
        // A request outside any call, or in a call of an in-process child
        // (a session of its own), is the one open session's where the
        // front end has one.
        if !self.reach.lock().only_session {
            return None;
        }
        let mut open = sessions.values().filter_map(Weak::upgrade);
        let only = open.next()?;
        open.next().is_none().then_some(only)
    }

    /// Asks the person of `session` whether `request` may use the model;
    /// `Ok` with the question's call, which ends when it drops.
    async fn allowed(
        &self,
        session: &Arc<SessionShared>,
        request: &SamplingRequest,
        cancel: &CancellationToken,
    ) -> Result<AskedCall, AskError> {
        let server = &request.origin.server;
        let number = self.asked.fetch_add(1, Ordering::Relaxed) + 1;
        // Unique beyond this process: a loaded session shows its
        // recorded ones beside new ones.
        let unique = dsh_agent_loop::SessionId::generate();
        let (title, described) = (sampling_title(request), describe_sampling(request));
        // Withdrawn (the future dropped) or refused, the call ends failed.
        let asked = AskedCall {
            session: Arc::clone(session),
            served: request.origin.call.clone(),
            question: RecordedQuestion::new(
                format!(
                    "sampling-{number}-{}",
                    unique.as_str().get(..8).unwrap_or("")
                ),
                title,
                described,
                sampling_input(request),
                false,
            ),
        };
        let question = &asked.question;
        session.show(SessionEvent::QuestionShown {
            call_id: question.id.clone(),
            title: question.title.clone(),
            text: question.text.clone(),
            input: question.input.clone(),
        });
        let question = Question::Sampling {
            call_id: &question.id,
            title: &question.title,
            described: &question.text,
            request,
        };
        match session.person.ask(question, cancel).await {
            Answer::Once | Answer::Always => Ok(asked),
            Answer::Unanswerable(why) => Err(cannot_ask(server, &why)),
            Answer::No | Answer::Never | Answer::Withdrawn => Err(declined(server)),
        }
    }
}

/// The call a sampling question shows while it is asked and answered:
/// dropped, it ends ([`SessionEvent::QuestionEnded`]), answered only when
/// the model answered, and is recorded with the call its server served,
/// for a load to show again.
struct AskedCall {
    session: Arc<SessionShared>,
    /// The tool call the server served, when known.
    served: Option<String>,
    question: RecordedQuestion,
}

impl Drop for AskedCall {
    fn drop(&mut self) {
        if let Some(served) = &self.served {
            self.session.record_question(served, &self.question);
        }
        self.session.narrator.show(SessionEvent::QuestionEnded {
            call_id: std::mem::take(&mut self.question.id),
            answered: self.question.answered,
        });
    }
}

#[async_trait]
impl Asker for Questions {
    fn samples(&self) -> bool {
        self.reach.lock().samples
    }

    fn elicits(&self) -> Elicits {
        self.reach.lock().elicits
    }

    async fn sample(&self, request: SamplingRequest) -> Result<Sampled, AskError> {
        let server = request.origin.server.clone();
        if !self.samples() {
            return Err(cannot_ask(&server, "no one can answer it here"));
        }
        let cancel = CancellationToken::new();
        let Some(session) = self.session_of(&request.origin) else {
            return Err(cannot_ask(
                &server,
                "the request came outside any call of a session, so no session could show it",
            ));
        };
        let (asking, model) = {
            let steering = session.steering.lock();
            (steering.mode.asking, steering.model.clone())
        };
        let mut asked = match sampling_asks(asking) {
            true => Some(self.allowed(&session, &request, &cancel).await?),
            false => None,
        };
        let sampled = self.sampler.sample(&request, Some(&model), &cancel).await;
        if let Some(asked) = &mut asked {
            asked.question.answered = sampled.is_ok();
        }
        sampled
    }

    /// Said to the person of the session the request was for (as a
    /// notice), else where the servers' lines go; and in the trace.
    fn refused(&self, origin: &Origin, why: &str) {
        self.sampler
            .refused(&origin.server, origin.session.as_deref(), why);
        match self.session_of(origin) {
            Some(session) => session.show(SessionEvent::Notice {
                text: why.to_owned(),
            }),
            None => {
                let line = ServerLine::new(&origin.server, ServerSaid::Failure(why.to_owned()));
                self.output.lock().say(line);
            }
        }
    }

    async fn elicit(&self, request: Elicitation) -> ElicitAnswer {
        let decline = |why: &str| {
            let line = ServerLine::declined(&request.origin.server, why, &request.message);
            self.output.lock().say(line);
            ElicitAnswer::Decline
        };
        let Some(session) = self.session_of(&request.origin) else {
            return decline("it came outside any call of a session, so no session could show it");
        };
        let elicits = session.person.elicits();
        match &request.kind {
            ElicitKind::Form { .. } if !elicits.form => decline("no form can be shown here"),
            ElicitKind::Url { .. } if !elicits.url => decline("no URL can be shown here"),
            _ => {
                let cancel = CancellationToken::new();
                session.person.elicit(&request, &cancel).await
            }
        }
    }
}
