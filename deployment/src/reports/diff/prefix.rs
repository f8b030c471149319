//! [`Prefix`]: one agent's request prefix — its system prompt, then its
//! tools as sent — with the owner and the tokens of every part. `dsh diff`
//! compares two of them; `dsh prompt --format json` writes one under
//! `prefix`, so that a dump of one build compares with a dump of
//! another, or with a deployment file.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::Arc;

use dsh_agent_loop::{Encoding, PERSONA_SECTION, Tokenizer};
use dsh_system_prompt::inspect::{RenderedPrompt, RenderedSection, render_prompt_with_spans};
use dsh_system_prompt::template::Template;
use dsh_system_prompt::{AssembledSection, Owner, PromptAssembly, ToolSchema};
use serde::{Deserialize, Serialize};

use crate::file::prompt_problems;
use crate::measure::canonical_request;
use crate::measure::tokens::{PromptTokens, Size};
use crate::problem::Problem;
use crate::reports::agent_prompt::AgentPrompt;

/// One agent's request prefix, as `dsh diff` compares it and a dump
/// carries it: the rendered system prompt with each section's place,
/// owner and tokens, the variables, and each tool's schema, owner and
/// tokens. Its JSON is the `prefix` of `dsh prompt --format json`
/// (`docs/diff.md` documents each field).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prefix {
    /// The agent's id (`<agent>/<instance>` for a child).
    pub agent: String,
    /// The agent's model.
    pub model: String,
    /// The session's working directory; `None` for a session without one.
    pub cwd: Option<String>,
    /// The encoding the tokens are counted with (`o200k_base`).
    pub tokenizer: String,
    /// The system prompt, byte for byte as the model receives it.
    pub system_prompt: String,
    /// The whole system prompt's tokens: its sections' and the
    /// separators' between them.
    pub system_tokens: usize,
    /// The sections that rendered, in the prompt's order.
    pub sections: Vec<PrefixSection>,
    /// Every registered variable's value (`null`: no value for this
    /// session), by name.
    pub variables: BTreeMap<String, Option<String>>,
    /// The tools, in the order they are sent.
    pub tools: Vec<PrefixTool>,
}

/// One rendered section of a [`Prefix`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrefixSection {
    /// Its name (`tool:bash`).
    pub name: String,
    /// Its order: the prompt is sorted by order, then by name.
    pub order: i32,
    /// Who owns its text.
    pub owner: PartOwner,
    /// The tool it is bound to, if any.
    pub tool: Option<String>,
    /// Its text before interpolation, the `<<name>>` references included.
    pub template: String,
    /// The variables its text references, each once, in order.
    pub variables: Vec<String>,
    /// Where it starts in the system prompt, in bytes.
    pub start: usize,
    /// Where it ends in the system prompt (exclusive), in bytes.
    pub end: usize,
    /// Its tokens: those that start inside it, when the whole prompt is
    /// encoded.
    pub tokens: usize,
}

/// One tool of a [`Prefix`]: its schema as sent, who owns it, its tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrefixTool {
    /// The name the model calls it by.
    pub name: String,
    /// Who defines it: the deployment's `[tools.<name>]` table, or an MCP
    /// server; `None` for a built-in tool (its crate).
    pub owner: Option<PartOwner>,
    /// Its description.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: serde_json::Value,
    /// The tokens of its canonical JSON (`canonical_request::tool_json`).
    pub tokens: usize,
}

/// Who owns a part of a prefix, as a section's [`Owner`] says it: a crate
/// and its item, a deployment file's table, an instruction file, an MCP
/// server, the client; with the file and the line it is written at.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PartOwner {
    /// The crate (`dsh-tool-bash`), `deployment`, `project`, `user`,
    /// `client` or the server (`` MCP server `docs` ``).
    pub krate: String,
    /// The item (`dsh_tool_bash::EXIT_CODE_HABIT`), the deployment's key
    /// (`agents[coder].persona`), or what the owner is (a path, a command).
    pub item: String,
    /// The file it is written in.
    pub file: String,
    /// Its line in `file` (0 when it has none).
    pub line: u32,
}

impl From<&Owner> for PartOwner {
    fn from(owner: &Owner) -> Self {
        Self {
            krate: owner.krate.to_string(),
            item: owner.item.to_string(),
            file: owner.file.to_string(),
            line: owner.line,
        }
    }
}

impl PartOwner {
    /// `file:line`, or the file alone when it has no line.
    pub fn place(&self) -> String {
        if self.line == 0 {
            self.file.clone()
        } else {
            format!("{}:{}", self.file, self.line)
        }
    }
}

