//! The JSON Schema of `dsh.toml` (`crate::file::schema`): every
//! example deployment validates against it, a misspelled key is refused
//! by it and by the loader alike, every table refuses unknown keys, and
//! `docs/config.md` documents every key it has.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::SourceFile;
use crate::file::Deployment;
use serde_json::Value;

/// Every `examples/*/dsh.toml`, by path, with its text.
fn examples() -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(super::workspace().join("examples")).expect("examples/") {
        let path = entry.expect("an entry").path().join("dsh.toml");
        if path.is_file() {
            let text = std::fs::read_to_string(&path).expect("readable");
            found.push((path, text));
        }
    }
    assert!(found.len() >= 4, "the example deployments: {found:?}");
    found
}

/// The TOML text as the JSON value a schema validates.
fn as_json(text: &str) -> Value {
    let value: toml::Value = toml::from_str(text).expect("TOML");
    serde_json::to_value(value).expect("JSON")
}

/// The schema's complaints about `text`, each with where it is.
fn schema_errors(text: &str) -> Vec<String> {
    let schema = crate::file::schema();
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let instance = as_json(text);
    validator
        .iter_errors(&instance)
        .map(|error| format!("{}: {error}", error.instance_path()))
        .collect()
}

/// The loader's problems with `text`.
fn loader_errors(text: &str) -> Vec<String> {
    let names = crate::runtime::builtin_tool_names();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    match Deployment::parse(SourceFile::new("dsh.toml", text), None, &names) {
        Ok(_) => Vec::new(),
        Err(problems) => problems.iter().map(|p| p.message().to_owned()).collect(),
    }
}

#[test]
fn the_schema_is_draft_2020_12_and_names_every_top_level_table() {
    let schema = crate::file::schema();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    for key in [
        "adapter",
        "tools",
        "mcp",
        "agents",
        "presets",
        "instructions",
        "sessions",
        "tool_order",
        "max_subagent_depth",
    ] {
        assert!(schema["properties"][key].is_object(), "no `{key}`");
    }
}

#[test]
fn every_example_deployment_validates_and_loads() {
    for (path, text) in examples() {
        let errors = schema_errors(&text);
        assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
        let problems = loader_errors(&text);
        assert!(problems.is_empty(), "{}: {problems:#?}", path.display());
    }
}

#[test]
fn a_misspelled_key_is_refused_by_the_schema_and_by_the_loader() {
    let (_, good) = examples()
        .into_iter()
        .find(|(path, _)| path.ends_with("coding-agent/dsh.toml"))
        .expect("the coding-agent example");
    assert!(schema_errors(&good).is_empty() && loader_errors(&good).is_empty());
    let typos = [
        (
            "persnoa",
            good.replacen("[[agents]]\n", "[[agents]]\npersnoa = \"x\"\n", 1),
        ),
        (
            "api_key_envv",
            good.replacen(
                "[adapter.openai]\n",
                "[adapter.openai]\napi_key_envv = \"K\"\n",
                1,
            ),
        ),
        (
            "permision",
            format!("{good}\n[tools.bash]\npermision = \"ask\"\n"),
        ),
        (
            "root",
            format!("{good}\n[tools.write]\nroot = [\"/tmp\"]\n"),
        ),
        (
            "comand",
            format!("{good}\n[mcp.docs]\ncomand = [\"server\"]\n"),
        ),
        (
            "sesions",
            good.replacen("[[agents]]\n", "sesions = 1\n[[agents]]\n", 1),
        ),
    ];
    for (typo, text) in typos {
        assert_ne!(text, good, "`{typo}` was written");
        // The error names the key (`'persnoa' was unexpected`), or, under
        // `[adapter]`'s one-of, shows the table that has it.
        let errors = schema_errors(&text);
        assert!(
            errors.iter().any(|error| error.contains(typo)),
            "the schema lets `{typo}` through: {errors:#?}"
        );
        let problems = loader_errors(&text);
        // serde's `unknown field` message, or, in an `[adapter.*]` variant,
        // toml's `unexpected keys in table`.
        assert!(
            problems.iter().any(|problem| {
                problem.contains(&format!("unknown field `{typo}`"))
                    || problem.contains(&format!("unexpected keys in table: {typo}"))
            }),
            "the loader lets `{typo}` through: {problems:#?}"
        );
    }
}

