//! What a person types, read the one way every front end reads it: a
//! slash command the host knows, a prompt of one of the session's MCP
//! servers run as a command, or a prompt for the model. `dsh run` reads
//! it from a line of stdin, `dsh acp` from a prompt's text, and an
//! editor learns the list from [`Commands::listed`] — the one list, the
//! built-in commands ([`SLASH_COMMANDS`]) and the servers' prompts.
//!
//! A server's prompt is the command `/<server>:<prompt>`, its arguments
//! after it, separated by white space: `name=value` gives the argument
//! `name` (one of the prompt's); every other word is positional, and
//! fills the arguments not given by name, in the prompt's order, a word
//! each, the last of them taking the rest of the line (words joined by a
//! space). `/docs:review file=src/main.rs`, `/docs:review src/main.rs`
//! and, for a prompt whose one argument is `topic`, `/docs:explain how
//! lifetimes work` all run.

use std::collections::BTreeMap;
use std::sync::Arc;

use dsh_system_prompt::template::quoted_list;
use dsh_tool_mcp::{McpServers, PromptError, ServerPrompt};

/// A command a session takes instead of a prompt.
///
/// Exhaustive on purpose: a command added here fails to compile in every
/// front end that does not run it yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlashCommand {
    /// `/compact`: the loop's compaction, on request.
    Compact,
    /// `/mode ID`: switch the session's mode (`policy::modes`); without an
    /// id, say the modes.
    Mode,
    /// `/model ID`: switch the session's model (`[adapter] models`);
    /// without an id, say the models.
    Model,
}

impl SlashCommand {
    /// Its name, without the slash.
    pub fn name(self) -> &'static str {
        match self {
            Self::Compact => "compact",
            Self::Mode => "mode",
            Self::Model => "model",
        }
    }

    /// What it does, in one line, as a front end lists it.
    pub fn description(self) -> &'static str {
        match self {
            Self::Compact => {
                "Compact the conversation: summarize it so far, keeping the system prompt and \
                 tools as they are"
            }
            Self::Mode => {
                "Switch the session's mode (read-only, ask, auto, full-access): its sandbox \
                 and which calls ask first"
            }
            Self::Model => "Switch the model the session runs on",
        }
    }

    /// What its argument is, for a command that takes one: an editor
    /// shows it as the input's hint.
    pub(crate) fn argument(self) -> Option<&'static str> {
        match self {
            Self::Compact => None,
            Self::Mode => Some("mode id"),
            Self::Model => Some("model"),
        }
    }
}

/// Every slash command, in the order a front end lists them.
pub(crate) const SLASH_COMMANDS: &[SlashCommand] = &[
    SlashCommand::Compact,
    SlashCommand::Mode,
    SlashCommand::Model,
];

/// One input, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input<'a> {
    /// Nothing but white space: no turn.
    Empty,
    /// A slash command, alone on its input (surrounding white space
    /// aside), with its argument (empty when none was given; a command
    /// that takes none has none).
    Command(SlashCommand, &'a str),
    /// A prompt of one of the session's MCP servers, with its arguments
    /// read: its text ([`PromptCall::text`]) is the person's turn.
    ServerPrompt(PromptCall),
    /// A command of a server's prompt that cannot run as typed: the
    /// server has no such prompt, a required argument is missing, there
    /// are words no argument takes.
    Invalid(CommandError),
    /// A prompt for the model, as typed (a slash that names no command
    /// is a prompt too: `/etc/hosts is wrong` asks the model).
    Prompt(&'a str),
}

/// Why a command of a server's prompt cannot run, naming the command and
/// what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// `/<server>:<prompt>` names a server of the session that has no
    /// such prompt.
    #[error(
        "`/{server}:{prompt}`: MCP server `{server}` has no prompt `{prompt}`{}",
        known_prompts(known)
    )]
    UnknownPrompt {
        /// The server.
        server: String,
        /// The prompt named.
        prompt: String,
        /// The prompts it has.
        known: Vec<String>,
    },
    /// A required argument was given neither by name nor by position.
    #[error("`/{command}` needs its argument `{argument}` (as `{argument}=…` or in its place)")]
    MissingArgument {
        /// The command, without its slash.
        command: String,
        /// The argument.
        argument: String,
    },
    /// Words are left over once every argument has a value.
    #[error("`/{command}` takes {}; `{extra}` is more than that", takes(arguments))]
    ExtraWords {
        /// The command, without its slash.
        command: String,
        /// The prompt's arguments.
        arguments: Vec<String>,
        /// What was left over.
        extra: String,
    },
}

