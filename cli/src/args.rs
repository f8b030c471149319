//! The command line, as `clap` parses it.

use dsh_sandbox::SandboxMode;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use dsh_deployment::host::HostOptions;
use dsh_deployment::reports::diff::Threshold;

/// See, check and run the system prompt of a dsh deployment.
///
/// A deployment is a TOML file: a model adapter, configured tools, and
/// agents with a persona each. Without `--config`, the built-in
/// coding-agent deployment is used.
#[derive(Debug, Parser)]
#[command(name = "dsh", version, propagate_version = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Print the full system prompt an agent's model receives.
    Prompt(PromptArgs),
    /// Render every agent of a deployment and report every problem.
    Check(CheckArgs),
    /// Run an agent: one turn with `-p`, else one turn per line of stdin.
    Run(RunArgs),
    /// Serve an agent to an editor over the Agent Client Protocol, on
    /// stdin and stdout.
    Acp(AcpArgs),
    /// List the recorded sessions, the most recent first; or delete some.
    Sessions(SessionsArgs),
    /// Print the JSON Schema of a deployment file (`dsh.toml`), for
    /// editors with a TOML language server: `dsh schema > dsh.schema.json`.
    Schema,
    /// Compare an agent's request prefix (the system prompt, then the
    /// tools) in two deployments or dumps: by owner, in tokens, and in
    /// what the change costs a provider's prompt cache. Exit status 0: the
    /// same; 1: different; 2: trouble.
    Diff(DiffArgs),
    /// The deployment's MCP servers: how each authenticates, and the
    /// OAuth logins of those that need one.
    Mcp(McpArgs),
}

/// Which deployment.
#[derive(Debug, Args)]
pub(crate) struct DeploymentArgs {
    /// The deployment file [default: the built-in coding-agent deployment].
    #[arg(long, short = 'c', value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
}

/// Which deployment, and which of its agents.
#[derive(Debug, Args)]
pub(crate) struct AgentArgs {
    #[command(flatten)]
    pub(crate) deployment: DeploymentArgs,
    /// The agent, or the child an agent spawns through an instance with a
    /// `child` table, as `<agent>/<instance>` [default: the deployment's first agent].
    #[arg(long, short = 'a', value_name = "ID")]
    pub(crate) agent: Option<String>,
}

/// The session's working directory, the value of `<<cwd>>`.
#[derive(Debug, Args)]
#[group(multiple = false)]
pub(crate) struct CwdArgs {
    /// The session's working directory [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub(crate) cwd: Option<PathBuf>,
    /// Assemble for a session without a working directory, so `<<cwd>>`
    /// has no value.
    #[arg(long)]
    pub(crate) no_cwd: bool,
}

#[derive(Debug, Args)]
pub(crate) struct PromptArgs {
    #[command(flatten)]
    pub(crate) target: AgentArgs,
    #[command(flatten)]
    pub(crate) cwd: CwdArgs,
    /// What to print.
    #[arg(long, short = 'f', value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
    /// Do not start the agent's MCP servers: the prompt is then shown
    /// without their tools and instructions.
    #[arg(long)]
    pub(crate) no_mcp: bool,
}

/// What `dsh prompt` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// The system prompt, byte for byte as the model receives it (a
    /// terminal also gets a final newline).
    Text,
    /// Each section's order, name, owner, bound tool, size and tokens,
    /// then the variables, the tools' schema sizes and tokens, and the
    /// total; with the tokenizer, and whether it is the default.
    Explain,
    /// The assembly (sections, variables, tools) as JSON, with its tokens
    /// (`tokens`, null when the prompt does not render).
    Json,
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    pub(crate) deployment: DeploymentArgs,
    #[command(flatten)]
    pub(crate) cwd: CwdArgs,
    /// Do not start the deployment's MCP servers: their tools and
    /// instructions are then left out of the check.
    #[arg(long)]
    pub(crate) no_mcp: bool,
    /// How to print what was checked: `text`, or `json` for scripts (the
    /// counts and each MCP server's report; problems still go to
    /// stderr).
    #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
    pub(crate) format: CheckFormat,
}

