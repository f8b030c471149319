//! `dsh schema`: the JSON Schema of `dsh.toml` on stdout, and what an
//! editor makes of it: Taplo (the checker of the TOML language server
//! "Even Better TOML", from npm) checks a file against it, and reports a
//! mistake once, where it is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use nix::fcntl::{Flock, FlockArg};

use crate::common;

#[test]
fn dsh_schema_prints_a_draft_2020_12_schema_of_the_deployment_file() {
    let output = common::dsh(&["schema"]);
    common::assert_status(&output, 0);
    let schema: serde_json::Value =
        serde_json::from_str(&common::stdout(&output)).expect("JSON on stdout");
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert!(
        schema["properties"]["agents"].is_object(),
        "no `agents`: {schema:#}"
    );
    // An unknown top-level key is refused, at the key (a schema no value
    // passes, rather than `false`: see the Taplo tests below).
    assert!(
        schema["additionalProperties"]["not"].is_object(),
        "{schema:#}"
    );
}

/// The Taplo the tests drive: its command line from npm, the checker of
/// the TOML language server editors run ("Even Better TOML"), pinned.
const TAPLO_PACKAGE: &str = "@taplo/cli@0.7.0";

/// Taplo's `taplo`, installed once under the target directory: the first
/// test to need it installs it with npm, holding a lock the other test
/// processes wait on.
fn taplo() -> PathBuf {
    static TAPLO: OnceLock<PathBuf> = OnceLock::new();
    TAPLO.get_or_init(install_taplo).clone()
}

fn install_taplo() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("taplo-cli-0.7.0");
    std::fs::create_dir_all(&dir).expect("the directory Taplo is installed in");
    let lock = std::fs::File::create(dir.join("install.lock")).expect("the install lock");
    let _lock = Flock::lock(lock, FlockArg::LockExclusive)
        .map_err(|(_, errno)| errno)
        .expect("the install lock taken");
    let bin = dir.join("node_modules/.bin/taplo");
    if bin.exists() {
        return bin;
    }
    let installed = Command::new("npm")
        .args([
            "install",
            "--no-save",
            "--no-audit",
            "--no-fund",
            "--prefix",
        ])
        .arg(&dir)
        .arg(TAPLO_PACKAGE)
        .output();
    match installed {
        Err(error) => panic!(
            "this test checks `dsh schema` with Taplo, which it installs with npm \
             (`npm install {TAPLO_PACKAGE}`), but npm cannot be run: {error}; \
             install Node.js and npm"
        ),
        Ok(output) if !output.status.success() => panic!(
            "`npm install --prefix {} {TAPLO_PACKAGE}` failed:\n{}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr)
        ),
        Ok(_) => {}
    }
    assert!(bin.exists(), "npm installed no {}", bin.display());
    bin
}

/// One error Taplo printed: its message, and where (line, column; from
/// 1, of the text as the case wrote it).
#[derive(Debug, PartialEq)]
struct TaploError {
    message: String,
    line: usize,
    column: usize,
}

/// What Taplo checks, by file name: every example deployment, and the
/// mistakes the tests below look for. One run checks them all: each run
/// starts Node and Taplo's 35 MB WebAssembly build, seconds on a busy
/// machine.
fn taplo_cases() -> Vec<(String, String)> {
    let mut cases = Vec::new();
    for entry in std::fs::read_dir(common::workspace().join("examples")).expect("examples/") {
        let path = entry.expect("an entry").path();
        if let Ok(text) = std::fs::read_to_string(path.join("dsh.toml")) {
            let name = path.file_name().expect("a name").to_string_lossy();
            cases.push((format!("example-{name}.toml"), text));
        }
    }
    assert!(cases.len() >= 4, "the examples: {cases:?}");
    cases.push(("typo.toml".to_owned(), typo()));
    cases.push(("wrong.toml".to_owned(), wrong_values()));
    cases
}

/// The coding-agent example with `permision` for `permission`.
fn typo() -> String {
    format!("{}\n[tools.bash]\npermision = \"ask\"\n", coding_agent())
}

/// The coding-agent example with a value of the wrong type and one a
/// rule of `dsh check` refuses.
fn wrong_values() -> String {
    format!(
        "{}\n[tools.bash]\npermission = 1\n\n[mcp.docs]\ncommand = [\"docs-server\"]\n\
         startup_timeout_secs = 0\n",
        coding_agent()
    )
}

/// The errors Taplo finds in case `name` of [`taplo_cases`].
fn taplo_errors_of(name: &str) -> &'static [TaploError] {
    static CHECKED: OnceLock<BTreeMap<String, Vec<TaploError>>> = OnceLock::new();
    let checked = CHECKED.get_or_init(|| taplo_check(&taplo_cases()));
    checked.get(name).map_or(&[], Vec::as_slice)
}

