//! The macros' diagnostics, pinned: every mistake in `ui/<macro>/` must
//! fail to build with exactly its `.stderr`, and every file in `ui/pass/`
//! must build and run.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/prompt_section/*.rs");
    cases.compile_fail("ui/prompt_variable/*.rs");
    cases.compile_fail("ui/prompt_template/*.rs");
    cases.pass("ui/pass/*.rs");
}
