//! What a person types, read the one way every front end reads it: a
//! slash command the host knows, or a prompt for the model. `dsh run`
//! reads it from a line of stdin, `dsh acp` from a prompt's text, and an
//! editor learns the list from [`SLASH_COMMANDS`].

/// A command a session takes instead of a prompt.
///
/// Exhaustive on purpose: a command added here fails to compile in every
/// front end that does not run it yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlashCommand {
    /// `/compact`: the loop's compaction, on request.
    Compact,
}

impl SlashCommand {
    /// Its name, without the slash.
    pub fn name(self) -> &'static str {
        match self {
            Self::Compact => "compact",
        }
    }

    /// What it does, in one line, as a front end lists it.
    pub fn description(self) -> &'static str {
        match self {
            Self::Compact => {
                "Compact the conversation: summarize it so far, keeping the system prompt and \
                 tools as they are"
            }
        }
    }
}

/// Every slash command, in the order a front end lists them.
pub const SLASH_COMMANDS: &[SlashCommand] = &[SlashCommand::Compact];

/// One input, read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input<'a> {
    /// Nothing but white space: no turn.
    Empty,
    /// A slash command, alone on its input (surrounding white space
    /// aside).
    Command(SlashCommand),
    /// A prompt for the model, as typed (a slash that names no command
    /// is a prompt too: `/etc/hosts is wrong` asks the model).
    Prompt(&'a str),
}

/// Reads one input: a command when the whole of it, trimmed, is `/name`
/// of a command; else a prompt.
pub fn parse_input(input: &str) -> Input<'_> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Input::Empty;
    }
    let command = trimmed
        .strip_prefix('/')
        .and_then(|name| SLASH_COMMANDS.iter().find(|command| command.name() == name));
    match command {
        Some(&command) => Input::Command(command),
        None => Input::Prompt(input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_command_itself_is_a_command() {
        assert_eq!(
            parse_input("/compact"),
            Input::Command(SlashCommand::Compact)
        );
        assert_eq!(
            parse_input("  /compact\n"),
            Input::Command(SlashCommand::Compact)
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
