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
    /// `#[prompt_section(complete)]`: the whole prompt while active.
    pub complete: bool,
}

impl StaticSection {
    /// The section, complete, as `#[prompt_section(complete)]` writes it.
    pub const fn complete(mut self) -> Self {
        self.complete = true;
        self
    }
}

/// A `#[prompt_variable]` item.
#[doc(hidden)]
#[derive(Debug)]
pub struct StaticVariable {
    pub name: &'static str,
    pub provider: fn(&AssembleContext) -> Option<String>,
    pub owner: StaticOwner,
}

/// A `#[prompt_context]` item: a runtime context, declared like a section.
#[doc(hidden)]
#[derive(Debug)]
pub struct StaticContext(pub StaticSection);

inventory::collect!(StaticSection);
inventory::collect!(StaticContext);
inventory::collect!(StaticVariable);

pub(crate) struct StaticSectionEntry {
    pub(crate) name: Text,
    order: i32,
    tool: Option<&'static str>,
    text: StaticText,
    pub(crate) owner: Owner,
    complete: bool,
}

impl StaticSectionEntry {
    pub(crate) fn prompt_section(&self) -> PromptSection {
        let text = match self.text {
            StaticText::Fixed(text) => SectionText::Fixed(Text::from_static(text)),
            StaticText::Provided(provider) => SectionText::Provided(std::sync::Arc::new(provider)),
        };
        let mut section = PromptSection::with_text(self.name.clone(), self.order, text)
            .owned_by(self.owner.clone());
        if let Some(tool) = self.tool {
            section = section.bound_to_tool(tool);
        }
        if self.complete {
            section = section.complete();
        }
        section
    }
}

pub(crate) struct StaticVariableEntry {
    pub(crate) name: &'static str,
    pub(crate) provider: fn(&AssembleContext) -> Option<String>,
    pub(crate) owner: Owner,
}

pub(crate) fn static_section_entry(section: &StaticSection) -> StaticSectionEntry {
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
        complete: section.complete,
    }
}

pub(crate) fn variable_entry(variable: &StaticVariable) -> StaticVariableEntry {
    StaticVariableEntry {
        name: variable.name,
        provider: variable.provider,
        owner: variable.owner.owner(),
    }
}

/// Every linked static section, in render order: `(order, name)`.
///
/// Sorted here, while the entries are small, so that the registry's own
/// sort meets sorted runs and only merges them.
pub(crate) fn sections() -> Vec<StaticSectionEntry> {
    // `inventory` is a linked list with no size hint: count it first, so
    // the vector is allocated once.
    let count = inventory::iter::<StaticSection>.into_iter().count();
    let mut sections = Vec::with_capacity(count);
    sections.extend(
        inventory::iter::<StaticSection>
            .into_iter()
            .map(static_section_entry),
    );
    sections
        .sort_unstable_by(|a: &StaticSectionEntry, b| (a.order, &a.name).cmp(&(b.order, &b.name)));
    sections
}

/// Every linked static runtime context (few: no presorting).
pub(crate) fn contexts() -> Vec<StaticSectionEntry> {
    inventory::iter::<StaticContext>
        .into_iter()
        .map(|context| static_section_entry(&context.0))
        .collect()
}

pub(crate) fn variables() -> Vec<StaticVariableEntry> {
    inventory::iter::<StaticVariable>
        .into_iter()
        .map(variable_entry)
        .collect()
}