/// `; it has `a`, `b`` (or `; it has none`).
fn known_prompts(known: &[String]) -> String {
    match known {
        [] => "; it has none".to_owned(),
        _ => format!("; it has {}", quoted_list(known)),
    }
}

/// `no arguments`, or `only `a`, `b``.
fn takes(arguments: &[String]) -> String {
    match arguments {
        [] => "no arguments".to_owned(),
        _ => format!("only {}", quoted_list(arguments)),
    }
}

/// A server's prompt to run, its arguments read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptCall {
    /// The server.
    pub server: String,
    /// The prompt.
    pub prompt: String,
    /// Its arguments, by name.
    pub arguments: BTreeMap<String, String>,
}

impl PromptCall {
    /// The prompt's text, from the server (`prompts/get`), as session
    /// `session` sees its servers: what the front end sends as the
    /// person's turn. `cancel` firing abandons it.
    pub async fn text(
        &self,
        servers: &McpServers,
        session: &str,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<String, PromptError> {
        let named = (self.server.as_str(), self.prompt.as_str());
        (servers.get_prompt(Some(session), named, &self.arguments, cancel)).await
    }
}

/// One command as a front end lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedCommand {
    /// Its name, without the slash (`compact`, `docs:review`).
    pub name: String,
    /// What it does, in one line.
    pub description: String,
    /// What its input is, for a command that takes one: an editor shows
    /// it as the input's hint.
    pub hint: Option<String>,
}

/// The commands of one session: the built-in ones and the prompts of the
/// MCP servers it sees, as they are when it is made (a server's prompts
/// may change: make it again).
#[derive(Debug, Clone, Default)]
pub struct Commands {
    prompts: Vec<(String, Arc<[ServerPrompt]>)>,
}

impl Commands {
    /// The commands of session `session`, whose servers are among
    /// `servers` (the deployment's, and its own).
    pub fn of(servers: &McpServers, session: &str) -> Self {
        Self {
            prompts: servers.prompts(Some(session)),
        }
    }

    /// Every command, the built-in ones first, then each server's
    /// prompts in its order.
    pub fn listed(&self) -> Vec<ListedCommand> {
        let builtin = SLASH_COMMANDS.iter().map(|command| ListedCommand {
            name: command.name().to_owned(),
            description: command.description().to_owned(),
            hint: command.argument().map(str::to_owned),
        });
        let prompts = self.prompts.iter().flat_map(|(server, prompts)| {
            prompts.iter().map(move |prompt| ListedCommand {
                name: format!("{server}:{}", prompt.name),
                description: prompt.description.clone().unwrap_or_else(|| {
                    format!("Prompt `{}` of MCP server `{server}`", prompt.name)
                }),
                hint: argument_hint(prompt),
            })
        });
        builtin.chain(prompts).collect()
    }

