//! The MCP server the tests of dsh run (`dsh-mcp-test-server`), on rmcp's
//! own server side, so `cargo test` needs neither Python nor Node. A crate
//! of its own that no shipped binary depends on: `cargo tree -p dsh-cli -e
//! normal` does not show it. Tests start its binary ([`binary`]); a
//! benchmark may serve in its own process ([`main`]).
//!
//! What it serves, and the arguments that shape it, are in [`server`];
//! [`oauth`] starts the OAuth test servers (an authorization server and
//! an MCP server it protects, on the official Python SDK).
#![allow(clippy::print_stderr, reason = "a test server's log is its stderr")]
#![allow(missing_docs, missing_debug_implementations, reason = "a test fixture")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::SystemTime;

pub mod oauth;
pub mod server;

pub use server::main;

/// The name of the server's binary.
pub const BINARY: &str = "dsh-mcp-test-server";

/// The path of the server's binary, for a test of another package to
/// start (Cargo gives a package's own tests only its own binaries).
///
/// `cargo test --workspace` builds it beside the calling test's
/// executable (this package has an integration test, so Cargo builds its
/// binary). When it is not there, or is older than this crate's sources
/// (`cargo test -p dsh-cli` after a change of the server), it is built
/// now, once per test process, with the `cargo` running the tests, into
/// the same target directory and profile.
///
/// # Panics
///
/// When the binary cannot be built: a test's set-up, with the build's
/// output.
pub fn binary() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(locate_or_build).clone()
}

fn locate_or_build() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's executable");
    // `<target>/<profile>/deps/<test>`.
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test executable in `<target>/<profile>/deps`");
    let path = profile_dir.join(BINARY);
    if modified(&path).is_some_and(|built| built >= newest_source()) {
        return path;
    }
    let target = profile_dir.parent().expect("a target directory");
    let profile = match profile_dir.file_name().and_then(|name| name.to_str()) {
        Some("debug") | None => "dev",
        Some(other) => other,
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "-p",
            "dsh-mcp-test-server",
            "--bin",
            BINARY,
        ])
        .arg("--profile")
        .arg(profile)
        .arg("--target-dir")
        .arg(target)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "building {BINARY} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    path
}

/// When this crate's newest source file was changed.
fn newest_source() -> SystemTime {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let files = std::fs::read_dir(src)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path());
    files
        .chain([manifest])
        .filter_map(|path| modified(&path))
        .max()
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path)
        .and_then(|meta| meta.modified())
        .ok()
}