/// What `dsh check` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CheckFormat {
    /// Lines for a person: what was checked, the sandbox, each MCP
    /// server.
    Text,
    /// One JSON object: `ok`, the counts, and `mcp_servers`.
    Json,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) host: HostArgs,
    /// The session's working directory [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub(crate) cwd: Option<PathBuf>,
    /// Run one turn with this prompt, then exit.
    #[arg(long, short = 'p', value_name = "PROMPT")]
    pub(crate) prompt: Option<String>,
    /// Run the session in this mode: `read-only`, `ask`, `auto` or
    /// `full-access` (`/mode` switches it later).
    #[arg(long, value_name = "ID")]
    pub(crate) mode: Option<String>,
    /// Run the session on this model, one of `[adapter] models`
    /// (`/model` switches it later).
    #[arg(long, value_name = "MODEL")]
    pub(crate) model: Option<String>,
    /// Attach FILE (a file of the session's directory) to the first
    /// prompt: text inline, an image (.png, .jpg, .gif, .webp) as an
    /// image; may be given more than once.
    #[arg(long, value_name = "FILE")]
    pub(crate) attach: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) resume: ResumeArgs,
}

/// What `dsh run` and `dsh acp` tell their host: the agent, and what to
/// record of its sessions.
#[derive(Debug, Args)]
pub(crate) struct HostArgs {
    #[command(flatten)]
    pub(crate) target: AgentArgs,
    /// Write every request sent to the model to FILE (replacing it), one
    /// JSON object a line: exactly what the model was told at each step.
    #[arg(long, value_name = "FILE")]
    pub(crate) record_requests: Option<PathBuf>,
    /// Write a prefix-stability trace to FILE (replacing it), one JSON
    /// object per request of every session: the hashes of the system
    /// prompt and tools, the request's bytes and tokens, how much of it the
    /// request before had sent, where that prefix broke, and the API's
    /// cached tokens.
    #[arg(long, value_name = "FILE")]
    pub(crate) trace: Option<PathBuf>,
    /// Run commands and MCP servers in this sandbox, whatever the
    /// deployment says: `read-only`, `workspace-write` or `full-access`.
    #[arg(long, value_name = "MODE", value_parser = sandbox_mode)]
    pub(crate) sandbox: Option<SandboxMode>,
    #[command(flatten)]
    pub(crate) store: StoreArgs,
}

/// A sandbox mode by its name.
fn sandbox_mode(name: &str) -> Result<SandboxMode, String> {
    name.parse()
        .map_err(|error: dsh_sandbox::UnknownMode| error.to_string())
}

impl HostArgs {
    /// The host's options, as the command line gives them.
    pub(crate) fn options(&self) -> HostOptions {
        HostOptions {
            config: self.target.deployment.config.clone(),
            agent: self.target.agent.clone(),
            no_store: self.store.no_store,
            record_requests: self.record_requests.clone(),
            trace: self.trace.clone(),
            sandbox: self.sandbox,
        }
    }
}

/// Which recorded session `dsh run` continues, if any.
#[derive(Debug, Args)]
#[group(multiple = false)]
pub(crate) struct ResumeArgs {
    /// Continue the most recent session of the agent in the working
    /// directory, with its whole history.
    #[arg(long = "continue")]
    pub(crate) continue_latest: bool,
    /// Continue the session ID (`dsh sessions` lists them), with its whole
    /// history.
    #[arg(long, value_name = "ID")]
    pub(crate) resume: Option<String>,
    /// Start a new session with the history of session ID, which goes on
    /// as it was: its first request's prompt and tools are ID's last, so
    /// the provider's cache of them serves it. ID may be a message of the
    /// session (`<session>/<n>`, the `messageId` an editor gets on its
    /// chunks): the history up to that message.
    #[arg(long, value_name = "ID")]
    pub(crate) fork: Option<String>,
}

/// Whether this process records its sessions.
#[derive(Debug, Args)]
pub(crate) struct StoreArgs {
    /// Record nothing, and resume nothing, in the session store for this
    /// process (`[sessions] enabled = false` does it for the deployment).
    #[arg(long)]
    pub(crate) no_store: bool,
}

#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    #[command(subcommand)]
    pub(crate) action: McpAction,
}

