//! The macros' diagnostics, pinned: every mistake in `tests/ui/<macro>/`
//! must fail to build with exactly its `.stderr`, and every file in
//! `tests/ui/pass/` must build and run.
//!
//! trybuild builds the cases against this crate's dependencies and
//! dev-dependencies: the facade and the macros, nothing of the agent loop
//! or the benchmarks. Regenerate the snapshots with
//! `TRYBUILD=overwrite cargo test -p dsh-macros-ui-tests --test ui`,
//! then read every changed `.stderr`.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/prompt_section/*.rs");
    cases.compile_fail("tests/ui/prompt_context/*.rs");
    cases.compile_fail("tests/ui/prompt_variable/*.rs");
    cases.compile_fail("tests/ui/prompt_template/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
