//! The cost of installing static contributions: `SystemPrompt::new()` with
//! the 1,000 sections (and one variable) of `dsh-fixture-thousand-sections`
//! linked.
//!
//! ```text
//! cargo bench -p dsh-benches --bench install_static
//! ```
//!
//! Target (issue 3): under 1 ms.

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use dsh_fixture_thousand_sections as fixture;
use dsh_system_prompt::SystemPrompt;

fn install(c: &mut Criterion) {
    // Once, outside timing: every static section of the fixture is there.
    let prompt = SystemPrompt::new().expect("the fixture's statics install");
    assert_eq!(prompt.section_names().len(), fixture::SECTIONS);
    assert_eq!(prompt.variable_names().len(), 1);

    c.bench_function("install_static/1000_sections", |b| {
        b.iter(|| black_box(SystemPrompt::new().expect("install")))
    });
}

// Criterion's default of 100 samples: one install is well under 1 ms.
fn main() {
    dsh_benches::main(100, Duration::from_secs(5), &[install]);
}
