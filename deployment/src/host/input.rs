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
    /// `/mode ID`: switch the session's mode (`host::modes`); without an
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
    pub fn argument(self) -> Option<&'static str> {
        match self {
            Self::Compact => None,
            Self::Mode => Some("mode id"),
            Self::Model => Some("model"),
        }
    }
}

/// Every slash command, in the order a front end lists them.
pub const SLASH_COMMANDS: &[SlashCommand] = &[
    SlashCommand::Compact,
    SlashCommand::Mode,
    SlashCommand::Model,
];

/// One input, read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input<'a> {
    /// Nothing but white space: no turn.
    Empty,
    /// A slash command, alone on its input (surrounding white space
    /// aside), with its argument (empty when none was given; a command
    /// that takes none has none).
    Command(SlashCommand, &'a str),
    /// A prompt for the model, as typed (a slash that names no command
    /// is a prompt too: `/etc/hosts is wrong` asks the model).
    Prompt(&'a str),
}

/// Reads one input: a command when the whole of it, trimmed, is `/name`
/// of a command (then its argument, for a command that takes one); else
/// a prompt.
pub fn parse_input(input: &str) -> Input<'_> {
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
    let command = SLASH_COMMANDS.iter().find(|command| command.name() == name);
    match command {
        Some(&command) if argument.is_empty() || command.argument().is_some() => {
            Input::Command(command, argument)
        }
        _ => Input::Prompt(input),
    }
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
