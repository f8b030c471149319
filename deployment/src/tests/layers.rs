//! The crate's rooms are layers, and a room imports only its own layer or
//! lower ones: what a room means can be read, and changed, knowing only
//! what is under it, and no room is a catch-all every other one imports
//! while it imports them.
//!
//! The check reads every source file of the crate and each path it names
//! in code: `crate::<room>…` (a grouped `use crate::{…}` by each of its
//! items), `super::…` resolved against the file's module, and a name the
//! crate root re-exports (`crate::Problem`) by the room it comes from.
//! Comments are not read, nor unit tests (`#[cfg(test)] mod … { … }`),
//! whose fixtures may come from any layer; nor `src/tests/`, which tests
//! the crate through its public API.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The rooms, bottom layer first.
const LAYERS: &[&[&str]] = &[
    // The foundation: problems, and measurements of requests.
    &["problem", "measure"],
    // What a child may see or do, and what needs a yes.
    &["policy"],
    // What a session brings from outside the binary.
    &["facts"],
    // The deployment file.
    &["file"],
    // The deployment brought to life.
    &["adapter", "runtime"],
    // One agent hosted for a front end, and its lifecycle.
    &["host"],
    // What happens between opening a session and closing it.
    &["session"],
    // Findings and comparisons.
    &["reports"],
];

/// The layer of `room`, if it is one.
fn layer_of(room: &str) -> Option<usize> {
    LAYERS.iter().position(|rooms| rooms.contains(&room))
}

/// The crate's sources: `src/`.
fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let entries = std::fs::read_dir(dir).unwrap_or_else(|error| panic!("{dir:?}: {error}"));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The module path of the file at `relative` (to `src/`): `host/store.rs`
/// is `host::store`, `reports/check/mod.rs` is `reports::check`.
fn module_of(relative: &Path) -> Vec<String> {
    let mut module: Vec<String> = (relative.components())
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    let file = module.pop().expect("a file name");
    let stem = file.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        module.push(stem.to_owned());
    }
    module
}

/// The names the crate root re-exports, by the room each comes from:
/// `pub use problem::{Problem, SourceFile};` in `lib.rs`.
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for statement in code(lib).split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((room, rest)) = path.split_once("::") else {
            continue;
        };
        let rest = rest.trim_start_matches('{').trim_end_matches('}');
        for item in rest.split(',') {
            let last = item.rsplit("::").next().unwrap_or(item);
            let name = last.rsplit(" as ").next().unwrap_or(last).trim();
            if !name.is_empty() {
                names.insert(name.to_owned(), room.trim().to_owned());
            }
        }
    }
    names
}

/// `text` without its comment lines and its unit-test modules: the code
/// the crate is built from.
fn code(text: &str) -> String {
    let mut kept = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line == "#[cfg(test)]"
            && let Some(next) = lines.peek()
            && next.starts_with("mod ")
            && next.ends_with('{')
        {
            // A top-level item's closing brace is alone at column 0.
            lines.by_ref().find(|line| *line == "}");
            continue;
        }
        if line.trim_start().starts_with("//") {
            continue;
        }
        kept.push_str(line);
        kept.push('\n');
    }
    kept
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The first segments of the path, or of each item of the group, that
/// `rest` starts with: `file::Deployment` gives `file`, `{file, host::Host}`
/// gives `file` and `host`.
fn first_segments(rest: &str) -> Vec<String> {
    let rest = rest.trim_start();
    let Some(group) = rest.strip_prefix('{') else {
        let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
        return if name.is_empty() { vec![] } else { vec![name] };
    };
    let mut segments = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (at, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                segments.extend(first_segments(&group[start..at]));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                segments.extend(first_segments(&group[start..at]));
                start = at + 1;
            }
            _ => {}
        }
    }
    segments
}

