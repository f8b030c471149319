//! A file tool's question to the person: may this call change a file
//! outside the session's workspace? The session's other directories (an
//! editor's `additionalDirectories`) join the workspace; anything else
//! is put to the session's person ([`Question::Outside`]) where the front
//! end says it can be asked ([`Reach::outside`](super::Reach::outside)),
//! and refused by the tool otherwise.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_agent_loop::async_trait;
use dsh_tool_fs::OutsideWorkspace;
use dsh_tools::ToolCallContext;
use tokio_util::sync::CancellationToken;

use super::SessionShared;
use super::person::{Answer, Question};

/// The session's say over changes outside its working directory.
pub(crate) struct Boundary {
    pub(crate) roots: Vec<PathBuf>,
    pub(crate) shared: Arc<SessionShared>,
}

impl std::fmt::Debug for Boundary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Boundary")
            .field("roots", &self.roots)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl OutsideWorkspace for Boundary {
    fn roots(&self) -> Vec<PathBuf> {
        self.roots.clone()
    }

    async fn allow(&self, tool: &str, path: &Path, cx: &ToolCallContext) -> Result<(), String> {
        let question = Question::Outside {
            call_id: &cx.call_id,
            tool,
            path,
        };
        match self
            .shared
            .person
            .ask(question, &CancellationToken::new())
            .await
        {
            Answer::Once | Answer::Always => Ok(()),
            Answer::No | Answer::Never => Err("the user declined the change".to_owned()),
            Answer::Withdrawn => Err("the permission request was cancelled".to_owned()),
            Answer::Unanswerable(why) => {
                Err(format!("the user's permission could not be asked: {why}"))
            }
        }
    }
}