#[derive(Debug, Subcommand)]
pub(crate) enum McpAction {
    /// List the servers, how each authenticates, and whether one needs a
    /// login.
    List(DeploymentArgs),
    /// Log in to a server over OAuth: prints the authorization URL, opens
    /// a browser (`$BROWSER`, else `xdg-open`; none with `DSH_NO_BROWSER=1`)
    /// and waits for its answer on 127.0.0.1; the tokens are kept in
    /// `$XDG_STATE_HOME/dsh/logins/mcp` and refreshed before they expire.
    Login(McpServerArgs),
    /// Forget the login to a server.
    Logout(McpServerArgs),
}

#[derive(Debug, Args)]
pub(crate) struct McpServerArgs {
    #[command(flatten)]
    pub(crate) deployment: DeploymentArgs,
    /// The server, as `[mcp.<name>]` names it.
    #[arg(value_name = "NAME")]
    pub(crate) name: String,
}

#[derive(Debug, Args)]
pub(crate) struct SessionsArgs {
    #[command(flatten)]
    pub(crate) deployment: DeploymentArgs,
    /// Print the sessions as JSON, one array.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(subcommand)]
    pub(crate) action: Option<SessionsAction>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SessionsAction {
    /// Delete a session, or all of them.
    Delete(DeleteArgs),
}

#[derive(Debug, Args)]
pub(crate) struct DeleteArgs {
    /// The session to delete.
    #[arg(
        value_name = "ID",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub(crate) id: Option<String>,
    /// Delete every session no other dsh process has open.
    #[arg(long)]
    pub(crate) all: bool,
}

#[derive(Debug, Args)]
pub(crate) struct AcpArgs {
    #[command(flatten)]
    pub(crate) host: HostArgs,
}

#[derive(Debug, Args)]
pub(crate) struct DiffArgs {
    /// The old side: a deployment file, or a JSON file `dsh prompt
    /// --format json` wrote.
    #[arg(value_name = "OLD")]
    pub(crate) old: PathBuf,
    /// The new side: a deployment file, or a JSON file `dsh prompt
    /// --format json` wrote.
    #[arg(value_name = "NEW")]
    pub(crate) new: PathBuf,
    /// The agent, or a child as `<agent>/<instance>` [default: a dump's
    /// agent, else each deployment's first].
    #[arg(long, short = 'a', value_name = "ID")]
    pub(crate) agent: Option<String>,
    /// The session's working directory, both deployments' [default: a
    /// dump's, else the current directory].
    #[arg(long, value_name = "DIR", conflicts_with = "no_cwd")]
    pub(crate) cwd: Option<PathBuf>,
    /// Render the deployments for a session without a working directory,
    /// so `<<cwd>>` has no value.
    #[arg(long)]
    pub(crate) no_cwd: bool,
    /// What to print: `markdown` is for a pull-request comment.
    #[arg(long, short = 'f', value_enum, default_value_t = DiffFormat::Text)]
    pub(crate) format: DiffFormat,
    /// The requests of a session, for the estimate of what a cache break
    /// costs.
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) requests: u32,
    /// Exit 1 only on a break of the cached prefix (`cache-break`), not on
    /// any difference: with `--before`, only on one before a section or a
    /// number of tokens.
    #[arg(long, value_enum, value_name = "WHAT")]
    pub(crate) fail_on: Option<FailOn>,
    /// With `--fail-on cache-break`: fail only when the prefix breaks
    /// before the new prompt's section SECTION starts, or before TOKENS
    /// tokens (digits): what comes after may change.
    #[arg(long, value_name = "SECTION|TOKENS", requires = "fail_on")]
    pub(crate) before: Option<Threshold>,
    /// Do not start the deployments' MCP servers: their tools and
    /// instructions are then left out of both sides.
    #[arg(long)]
    pub(crate) no_mcp: bool,
}

/// What `dsh diff` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DiffFormat {
    /// A report for a terminal.
    Text,
    /// A pull-request comment: tables, then the text diffs in collapsible
    /// blocks.
    Markdown,
    /// The comparison as JSON (`format_version` 1, documented in
    /// docs/diff.md).
    Json,
}

/// What `dsh diff --fail-on` fails on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum FailOn {
    /// A break of the prefix a provider caches.
    CacheBreak,
}
