//! Two crates that declare the same section name each build (no
//! compilation sees both), so the duplicate is caught when the registry is
//! built: `SystemPrompt::new()` fails, naming both crates and declarations.

// Linked only for their static contributions.
use dsh_fixture_duplicate_a as _;
use dsh_fixture_duplicate_b as _;

use dsh_system_prompt::{RegistryError, SystemPrompt};

#[test]
fn a_section_name_declared_by_two_crates_fails_the_registry_naming_both() {
    let error = SystemPrompt::new().expect_err("the fixtures declare `fixture:duplicate` twice");
    let RegistryError::DuplicateStatic {
        kind,
        name,
        first,
        second,
    } = &error
    else {
        panic!("expected a duplicate static, got {error:?}");
    };
    assert_eq!(
        (*kind, name.as_str()),
        (dsh_system_prompt::NameKind::Section, "fixture:duplicate")
    );
    let mut crates = [first.krate.as_str(), second.krate.as_str()];
    crates.sort_unstable();
    assert_eq!(
        crates,
        ["dsh-fixture-duplicate-a", "dsh-fixture-duplicate-b"]
    );

    let message = error.to_string();
    for needle in [
        "`fixture:duplicate`",
        "dsh-fixture-duplicate-a",
        "dsh-fixture-duplicate-b",
        "fixtures/duplicate-a/src/lib.rs:9",
        "fixtures/duplicate-b/src/lib.rs:12",
    ] {
        assert!(
            message.contains(needle),
            "{needle:?} missing from: {message}"
        );
    }
}