    /// Reads one input: a built-in command when the whole of it,
    /// trimmed, is `/name` of one (then its argument, for a command that
    /// takes one); a server's prompt when it starts `/<server>:` of a
    /// server of the session; else a prompt.
    pub fn parse<'a>(&self, input: &'a str) -> Input<'a> {
        let trimmed = input.trim();
        if trimmed.is_empty() {
            return Input::Empty;
        }
        let Some(line) = trimmed.strip_prefix('/') else {
            return Input::Prompt(input);
        };
        let (name, argument) = match line.split_once(char::is_whitespace) {
            Some((name, argument)) => (name, argument.trim()),
            None => (line, ""),
        };
        if let Some((server, prompt)) = name.split_once(':')
            && let Some((_, prompts)) = self.prompts.iter().find(|(name, _)| name == server)
        {
            return match prompts.iter().find(|one| one.name == prompt) {
                Some(found) => match read_arguments(name, found, argument) {
                    Ok(arguments) => Input::ServerPrompt(PromptCall {
                        server: server.to_owned(),
                        prompt: prompt.to_owned(),
                        arguments,
                    }),
                    Err(error) => Input::Invalid(error),
                },
                None => Input::Invalid(CommandError::UnknownPrompt {
                    server: server.to_owned(),
                    prompt: prompt.to_owned(),
                    known: prompts.iter().map(|one| one.name.clone()).collect(),
                }),
            };
        }
        let command = SLASH_COMMANDS.iter().find(|command| command.name() == name);
        match command {
            Some(&command) if argument.is_empty() || command.argument().is_some() => {
                Input::Command(command, argument)
            }
            _ => Input::Prompt(input),
        }
    }
}

/// A prompt's arguments as a hint: `file`, an optional one in brackets
/// (`file [focus]`); `None` for a prompt without arguments.
fn argument_hint(prompt: &ServerPrompt) -> Option<String> {
    let names: Vec<String> = (prompt.arguments.iter())
        .map(|argument| match argument.required {
            true => argument.name.clone(),
            false => format!("[{}]", argument.name),
        })
        .collect();
    (!names.is_empty()).then(|| names.join(" "))
}

/// The arguments of `prompt` in `text`, by the rule of the module's
/// documentation; `command` names it in an error.
fn read_arguments(
    command: &str,
    prompt: &ServerPrompt,
    text: &str,
) -> Result<BTreeMap<String, String>, CommandError> {
    let mut given = BTreeMap::new();
    let mut positional = Vec::new();
    for word in text.split_whitespace() {
        match word.split_once('=') {
            Some((name, value)) if prompt.arguments.iter().any(|one| one.name == name) => {
                given.insert(name.to_owned(), value.to_owned());
            }
            _ => positional.push(word),
        }
    }
    let open: Vec<&str> = (prompt.arguments.iter())
        .map(|argument| argument.name.as_str())
        .filter(|name| !given.contains_key(*name))
        .collect();
    if !positional.is_empty() {
        let Some((last, first)) = open.split_last() else {
            return Err(CommandError::ExtraWords {
                command: command.to_owned(),
                arguments: prompt
                    .arguments
                    .iter()
                    .map(|one| one.name.clone())
                    .collect(),
                extra: positional.join(" "),
            });
        };
        let mut words = positional.into_iter();
        for name in first {
            if let Some(word) = words.next() {
                given.insert((*name).to_owned(), word.to_owned());
            }
        }
        let rest: Vec<&str> = words.collect();
        if !rest.is_empty() {
            given.insert((*last).to_owned(), rest.join(" "));
        }
    }
    match prompt
        .arguments
        .iter()
        .find(|one| one.required && !given.contains_key(&one.name))
    {
        Some(missing) => Err(CommandError::MissingArgument {
            command: command.to_owned(),
            argument: missing.name.clone(),
        }),
        None => Ok(given),
    }
}