/// Fails on a name declared twice, naming both declarations. A duplicate
/// found, the declarations are sorted and the first duplicate in that
/// order is reported, so the message does not depend on link order.
pub(crate) fn check_unique<'a, N: AsRef<str>>(
    kind: crate::NameKind,
    declarations: impl Iterator<Item = (N, &'a Owner)>,
) -> Result<(), RegistryError> {
    let mut declarations: Vec<(N, &Owner)> = declarations.collect();
    // The common case, all distinct, in one hashing pass; only a duplicate
    // pays for the sort that makes its report independent of link order.
    let mut seen =
        rustc_hash::FxHashSet::with_capacity_and_hasher(declarations.len(), Default::default());
    if declarations
        .iter()
        .all(|(name, _)| seen.insert(name.as_ref()))
    {
        return Ok(());
    }
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
                first: Box::new(pair[0].1.clone()),
                second: Box::new(pair[1].1.clone()),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SystemPrompt;

    fn owner(krate: &'static str, line: u32) -> Owner {
        Owner::new(
            krate,
            format!("{}::HABIT", krate.replace('-', "_")),
            "src/lib.rs",
            line,
        )
    }

    fn static_section(name: &'static str, order: i32, krate: &'static str) -> StaticSectionEntry {
        StaticSectionEntry {
            name: Text::from_static(name),
            order,
            tool: None,
            text: StaticText::Fixed("text"),
            owner: owner(krate, 7),
            complete: false,
        }
    }

    #[test]
    fn a_name_declared_by_two_crates_fails_naming_both_whatever_the_link_order() {
        let a = owner("dsh-tool-bash", 10);
        let b = owner("dsh-tool-fs", 20);
        let forward = check_unique(
            crate::NameKind::Section,
            [("tool:x", &a), ("tool:y", &b), ("tool:x", &b)].into_iter(),
        );
        let backward = check_unique(
            crate::NameKind::Section,
            [("tool:x", &b), ("tool:y", &b), ("tool:x", &a)].into_iter(),
        );
        for result in [&forward, &backward] {
            let Err(RegistryError::DuplicateStatic {
                kind,
                name,
                first,
                second,
            }) = result
            else {
                panic!("expected DuplicateStatic, got {result:?}");
            };
            assert_eq!((*kind, name.as_str()), (crate::NameKind::Section, "tool:x"));
            assert_eq!(
                (&**first, &**second),
                (&a, &b),
                "sorted, so link order does not matter"
            );
        }
        let message = forward.unwrap_err().to_string();
        for needle in [
            "`tool:x`",
            "dsh-tool-bash",
            "dsh-tool-fs",
            "src/lib.rs:10",
            "src/lib.rs:20",
        ] {
            assert!(
                message.contains(needle),
                "{needle:?} missing from {message}"
            );
        }
        assert!(
            check_unique(
                crate::NameKind::Variable,
                [("a", &a), ("b", &a)].into_iter()
            )
            .is_ok()
        );
    }

    /// Installs static sections and contexts, no variables, into `prompt`.
    fn install(
        prompt: &SystemPrompt,
        sections: Vec<StaticSectionEntry>,
        contexts: Vec<StaticSectionEntry>,
    ) -> Result<(), RegistryError> {
        prompt.install_static(sections, contexts, Vec::new())
    }

    /// Whether `err` is a duplicate static of `kind`.
    fn is_duplicate(err: &RegistryError, of: crate::NameKind) -> bool {
        matches!(err, RegistryError::DuplicateStatic { kind, .. } if *kind == of)
    }

    #[test]
    fn installing_duplicate_statics_fails_and_installs_nothing() {
        let prompt = SystemPrompt::empty();
        let sections = vec![
            static_section("tool:x", 1, "dsh-tool-bash"),
            static_section("tool:x", 2, "dsh-tool-fs"),
        ];
        let err = install(&prompt, sections, Vec::new()).unwrap_err();
        assert!(is_duplicate(&err, crate::NameKind::Section), "{err:?}");
        assert!(prompt.section_names().is_empty());
    }

    #[test]
    fn installed_statics_sort_by_order_then_name_whatever_the_link_order() {
        let prompt = SystemPrompt::empty();
        let sections = vec![
            static_section("c", 0, "c"),
            static_section("a", 5, "a"),
            static_section("b", 0, "b"),
            static_section("z", -1, "z"),
        ];
        install(&prompt, sections, Vec::new()).unwrap();
        assert_eq!(prompt.section_names(), ["z", "b", "c", "a"]);
    }

    #[test]
    fn a_context_and_a_section_may_share_a_name_but_two_contexts_may_not() {
        let (section, context) = (
            static_section("todo", 1, "a"),
            static_section("todo", 1, "b"),
        );
        install(&SystemPrompt::empty(), vec![section], vec![context]).unwrap();
        let contexts = vec![
            static_section("todo", 1, "a"),
            static_section("todo", 2, "b"),
        ];
        let err = install(&SystemPrompt::empty(), Vec::new(), contexts).unwrap_err();
        assert!(is_duplicate(&err, crate::NameKind::Context), "{err:?}");
    }
}
