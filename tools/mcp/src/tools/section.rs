//! A server's `instructions` as the prompt section `mcp:<server>`.

use dsh_system_prompt::{AssembledSection, Owner};

use crate::ServerConfig;

/// The order of every `mcp:<server>` section: in the tool guidance band
/// (100–199), after the built-in tools' guidance.
pub const MCP_SECTION_ORDER: i32 = 150;

/// The most bytes of a server's instructions the prompt carries.
pub const MAX_INSTRUCTIONS: usize = 4096;

/// The section's name for server `server`: `mcp:<server>`.
pub fn section_name(server: &str) -> String {
    format!("mcp:{server}")
}

/// The owner of server `config`'s section: the server (its name), what it
/// is (its command line or URL), and where it is declared.
pub fn server_owner(config: &ServerConfig) -> Owner {
    let (file, line) = config
        .declared_at
        .clone()
        .unwrap_or_else(|| ("session/new".to_owned(), 0));
    Owner::new(
        format!("MCP server `{}`", config.name),
        config.origin(),
        file,
        line,
    )
}

/// A server's instructions, ready to be a section.
#[derive(Clone, Debug)]
pub(crate) struct InstructionsSection {
    /// The text the prompt shows: the server's, cut with a marker.
    pub(crate) text: String,
    /// The section `mcp:<server>` of `text`, verbatim and owned by the
    /// server, bound to no tool yet: each assembly binds a copy to the
    /// server's first tool it sends.
    pub(crate) section: AssembledSection,
    /// How many bytes the server sent: more than [`MAX_INSTRUCTIONS`]
    /// when they were cut.
    pub(crate) sent_bytes: usize,
}

/// The section of `instructions`: verbatim, cut at [`MAX_INSTRUCTIONS`]
/// bytes (at a character boundary) with a marker saying so.
pub(crate) fn instructions_section(
    config: &ServerConfig,
    instructions: &str,
) -> InstructionsSection {
    let text = if instructions.len() > MAX_INSTRUCTIONS {
        let mut cut = MAX_INSTRUCTIONS;
        while !instructions.is_char_boundary(cut) {
            cut -= 1;
        }
        format!(
            "{}\n[… cut: dsh keeps the first {cut} of the {} bytes of MCP server `{}`'s instructions]",
            &instructions[..cut],
            instructions.len(),
            config.name
        )
    } else {
        instructions.to_owned()
    };
    let mut section =
        AssembledSection::verbatim(section_name(&config.name), MCP_SECTION_ORDER, &text);
    section.set_owner(server_owner(config));
    InstructionsSection {
        text,
        section,
        sent_bytes: instructions.len(),
    }
}
