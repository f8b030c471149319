//! The head of an explanation: the agent, where the file declares it,
//! and how its tokens are counted ([`TokenizerOrigin`], which the dump's
//! `tokens` says in a word).

use std::fmt;

use dsh_agent_loop::{Encoding, TokenizerChoice};

use crate::file::{AgentSpec, Deployment};

/// The agent an explanation is of, as its deployment file declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSummary {
    /// Its id (`<agent>/<instance>` for a child).
    pub id: String,
    /// Where the file declares it: its id's place.
    pub declared_at: Place,
    /// Its model.
    pub model: String,
    /// Where its persona's text is.
    pub persona_at: Place,
    /// How its tokens are counted.
    pub tokenizer: TokenizerOrigin,
}

impl AgentSummary {
    /// `agent` of `deployment`.
    pub(super) fn of(deployment: &Deployment, agent: &AgentSpec) -> Self {
        let place = |offset: usize| {
            let file = &deployment.file;
            let (line, column) = file.position(offset);
            Place {
                file: file.name().to_owned(),
                line,
                column,
            }
        };
        Self {
            id: agent.id.get_ref().clone(),
            declared_at: place(agent.id.span().start),
            model: agent.model.get_ref().clone(),
            persona_at: place(agent.persona.span().start),
            tokenizer: TokenizerOrigin::of(deployment, agent),
        }
    }
}

/// A place in a file: `dsh.toml:40:6`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The file's name, as the command was given it.
    pub file: String,
    /// The line, from 1.
    pub line: usize,
    /// The column, from 1, in characters.
    pub column: usize,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// How the tokens of an agent's prompt are counted: the encoding, and
/// how it was chosen. Its `Display` says both, and what to do about a
/// default: `o200k_base (selected by model `gpt-5`)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenizerOrigin {
    /// The encoding (`o200k_base`).
    pub encoding: Encoding,
    /// How it was chosen.
    pub choice: TokenizerChoice,
    /// The agent's model, which chooses it unless the file does.
    pub model: String,
    /// The adapter's table, where the file would choose it
    /// (`[adapter.openai]`).
    pub table: &'static str,
}

impl TokenizerOrigin {
    /// The tokenizer `deployment` counts `agent`'s tokens with
    /// ([`Deployment::tokenizer_for`]), and how it was chosen.
    pub fn of(deployment: &Deployment, agent: &AgentSpec) -> Self {
        let tokenizer = deployment.tokenizer_for(agent);
        Self {
            encoding: tokenizer.encoding(),
            choice: tokenizer.choice(),
            model: agent.model.get_ref().clone(),
            table: deployment.adapter_table(),
        }
    }

    /// How it was chosen, in a word, as a dump's `tokenizer_choice` says
    /// it: `configured`, `model`, `estimate` or `default`.
    pub fn choice_name(&self) -> &'static str {
        match self.choice {
            TokenizerChoice::Configured => "configured",
            TokenizerChoice::Model => "model",
            TokenizerChoice::Estimate => "estimate",
            // `Default`, and any way of choosing a later loop adds.
            _ => "default",
        }
    }
}

impl fmt::Display for TokenizerOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            encoding,
            model,
            table,
            ..
        } = self;
        match self.choice {
            TokenizerChoice::Configured => write!(f, "{encoding} (`tokenizer` in {table})"),
            TokenizerChoice::Model => write!(f, "{encoding} (selected by model `{model}`)"),
            TokenizerChoice::Estimate => write!(
                f,
                "{encoding} (an estimate: Anthropic ships no offline tokenizer for model \
                 `{model}`, so these counts are {encoding} estimates; the API's own counts are \
                 in `dsh run --trace`)"
            ),
            _ => write!(
                f,
                "{encoding} (the default: no tokenizer is known for model `{model}`; set \
                 `tokenizer` in {table} to choose one)"
            ),
        }
    }
}