impl Prefix {
    /// The prefix of the agent `shown`, in its session, its tokens counted
    /// with `tokenizer` (`None`: the agent's own, as `explain` counts);
    /// the problems of a prompt that does not render located in the
    /// deployment file.
    pub fn of(shown: &AgentPrompt, tokenizer: Option<Tokenizer>) -> Result<Self, Vec<Problem>> {
        let assembly = shown.assemble();
        let prompt = render_prompt_with_spans(&assembly)
            .map_err(|errors| prompt_problems(&shown.deployment, &shown.agent, &errors))?;
        let tokenizer = tokenizer.unwrap_or_else(|| shown.deployment.tokenizer_for(&shown.agent));
        let tokens = PromptTokens::count(tokenizer, &prompt, &assembly.tools);
        Ok(Self::new(shown, &assembly, &prompt, &tokens))
    }

    /// The prefix of `shown`'s `assembly`, rendered as `prompt` and
    /// counted as `tokens`: what `dsh prompt --format json` has at hand.
    pub fn new(
        shown: &AgentPrompt,
        assembly: &PromptAssembly,
        prompt: &RenderedPrompt,
        tokens: &PromptTokens,
    ) -> Self {
        // Each assembled section by name, once: a search for every
        // rendered section made 10,000 sections quadratic.
        let mut assembled: HashMap<&str, &AssembledSection> = HashMap::new();
        for section in assembly.sections.iter() {
            assembled.entry(section.name().as_str()).or_insert(section);
        }
        let sections = (prompt.sections.iter())
            .zip(&tokens.sections)
            .map(|(rendered, tokens)| {
                let of = assembled.get(rendered.name.as_str()).copied();
                section(shown, of, rendered, *tokens)
            })
            .collect();
        let tools = (assembly.tools.iter())
            .zip(&tokens.tools)
            .map(|(schema, tokens)| PrefixTool {
                name: schema.name.clone(),
                owner: tool_owner(shown, &schema.name),
                description: schema.description.clone(),
                parameters: schema.parameters.clone(),
                tokens: *tokens,
            })
            .collect();
        let variables = (assembly.variables.iter())
            .map(|variable| (variable.name.to_string(), variable.value.map(str::to_owned)))
            .collect();
        Self {
            agent: shown.agent.id.get_ref().clone(),
            model: shown.agent.model.get_ref().clone(),
            cwd: (shown.started.session.cwd()).map(|cwd| cwd.display().to_string()),
            tokenizer: tokens.tokenizer.encoding().name().to_owned(),
            system_prompt: prompt.text.clone(),
            system_tokens: tokens.system,
            sections,
            variables,
            tools,
        }
    }

    /// The prefix with its tokens counted with `tokenizer`: itself when it
    /// was counted with that encoding already, else counted again from
    /// its texts, as [`PromptTokens`] counts a rendered prompt.
    pub fn counted_with(mut self, tokenizer: Tokenizer) -> Self {
        if self.tokenizer == tokenizer.encoding().name() {
            return self;
        }
        let tokens = PromptTokens::count(tokenizer, &self.rendered(), &self.tool_schemas());
        for (section, tokens) in self.sections.iter_mut().zip(tokens.sections) {
            section.tokens = tokens;
        }
        for (tool, tokens) in self.tools.iter_mut().zip(tokens.tools) {
            tool.tokens = tokens;
        }
        self.system_tokens = tokens.system;
        self.tokenizer = tokenizer.encoding().name().to_owned();
        self
    }

    /// The tokenizer of the encoding the prefix names, if this build has
    /// it.
    pub fn tokenizer(&self) -> Option<Tokenizer> {
        let encoding: Encoding = self.tokenizer.parse().ok()?;
        Some(Tokenizer::configured(encoding))
    }

    /// The system prompt with its sections' places, as core renders it.
    fn rendered(&self) -> RenderedPrompt {
        RenderedPrompt {
            text: self.system_prompt.clone(),
            sections: (self.sections.iter())
                .map(|section| RenderedSection {
                    name: section.name.clone().into(),
                    owner: Owner::new(
                        section.owner.krate.clone(),
                        section.owner.item.clone(),
                        section.owner.file.clone(),
                        section.owner.line,
                    ),
                    range: section.range(),
                })
                .collect(),
        }
    }

    /// The tools' schemas, as the assembly holds them.
    pub(crate) fn tool_schemas(&self) -> Vec<Arc<ToolSchema>> {
        (self.tools.iter())
            .map(|tool| Arc::new(tool.schema()))
            .collect()
    }

