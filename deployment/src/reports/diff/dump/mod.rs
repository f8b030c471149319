//! The dump of `dsh prompt --format json`: the one owner of its format,
//! which this module both writes ([`write_dump`]) and reads back as a
//! side of a diff (`read`, for [`read_sides`](super::read_sides)).
//!
//! A dump is one JSON object, pretty-printed with two spaces an indent:
//! `format_version` ([`DUMP_FORMAT_VERSION`]), the assembly (`sections`,
//! `variables`, `tools`, `contexts`), `tokens`, `instructions`,
//! `mcp_servers` (when the prompt renders) and, last, `prefix` (a
//! [`Prefix`](super::Prefix), `null` when the prompt does not render).
//! Only `format_version` and `prefix` are read back; the other keys are
//! for people and other programs. The reader finds the keys it reports a
//! problem at where the writer puts them, so the two change together.

mod read;
mod write;

pub(super) use read::read_dump;
pub use write::write_dump;

/// The version of the format of `dsh prompt --format json` this dsh
/// writes (its `format_version`) and reads back as a side of a diff.
/// Version 1 is the first to carry a `prefix`; a dump without
/// `format_version` is older and has none.
pub const DUMP_FORMAT_VERSION: u32 = 1;