/// `taplo check` of `cases` (file name, text) against the schema `dsh
/// schema` prints, as a user sets it up (`#:schema` at the top of the
/// file): the errors of each file with any, each once per place Taplo
/// shows it at.
fn taplo_check(cases: &[(String, String)]) -> BTreeMap<String, Vec<TaploError>> {
    let dir = tempfile::tempdir().expect("a directory");
    let output = common::dsh(&["schema"]);
    common::assert_status(&output, 0);
    std::fs::write(dir.path().join("dsh.schema.json"), &output.stdout).expect("written");
    let mut command = Command::new(taplo());
    command.args(["check", "--colors", "never", "--no-auto-config"]);
    for (name, text) in cases {
        let file = dir.path().join(name);
        std::fs::write(&file, format!("#:schema ./dsh.schema.json\n{text}")).expect("written");
        command.arg(file);
    }
    let output = command.output().expect("taplo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let errors = taplo_errors(&stderr);
    assert_eq!(
        output.status.success(),
        errors.is_empty(),
        "taplo's status and its errors disagree:\n{stderr}"
    );
    errors
}

/// The errors of Taplo's report, by file name: `error: <message>`, then
/// `┌─ <file>:<line>:<column>`. Lines are of the file as written, less
/// its `#:schema` line.
fn taplo_errors(report: &str) -> BTreeMap<String, Vec<TaploError>> {
    let mut errors: BTreeMap<String, Vec<TaploError>> = BTreeMap::new();
    let mut lines = report.lines();
    while let Some(line) = lines.next() {
        let Some(message) = line.strip_prefix("error: ") else {
            continue;
        };
        let place = lines
            .next()
            .and_then(|next| next.trim().strip_prefix("┌─ "))
            .unwrap_or_else(|| panic!("no place after `{line}`:\n{report}"));
        let mut parts = place.rsplitn(3, ':');
        let column = parts.next().and_then(|n| n.parse().ok()).expect("a column");
        let line: usize = parts.next().and_then(|n| n.parse().ok()).expect("a line");
        let file = Path::new(parts.next().expect("a file"))
            .file_name()
            .expect("a name");
        errors
            .entry(file.to_string_lossy().into_owned())
            .or_default()
            .push(TaploError {
                message: message.to_owned(),
                line: line - 1,
                column,
            });
    }
    errors
}

/// The coding-agent example, every line of it.
fn coding_agent() -> String {
    std::fs::read_to_string(common::workspace().join("examples/coding-agent/dsh.toml"))
        .expect("the example")
}

/// The line and column (from 1) where the value of `key = ` is in `text`.
fn value_of(text: &str, key_and_value: &str) -> (usize, usize) {
    let at = text.find(key_and_value).expect("the text has it");
    let line = text[..at].matches('\n').count() + 1;
    let column = at - text[..at].rfind('\n').map_or(0, |newline| newline + 1) + 1;
    let key = key_and_value.split(" = ").next().unwrap_or_default();
    (line, column + key.len() + " = ".len())
}

#[test]
fn taplo_accepts_every_example_deployment() {
    for (name, _) in taplo_cases() {
        if name.starts_with("example-") {
            assert_eq!(taplo_errors_of(&name), [], "{name}");
        }
    }
}

#[test]
fn taplo_reports_a_misspelled_key_once_on_its_line() {
    let errors = taplo_errors_of("typo.toml");
    let place = value_of(&typo(), "permision = \"ask\"");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!((errors[0].line, errors[0].column), place, "{errors:#?}");
    // The message names the table's keys, so the right one is in sight.
    assert!(
        errors[0].message.contains("unknown key") && errors[0].message.contains("`permission`"),
        "{errors:#?}"
    );
}

#[test]
fn taplo_reports_a_wrong_type_and_a_check_rule_once_at_the_value() {
    let errors = taplo_errors_of("wrong.toml");
    let text = wrong_values();
    let places: Vec<(usize, usize)> = errors.iter().map(|e| (e.line, e.column)).collect();
    assert_eq!(
        places,
        [
            value_of(&text, "permission = 1"),
            value_of(&text, "startup_timeout_secs = 0")
        ],
        "{errors:#?}"
    );
    assert!(
        errors[0]
            .message
            .contains("is not one of [\"allow\",\"ask\"]"),
        "{errors:#?}"
    );
    assert!(errors[1].message.contains("minimum of 0"), "{errors:#?}");
}