/// Reads one input against the built-in commands alone
/// ([`Commands::parse`] of a session without servers' prompts).
pub fn parse_input(input: &str) -> Input<'_> {
    Commands::default().parse(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_command_itself_is_a_command() {
        assert_eq!(
            parse_input("/compact"),
            Input::Command(SlashCommand::Compact, "")
        );
        assert_eq!(
            parse_input("  /compact\n"),
            Input::Command(SlashCommand::Compact, "")
        );
        assert_eq!(
            parse_input("/mode  read-only \n"),
            Input::Command(SlashCommand::Mode, "read-only")
        );
        assert_eq!(
            parse_input("/model"),
            Input::Command(SlashCommand::Model, "")
        );
        assert_eq!(parse_input("compact"), Input::Prompt("compact"));
        assert_eq!(
            parse_input("/compact the file"),
            Input::Prompt("/compact the file")
        );
        assert_eq!(parse_input("/etc/hosts"), Input::Prompt("/etc/hosts"));
        assert_eq!(parse_input(" \n"), Input::Empty);
    }
}

#[cfg(test)]
mod prompt_tests {
    use dsh_tool_mcp::PromptArgument;

    use super::*;

    fn commands() -> Commands {
        let argument = |name: &str, required| PromptArgument {
            name: name.to_owned(),
            description: None,
            required,
        };
        let review = ServerPrompt {
            name: "review".to_owned(),
            description: Some("Reviews a file.".to_owned()),
            arguments: vec![argument("file", true), argument("focus", false)],
        };
        let hello = ServerPrompt {
            name: "hello".to_owned(),
            description: None,
            arguments: Vec::new(),
        };
        Commands {
            prompts: vec![("docs".to_owned(), vec![review, hello].into())],
        }
    }

    fn call(arguments: &[(&str, &str)]) -> Input<'static> {
        Input::ServerPrompt(PromptCall {
            server: "docs".to_owned(),
            prompt: "review".to_owned(),
            arguments: (arguments.iter())
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect(),
        })
    }

    #[test]
    fn a_servers_prompt_takes_its_arguments_by_name_or_in_order() {
        let commands = commands();
        assert_eq!(
            commands.parse("/docs:review file=x.rs"),
            call(&[("file", "x.rs")])
        );
        assert_eq!(
            commands.parse("/docs:review x.rs"),
            call(&[("file", "x.rs")])
        );
        assert_eq!(
            commands.parse("/docs:review x.rs the error paths"),
            call(&[("file", "x.rs"), ("focus", "the error paths")])
        );
        assert_eq!(
            commands.parse("/docs:review focus=tests x.rs"),
            call(&[("file", "x.rs"), ("focus", "tests")])
        );
        // A server the session does not have: a prompt for the model.
        assert_eq!(
            commands.parse("/web:review x"),
            Input::Prompt("/web:review x")
        );
        assert_eq!(
            commands.parse("/compact"),
            Input::Command(SlashCommand::Compact, "")
        );
    }

    #[test]
    fn a_prompt_command_that_cannot_run_says_what_is_wrong() {
        let commands = commands();
        let error = |input| match commands.parse(input) {
            Input::Invalid(error) => error.to_string(),
            other => panic!("{input}: {other:?}"),
        };
        assert_eq!(
            error("/docs:review focus=tests"),
            "`/docs:review` needs its argument `file` (as `file=…` or in its place)"
        );
        assert_eq!(
            error("/docs:reveiw a.rs"),
            "`/docs:reveiw`: MCP server `docs` has no prompt `reveiw`; it has `review`, `hello`"
        );
        assert_eq!(
            error("/docs:hello there"),
            "`/docs:hello` takes no arguments; `there` is more than that"
        );
    }

    #[test]
    fn the_list_has_the_built_in_commands_then_the_servers_prompts() {
        let listed = commands().listed();
        let names: Vec<&str> = listed.iter().map(|one| one.name.as_str()).collect();
        assert_eq!(
            names,
            ["compact", "mode", "model", "docs:review", "docs:hello"]
        );
        assert_eq!(listed[3].description, "Reviews a file.");
        assert_eq!(listed[3].hint.as_deref(), Some("file [focus]"));
        assert_eq!(listed[4].description, "Prompt `hello` of MCP server `docs`");
        assert_eq!(listed[4].hint, None);
    }
}
