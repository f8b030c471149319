//! The sections of an explanation: every section of the assembly with
//! its owner, and its bytes, tokens and share of the prompt — or why it
//! is not in the prompt ([`WhyNot`]).

use std::fmt;

use dsh_agent_loop::COMPACTION_SECTION;
use dsh_system_prompt::inspect::{RenderedPrompt, SEPARATOR_OWNER};
use dsh_system_prompt::{AssembledSection, Owner, PromptAssembly};

use crate::measure::tokens::{PromptTokens, Size};

/// One section of the assembly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionRow {
    /// Its order: the prompt is sorted by order, then by name.
    pub order: i32,
    /// Its name (`tool:bash`).
    pub name: String,
    /// Who owns it.
    pub owner: OwnerName,
    /// The tool it is bound to, if any.
    pub tool: Option<String>,
    /// Its place in the prompt, or why it has none.
    pub rendered: Result<Rendered, WhyNot>,
}

/// A part of the rendered system prompt: its bytes and tokens, and its
/// share of the prompt's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rendered {
    /// Its bytes and tokens.
    pub size: Size,
    /// Its share of the system prompt's bytes.
    pub share: Share,
}

/// The blank lines between the rendered sections: the renderer's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Separators {
    /// Who owns them ([`SEPARATOR_OWNER`]).
    pub owner: OwnerName,
    /// Their bytes and tokens.
    pub rendered: Rendered,
}

/// Why a section of the assembly is not in the rendered prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WhyNot {
    /// It is bound to a tool the agent does not have.
    ToolMissing {
        /// The tool.
        tool: String,
    },
    /// It is the compaction request's prompt
    /// ([`COMPACTION_SECTION`]), which an agent's prompt never renders.
    CompactionPrompt,
    /// Its text is empty once its variables are interpolated.
    Empty,
}

impl fmt::Display for WhyNot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ToolMissing { tool } => {
                write!(f, "bound to tool `{tool}`, which this agent does not have")
            }
            Self::CompactionPrompt => {
                f.write_str("the compaction request's prompt, not this agent's")
            }
            Self::Empty => f.write_str("empty after interpolation"),
        }
    }
}

/// A part's share of a whole, in tenths of a percent, rounded; `None`
/// when the whole is empty. `Display`: `10.9%`, or `-`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    /// The tenths of a percent.
    pub tenths: Option<usize>,
}

impl Share {
    /// `part`'s share of `whole`.
    pub fn of(part: usize, whole: usize) -> Self {
        // Integers, rounded: the same digits everywhere.
        Self {
            tenths: (whole != 0).then(|| (part * 1000 + whole / 2) / whole),
        }
    }
}

impl fmt::Display for Share {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.tenths {
            Some(tenths) => write!(f, "{}.{}%", tenths / 10, tenths % 10),
            None => f.write_str("-"),
        }
    }
}

/// An owner as an explanation names it: crate and item, without the file
/// and line, which move with every edit. `Display`: `` `item` of krate ``.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerName {
    /// The crate (`dsh-tool-bash`), or `deployment`.
    pub krate: String,
    /// The item (`dsh_tool_bash::EXIT_CODE_HABIT`), or the deployment's
    /// key.
    pub item: String,
}

impl From<&Owner> for OwnerName {
    fn from(owner: &Owner) -> Self {
        Self {
            krate: owner.krate.to_string(),
            item: owner.item.to_string(),
        }
    }
}

impl fmt::Display for OwnerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` of {}", self.item, self.krate)
    }
}

/// The separators of `prompt`, whose sections are `sections`, as `tokens`
/// counted them.
pub(super) fn separators(
    prompt: &RenderedPrompt,
    sections: &[SectionRow],
    tokens: &PromptTokens,
) -> Separators {
    let whole = prompt.text.len();
    let in_sections: usize = (sections.iter())
        .filter_map(|section| section.rendered.as_ref().ok())
        .map(|rendered| rendered.size.bytes)
        .sum();
    let bytes = whole - in_sections;
    Separators {
        owner: OwnerName::from(&SEPARATOR_OWNER),
        rendered: Rendered {
            size: Size {
                bytes,
                tokens: tokens.separators,
            },
            share: Share::of(bytes, whole),
        },
    }
}

/// Every section of `assembly`, in its order, as `prompt` rendered it
/// and `tokens` counted it.
pub(super) fn section_rows(
    assembly: &PromptAssembly,
    prompt: &RenderedPrompt,
    tokens: &PromptTokens,
) -> Vec<SectionRow> {
    let whole = prompt.text.len();
    let sizes = tokens.section_sizes(prompt);
    (assembly.sections.iter())
        .map(|section| SectionRow {
            order: section.order(),
            name: section.name().to_string(),
            owner: OwnerName::from(section.owner()),
            tool: section.tool().map(ToString::to_string),
            rendered: match sizes.get(section.name().as_str()).copied() {
                Some(size) => Ok(Rendered {
                    size,
                    share: Share::of(size.bytes, whole),
                }),
                None => Err(why_not_rendered(assembly, section)),
            },
        })
        .collect()
}

/// Why `section` of `assembly` is not in the rendered prompt.
fn why_not_rendered(assembly: &PromptAssembly, section: &AssembledSection) -> WhyNot {
    match section.tool() {
        Some(tool) if !assembly.has_tool(tool) => WhyNot::ToolMissing {
            tool: tool.to_string(),
        },
        _ if section.name().as_ref() == COMPACTION_SECTION => WhyNot::CompactionPrompt,
        _ => WhyNot::Empty,
    }
}

#[cfg(test)]
mod tests {
    use super::Share;

    #[test]
    fn a_share_is_in_rounded_tenths_and_nothing_of_an_empty_whole() {
        assert_eq!(Share::of(85, 781).to_string(), "10.9%");
        assert_eq!(Share::of(8, 781).to_string(), "1.0%");
        assert_eq!(Share::of(781, 781).to_string(), "100.0%");
        assert_eq!(Share::of(0, 781).to_string(), "0.0%");
        assert_eq!(Share::of(0, 0).to_string(), "-");
    }
}