    /// The text of `section` in the system prompt (empty when its place is
    /// not one of the prompt's: a damaged dump never makes this panic).
    pub fn text_of(&self, section: &PrefixSection) -> &str {
        self.system_prompt.get(section.range()).unwrap_or_default()
    }

    /// The system prompt's bytes and tokens.
    pub(crate) fn system_size(&self) -> Size {
        Size {
            bytes: self.system_prompt.len(),
            tokens: self.system_tokens,
        }
    }

    /// The tools' bytes (of their canonical JSON) and tokens.
    pub fn tools_size(&self) -> Size {
        Size {
            bytes: (self.tools.iter())
                .map(|tool| tool.canonical_json().len())
                .sum(),
            tokens: self.tools.iter().map(|tool| tool.tokens).sum(),
        }
    }

    /// Where the prefix is not what a renderer makes: a section outside
    /// the system prompt, or one that starts before the one before it
    /// ends. `None` when every place is sound.
    pub(crate) fn unsound_section(&self) -> Option<&PrefixSection> {
        let mut end = 0;
        self.sections.iter().find(|section| {
            let unsound = section.start < end
                || section.start > section.end
                || self.system_prompt.get(section.range()).is_none();
            end = section.end;
            unsound
        })
    }
}

impl PrefixSection {
    /// Its bytes in the system prompt.
    pub(crate) fn range(&self) -> Range<usize> {
        self.start..self.end
    }
}

impl PrefixTool {
    /// Its schema, as the assembly holds it.
    pub fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            self.name.clone(),
            self.description.clone(),
            self.parameters.clone(),
        )
    }

    /// Its canonical JSON: what the request prefix holds of it.
    pub(crate) fn canonical_json(&self) -> String {
        canonical_request::tool_json(&self.schema())
    }
}

/// One rendered section, `assembled` as the assembly has it, with its owner: the deployment's
/// place for a text the deployment writes (the persona, a layer's
/// section), else the section's own owner.
fn section(
    shown: &AgentPrompt,
    assembled: Option<&AssembledSection>,
    rendered: &RenderedSection,
    tokens: usize,
) -> PrefixSection {
    let template = assembled.map_or_else(String::new, |section| section.text().to_string());
    let (parsed, _) = Template::parse_recovering(&template);
    let mut variables: Vec<String> = Vec::new();
    for reference in parsed.references(&template) {
        if !variables.iter().any(|name| name == reference.name) {
            variables.push(reference.name.to_owned());
        }
    }
    PrefixSection {
        name: rendered.name.to_string(),
        order: assembled.map_or(0, |section| section.order()),
        owner: deployment_owner(shown, &rendered.name, &rendered.owner)
            .unwrap_or_else(|| PartOwner::from(&rendered.owner)),
        tool: assembled.and_then(|section| section.tool().map(ToString::to_string)),
        template,
        variables,
        start: rendered.range.start,
        end: rendered.range.end,
        tokens,
    }
}

/// The deployment's place of the persona's text, for section `name`
/// owned by `owner`: the persona is the agent loop's section, but its
/// text — the fact a review is about — is the deployment's. `None` for
/// any other section, and for a persona a layer of the deployment
/// shadows (its owner is its place already).
fn deployment_owner(shown: &AgentPrompt, name: &str, owner: &Owner) -> Option<PartOwner> {
    if name != PERSONA_SECTION || owner.krate == "deployment" {
        return None;
    }
    let (whose, text) = shown.agent.deployment_text(&shown.deployment, name)?;
    let file = &shown.deployment.file;
    let (line, _) = file.position(text.span().start);
    Some(PartOwner {
        krate: "deployment".to_owned(),
        item: whose,
        file: file.name().to_owned(),
        line: u32::try_from(line).unwrap_or(u32::MAX),
    })
}

/// Who defines tool `name`: an MCP server, or the deployment's
/// `[tools.<name>]` instance; `None` for a built-in.
fn tool_owner(shown: &AgentPrompt, name: &str) -> Option<PartOwner> {
    if let Some(server) = shown.runtime.mcp.server_of_tool(None, name) {
        return Some(PartOwner::from(&dsh_tool_mcp::server_owner(
            server.config(),
        )));
    }
    let instance = shown.deployment.tools.get(name)?;
    let file = &shown.deployment.file;
    let (line, _) = file.position(instance.places.span().start);
    Some(PartOwner {
        krate: "deployment".to_owned(),
        item: format!("tools.{name}"),
        file: file.name().to_owned(),
        line: u32::try_from(line).unwrap_or(u32::MAX),
    })
}
