//! The UI tests of `dsh-system-prompt-macros`. This crate has no code of
//! its own; `tests/ui.rs` is the product. It is a crate of its own so that
//! the macro crate, a proc-macro, has no dev-dependencies: those would be
//! built a second time, for the host.