#[test]
fn every_table_of_the_schema_refuses_unknown_keys() {
    let schema = crate::file::schema();
    let mut open = Vec::new();
    walk(&schema, &schema, "", &mut |path, node| {
        if node.get("properties").is_some()
            && node
                .get("additionalProperties")
                .is_none_or(|extra| extra == true)
        {
            open.push(path.to_owned());
        }
    });
    assert!(open.is_empty(), "tables that take any key: {open:?}");
}

#[test]
fn the_tools_schema_has_every_built_in_tool() {
    let schema = crate::file::schema();
    let tools = &schema["$defs"]["Tools"]["properties"];
    for name in crate::runtime::builtin_tool_names() {
        assert!(
            tools[&name].is_object(),
            "`[tools.{name}]` is not in the schema"
        );
    }
}

/// Calls `visit` with each table path (`""`, `adapter.openai`,
/// `tools.<name>.child`, `agents`) and schema node, depth first.
fn walk(root: &Value, node: &Value, path: &str, visit: &mut dyn FnMut(&str, &Value)) {
    let node = resolve(root, node);
    visit(path, node);
    for alternatives in ["anyOf", "oneOf", "allOf"] {
        for alternative in node[alternatives].as_array().into_iter().flatten() {
            walk(root, alternative, path, visit);
        }
    }
    if let Some(properties) = node["properties"].as_object() {
        for (key, value) in properties {
            walk(root, value, &join(path, key), visit);
        }
    }
    if node["additionalProperties"].is_object() {
        // A map of tables: its key is a name the user chooses.
        let placeholder = if path == "presets" { "<id>" } else { "<name>" };
        walk(
            root,
            &node["additionalProperties"],
            &join(path, placeholder),
            visit,
        );
    }
    if node["items"].is_object() {
        walk(root, &node["items"], path, visit);
    }
}

/// `node`, or the definition its `$ref` names.
fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
    match node["$ref"]
        .as_str()
        .and_then(|at| at.strip_prefix("#/$defs/"))
    {
        Some(name) => &root["$defs"][name],
        None => node,
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// Every table path of the schema with the keys it has.
fn tables() -> BTreeMap<String, BTreeSet<String>> {
    let schema = crate::file::schema();
    let mut tables: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    walk(&schema, &schema, "", &mut |path, node| {
        if let Some(properties) = node["properties"].as_object() {
            tables
                .entry(path.to_owned())
                .or_default()
                .extend(properties.keys().cloned());
        }
    });
    tables
}

/// The text of the section of `docs` whose heading names `table`
/// (`` `[tools.bash]` ``, `` `[[agents]]` ``; the top-level keys' heading
/// says "Top-level"), down to the next heading of its level or higher.
fn section<'d>(docs: &'d str, table: &str) -> Option<&'d str> {
    let names_table = |heading: &str| {
        if table.is_empty() {
            heading.contains("Top-level")
        } else {
            heading.contains(&format!("`[{table}]`")) || heading.contains(&format!("`[[{table}]]`"))
        }
    };
    let mut start = None;
    let mut offset = 0;
    for line in docs.split_inclusive('\n') {
        let level = line.bytes().take_while(|&byte| byte == b'#').count();
        if level > 0 && line.as_bytes().get(level) == Some(&b' ') {
            match start {
                Some((at, start_level)) if level <= start_level => {
                    return Some(&docs[at..offset]);
                }
                None if names_table(line) => start = Some((offset, level)),
                _ => {}
            }
        }
        offset += line.len();
    }
    start.map(|(at, _)| &docs[at..])
}

#[test]
fn docs_config_md_documents_every_key_under_its_table() {
    let path = super::workspace().join("docs/config.md");
    let docs = std::fs::read_to_string(&path).expect("docs/config.md");
    let tables = tables();
    assert!(tables.contains_key("tools.<name>.child"), "{tables:#?}");
    let mut missing = Vec::new();
    for (table, keys) in &tables {
        let shown = if table.is_empty() { "top-level" } else { table };
        let Some(text) = section(&docs, table) else {
            missing.push(format!("no heading for `[{shown}]`"));
            continue;
        };
        for key in keys {
            if !text.contains(&format!("`{key}`")) {
                missing.push(format!("`{key}` of `[{shown}]`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/config.md does not document: {}",
        missing.join(", ")
    );
    assert!(docs.contains("dsh schema") && docs.contains("#:schema"));
}