/// The rooms the code of the file at `relative` names, each with the
/// text that names it: `crate::…`, and `super::…` that reaches the crate
/// root.
fn rooms_named(
    relative: &Path,
    text: &str,
    root: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    let module = module_of(relative);
    let code = code(text);
    let mut named = Vec::new();
    for (at, _) in code
        .match_indices("crate::")
        .chain(code.match_indices("super::"))
    {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| is_ident(c) || c == ':') {
            // Part of a longer path: `dsh_crate::`, or the second `super::`.
            continue;
        }
        let mut rest = &code[at..];
        let mut base = module.len();
        if rest.starts_with("super::") {
            while let Some(after) = rest.strip_prefix("super::") {
                base = base.saturating_sub(1);
                rest = after;
            }
            if base > 0 {
                // Inside the file's own room.
                continue;
            }
        } else {
            rest = &rest["crate::".len()..];
        }
        let shown: String = code[at..]
            .chars()
            .take_while(|c| *c != ';' && *c != '\n')
            .collect();
        for segment in first_segments(rest) {
            let room = root.get(&segment).cloned().unwrap_or(segment);
            if layer_of(&room).is_some() {
                named.push((room, shown.clone()));
            }
        }
    }
    named
}

/// Each import of the file at `relative` (to `src/`) from a room above its
/// own, said.
fn upward_imports(relative: &Path, text: &str, root: &BTreeMap<String, String>) -> Vec<String> {
    let module = module_of(relative);
    let Some(own) = module.first() else {
        return vec![];
    };
    let Some(own_layer) = layer_of(own) else {
        return vec![format!(
            "`{}`: room `{own}` is in no layer of `tests/layers.rs`",
            relative.display()
        )];
    };
    (rooms_named(relative, text, root).into_iter())
        .filter(|(room, _)| layer_of(room).is_some_and(|layer| layer > own_layer))
        .map(|(room, shown)| {
            format!(
                "`{}` (room `{own}`, layer {}) imports `{shown}`: room `{room}` is layer {}, above it",
                relative.display(),
                own_layer + 1,
                layer_of(&room).map_or(0, |layer| layer + 1),
            )
        })
        .collect()
}

#[test]
fn no_room_imports_a_room_above_it() {
    let src = sources();
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let root = root_reexports(&lib);
    let mut wrong = Vec::new();
    let files = rust_files(&src);
    for path in &files {
        let relative = path.strip_prefix(&src).expect("under src");
        if relative.starts_with("tests") || relative == Path::new("lib.rs") {
            continue;
        }
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{path:?}: {error}"));
        wrong.extend(upward_imports(relative, &text, &root));
    }
    assert!(files.len() > 40, "the sources were not found: {files:?}");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_room_of_the_crate_root_has_a_layer() {
    let lib = std::fs::read_to_string(sources().join("lib.rs")).expect("lib.rs");
    let declared: Vec<String> = (code(&lib).lines())
        .filter_map(|line| line.trim().trim_start_matches("pub ").strip_prefix("mod "))
        .map(|name| name.trim_end_matches(';').to_owned())
        .filter(|name| name != "tests")
        .collect();
    let layered: Vec<String> = (LAYERS.iter().flat_map(|rooms| rooms.iter()))
        .map(|room| (*room).to_owned())
        .collect();
    let mut sorted = declared.clone();
    sorted.sort();
    let mut expected = layered;
    expected.sort();
    assert_eq!(sorted, expected, "the rooms of lib.rs and of LAYERS differ");
}

#[test]
fn an_import_from_above_is_named_with_its_file() {
    let root = root_reexports("pub use problem::{Problem, SourceFile};\n");
    let file = Path::new("file/mod.rs");
    let text = "//! Docs may name `crate::reports`.\n\
                use crate::problem::Problem;\n\
                use crate::{Problem as P, reports::check::Findings};\n\
                #[cfg(test)]\n\
                mod tests {\n    use crate::host::Host;\n}\n";
    assert_eq!(
        upward_imports(file, text, &root),
        ["`file/mod.rs` (room `file`, layer 4) imports \
          `crate::{Problem as P, reports::check::Findings}`: room `reports` is layer 8, above it"]
    );
    // `super::` reaches the crate root from a room's `mod.rs`.
    let runtime = Path::new("runtime/mod.rs");
    assert_eq!(
        upward_imports(
            runtime,
            "use super::host::Host;\nuse super::file::AgentSpec;\n",
            &root
        )
        .len(),
        1
    );
    // Inside its own room, `super::` names no other room.
    let nested = Path::new("facts/instructions/gather.rs");
    assert!(upward_imports(nested, "use super::reports::Read;\n", &root).is_empty());
    // A name re-exported at the root is its room's.
    let policy = Path::new("policy/modes.rs");
    let higher = root_reexports("pub use host::Host;\n");
    assert_eq!(
        upward_imports(policy, "use crate::Host;\n", &higher).len(),
        1
    );
}
