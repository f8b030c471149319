//! `dsh prompt --format explain` as data: who owns each part of an
//! agent's prompt, in bytes and tokens, and why a part is not in it.
//!
//! An [`Explanation`] is built from what the JSON dump
//! ([`write_dump`](crate::reports::diff::write_dump)) is built from — an
//! [`AgentPrompt`] and its assembly, rendered and counted — and shares
//! each fact the dump also says with it: the tokenizer's origin
//! ([`TokenizerOrigin`]), the instruction files
//! ([`InstructionsReport`]), the tools by MCP server ([`server_shares`]).
//! A front end lays it out (`dsh`: tables).
//!
//! ```
//! use dsh_deployment::reports::agent_prompt::{AgentPrompt, ServerStart};
//! use dsh_deployment::reports::explain::Explanation;
//!
//! let shown = AgentPrompt::load(None, None, Some(std::path::Path::new("/")), ServerStart::Leave)
//!     .map_err(|problems| problems[0].message().to_owned())?;
//! let assembly = shown.assemble();
//! let explained =
//!     Explanation::new(&shown, &assembly).map_err(|problems| problems[0].message().to_owned())?;
//! // Every section of the assembly, in the prompt or with why it is not.
//! let persona = (explained.sections.iter())
//!     .find(|section| section.name == "agent:persona")
//!     .ok_or("no persona")?;
//! assert!(persona.rendered.is_ok());
//! # Ok::<(), String>(())
//! ```

mod agent;
mod assembly;
mod compaction;
mod layers;
mod sections;
mod tools;

use dsh_system_prompt::PromptAssembly;
use dsh_system_prompt::inspect::render_prompt_with_spans;

pub use agent::{AgentSummary, Place, TokenizerOrigin};
pub use assembly::{ContextRow, VariableRow};
pub use compaction::{Compaction, CompactionRow};
pub use layers::{LayerRow, Layers};
pub use sections::{OwnerName, Rendered, SectionRow, Separators, Share, WhyNot};
pub use tools::{ServerNote, ToolRow};

use crate::file::prompt_problems;
use crate::measure::server_shares::{ServerShare, server_shares};
use crate::measure::tokens::{PromptTokens, Size};
use crate::problem::Problem;
use crate::reports::agent_prompt::AgentPrompt;
use crate::reports::check::instruction_report::InstructionsReport;
use crate::runtime;

/// What `dsh prompt --format explain` says of an agent's prompt, part by
/// part, in the order it says it.
#[derive(Debug)]
pub struct Explanation<'a> {
    /// The agent, where the file declares it, its tokenizer.
    pub agent: AgentSummary,
    /// The system prompt's bytes and tokens (its share: of itself).
    pub prompt: Rendered,
    /// The agent's layers, and the sections they give it.
    pub layers: Layers,
    /// Every section of the assembly, in its order.
    pub sections: Vec<SectionRow>,
    /// The blank lines between the rendered sections.
    pub separators: Separators,
    /// The session's instruction files.
    pub instructions: InstructionsReport<'a>,
    /// Every variable, with its value for this assembly.
    pub variables: Vec<VariableRow>,
    /// Every tool schema sent beside the prompt, in the order sent.
    pub tools: Vec<ToolRow>,
    /// The runtime contexts.
    pub contexts: Vec<ContextRow>,
    /// The context budget and the compaction request's prompt.
    pub compaction: Compaction,
    /// The tools by MCP server; empty without servers.
    pub servers: Vec<ServerShare>,
    /// What the servers' tools became on the way to the model.
    pub server_notes: Vec<ServerNote>,
}

impl<'a> Explanation<'a> {
    /// The explanation of `shown`'s `assembly`; the problems of a prompt
    /// that does not render located in the deployment file.
    pub fn new(shown: &'a AgentPrompt, assembly: &PromptAssembly) -> Result<Self, Vec<Problem>> {
        let AgentPrompt {
            deployment,
            agent,
            runtime,
            started,
            ..
        } = shown;
        let prompt = render_prompt_with_spans(assembly)
            .map_err(|errors| prompt_problems(deployment, agent, &errors))?;
        let tokens = PromptTokens::count(deployment.tokenizer_for(agent), &prompt, &assembly.tools);
        let sections = sections::section_rows(assembly, &prompt, &tokens);
        let whole = prompt.text.len();
        let found = started.instructions.found();
        Ok(Self {
            agent: AgentSummary::of(deployment, agent),
            prompt: Rendered {
                size: Size {
                    bytes: whole,
                    tokens: tokens.system,
                },
                share: Share::of(whole, whole),
            },
            layers: layers::layers(&runtime.prompt, runtime::loop_agent(agent).scope()),
            separators: sections::separators(&prompt, &sections, &tokens),
            sections,
            instructions: InstructionsReport::new(
                found,
                &runtime.instructions,
                Some((&prompt, &tokens)),
            ),
            variables: assembly::variable_rows(assembly),
            tools: tools::tool_rows(assembly, &tokens),
            contexts: assembly::context_rows(assembly),
            compaction: compaction::compaction(&runtime.prompt, deployment.budget_for(agent)),
            servers: server_shares(&runtime.mcp, assembly, &tokens),
            server_notes: tools::server_notes(&runtime.mcp),
        })
    }

    /// How many sections rendered.
    pub fn rendered_sections(&self) -> usize {
        (self.sections.iter())
            .filter(|section| section.rendered.is_ok())
            .count()
    }

    /// The tool schemas' bytes and tokens, all together.
    pub fn tools_size(&self) -> Size {
        Size {
            bytes: self.tools.iter().map(|tool| tool.schema.bytes).sum(),
            tokens: self.tools.iter().map(|tool| tool.schema.tokens).sum(),
        }
    }

    /// The system prompt's and the tool schemas' bytes and tokens
    /// together: what the agent sends before any message.
    pub fn before_any_message(&self) -> Size {
        let tools = self.tools_size();
        Size {
            bytes: self.prompt.size.bytes + tools.bytes,
            tokens: self.prompt.size.tokens + tools.tokens,
        }
    }
}
