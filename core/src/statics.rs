//! Static contributions: what the macros register through `inventory`.
//!
//! `inventory` gives no order, and links only crates the final binary
//! references; installation therefore sorts everything itself, and a crate
//! whose only contributions are static is linked with `use that_crate as _;`.

use crate::section::SectionText;
use crate::{AssembleContext, Owner, PromptSection, RegistryError, Text};

/// Where a static contribution is declared.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct StaticOwner {
    /// `env!("CARGO_PKG_NAME")` of the declaring crate.
    pub krate: &'static str,
    /// `module_path!()` of the item.
    pub module: &'static str,
    /// The item's identifier.
    pub item: &'static str,
    /// `file!()`.
    pub file: &'static str,
    /// `line!()`.
    pub line: u32,
}

impl StaticOwner {
    fn owner(&self) -> Owner {
        Owner::new(
            self.krate,
            format!("{}::{}", self.module, self.item),
            self.file,
            self.line,
        )
    }
}

/// The text of a static section.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum StaticText {
    /// A `const` or `static` `&str`.
    Fixed(&'static str),
    /// A `fn(&AssembleContext) -> String`.
    Provided(fn(&AssembleContext) -> String),
}

/// A `#[prompt_section]` item.
#[doc(hidden)]
#[derive(Debug)]
pub struct StaticSection {
    /// The explicit name; `None` derives it from the item's path.
    pub name: Option<&'static str>,
    pub order: i32,
    pub tool: Option<&'static str>,
    pub text: StaticText,
    pub owner: StaticOwner,
}

/// A `#[prompt_variable]` item.
#[doc(hidden)]
#[derive(Debug)]
pub struct StaticVariable {
    pub name: &'static str,
    pub provider: fn(&AssembleContext) -> Option<String>,
    pub owner: StaticOwner,
}

inventory::collect!(StaticSection);
inventory::collect!(StaticVariable);

pub(crate) struct StaticSectionEntry {
    pub(crate) name: Text,
    order: i32,
    tool: Option<&'static str>,
    text: StaticText,
    pub(crate) owner: Owner,
}

impl StaticSectionEntry {
    pub(crate) fn prompt_section(&self) -> PromptSection {
        let text = match self.text {
            StaticText::Fixed(text) => SectionText::Fixed(Text::from_static(text)),
            StaticText::Provided(provider) => SectionText::Provided(std::sync::Arc::new(provider)),
        };
        let section = PromptSection::with_text(self.name.clone(), self.order, text)
            .owned_by(self.owner.clone());
        match self.tool {
            Some(tool) => section.bound_to_tool(tool),
            None => section,
        }
    }
}

pub(crate) struct StaticVariableEntry {
    pub(crate) name: &'static str,
    pub(crate) provider: fn(&AssembleContext) -> Option<String>,
    pub(crate) owner: Owner,
}

pub(crate) fn section_entry(section: &StaticSection) -> StaticSectionEntry {
    let owner = section.owner.owner();
    let name = match section.name {
        Some(name) => Text::from_static(name),
        None => owner.item.clone(),
    };
    StaticSectionEntry {
        name,
        order: section.order,
        tool: section.tool,
        text: section.text,
        owner,
    }
}

pub(crate) fn variable_entry(variable: &StaticVariable) -> StaticVariableEntry {
    StaticVariableEntry {
        name: variable.name,
        provider: variable.provider,
        owner: variable.owner.owner(),
    }
}

pub(crate) fn sections() -> Vec<StaticSectionEntry> {
    inventory::iter::<StaticSection>
        .into_iter()
        .map(section_entry)
        .collect()
}

pub(crate) fn variables() -> Vec<StaticVariableEntry> {
    inventory::iter::<StaticVariable>
        .into_iter()
        .map(variable_entry)
        .collect()
}

/// Fails on the first name declared twice, naming both declarations. The
/// declarations are sorted first, so the message does not depend on link
/// order.
pub(crate) fn check_unique<'a, N: AsRef<str>>(
    kind: &'static str,
    declarations: impl Iterator<Item = (N, &'a Owner)>,
) -> Result<(), RegistryError> {
    let mut declarations: Vec<(N, &Owner)> = declarations.collect();
    declarations.sort_by(|a, b| {
        (a.0.as_ref(), &a.1.krate, &a.1.file, a.1.line).cmp(&(
            b.0.as_ref(),
            &b.1.krate,
            &b.1.file,
            b.1.line,
        ))
    });
    for pair in declarations.windows(2) {
        if pair[0].0.as_ref() == pair[1].0.as_ref() {
            return Err(RegistryError::DuplicateStatic {
                kind,
                name: pair[0].0.as_ref().to_owned(),
                first: pair[0].1.clone(),
                second: pair[1].1.clone(),
            });
        }
    }
    Ok(())
}
