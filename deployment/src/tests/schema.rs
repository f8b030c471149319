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
    let tools = &schema["properties"]["tools"]["properties"];
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
    // A map of tables: its key is a name the user chooses, any name
    // (`additionalProperties`) or one its pattern allows. An
    // `additionalProperties` that refuses (`not`) is no table.
    let placeholder = if path == "presets" { "<id>" } else { "<name>" };
    let extra = &node["additionalProperties"];
    if extra.is_object() && extra.get("not").is_none() {
        walk(root, extra, &join(path, placeholder), visit);
    }
    for table in node["patternProperties"].as_object().into_iter().flatten() {
        walk(root, table.1, &join(path, placeholder), visit);
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

/// What `dsh check --no-mcp` refuses in `text`: the loader's problems,
/// the runtime's, then the check's.
fn check_problems(text: &str) -> Vec<String> {
    use crate::reports::check::{WithServers, check_deployment};
    let names = crate::runtime::builtin_tool_names();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let messages = |problems: Vec<crate::Problem>| {
        problems
            .iter()
            .map(|problem| problem.message().to_owned())
            .collect::<Vec<_>>()
    };
    let deployment = match Deployment::parse(SourceFile::new("dsh.toml", text), None, &names) {
        Ok(deployment) => deployment,
        Err(problems) => return messages(problems),
    };
    let runtime = match crate::runtime::Runtime::new(&deployment) {
        Ok(runtime) => runtime,
        Err(problems) => return messages(problems),
    };
    match check_deployment(&deployment, &runtime, None, WithServers::No) {
        Ok(findings) => messages(findings.problems),
        Err(problems) => messages(problems),
    }
}

/// A deployment `dsh check` and the schema accept, with `extra`: added
/// at its end (tables); before its first table when it ends in `^`; in
/// its adapter's table after `adapter: `; or, ending in `=`, the whole
/// deployment.
fn with(extra: &str) -> String {
    let adapter = "[adapter.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n";
    let agents =
        "[[agents]]\nid = \"coder\"\npersona = \"You code.\"\ntools = [\"read\", \"bash\"]\n";
    if let Some(whole) = extra.strip_suffix('=') {
        whole.to_owned()
    } else if let Some(top) = extra.strip_suffix('^') {
        format!("{top}{adapter}\n{agents}")
    } else if let Some(key) = extra.strip_prefix("adapter: ") {
        format!("{adapter}{key}\n\n{agents}")
    } else {
        format!("{adapter}\n{agents}\n{extra}\n")
    }
}

/// Each rule of `dsh check` the schema states, as a deployment that
/// breaks it and the place (JSON pointer) the schema's error is at.
const BROKEN_RULES: &[(&str, &str, &str)] = &[
    (
        "a server name in capitals",
        "[mcp.Bad-Name]\ncommand = [\"x\"]",
        "/mcp/Bad-Name",
    ),
    (
        "a server name with `__`",
        "[mcp.a__b]\ncommand = [\"x\"]",
        "/mcp/a__b",
    ),
    (
        "a server name ending in `_`",
        "[mcp.docs_]\ncommand = [\"x\"]",
        "/mcp/docs_",
    ),
    (
        "a server name of 33 bytes",
        "[mcp.abcdefghijklmnopqrstuvwxyzabcdefg]\ncommand = [\"x\"]",
        "/mcp",
    ),
    (
        "`command` and `url`",
        "[mcp.docs]\ncommand = [\"x\"]\nurl = \"https://x\"",
        "/mcp/docs/command",
    ),
    (
        "neither `command` nor `url`",
        "[mcp.docs]\ntools = [\"x\"]",
        "/mcp/docs",
    ),
    (
        "an empty `command`",
        "[mcp.docs]\ncommand = []",
        "/mcp/docs/command",
    ),
    (
        "a `url` not http(s)",
        "[mcp.docs]\nurl = \"ftp://x\"",
        "/mcp/docs/url",
    ),
    (
        "`headers` without `url`",
        "[mcp.docs]\ncommand = [\"x\"]\nheaders = { A = \"b\" }",
        "/mcp/docs/headers",
    ),
    (
        "`bearer_token_env` without `url`",
        "[mcp.docs]\ncommand = [\"x\"]\nbearer_token_env = \"T\"",
        "/mcp/docs/bearer_token_env",
    ),
    (
        "`cwd` with `url`",
        "[mcp.docs]\nurl = \"http://127.0.0.1:9/mcp\"\ncwd = \".\"",
        "/mcp/docs/cwd",
    ),
    (
        "`startup_timeout_secs = 0`",
        "[mcp.docs]\ncommand = [\"x\"]\nstartup_timeout_secs = 0",
        "/mcp/docs/startup_timeout_secs",
    ),
    (
        "a call timeout over a day",
        "[mcp.docs]\ncommand = [\"x\"]\ncall_timeout_secs = 86401",
        "/mcp/docs/call_timeout_secs",
    ),
    (
        "an instance without `kind`",
        "[tools.t]\nprovider = \"spawn\"",
        "/tools/t",
    ),
    (
        "an instance without `provider`",
        "[tools.t]\nkind = \"subagent\"",
        "/tools/t",
    ),
    (
        "a provider dsh does not have",
        "[tools.t]\nkind = \"subagent\"\nprovider = \"remote\"",
        "/tools/t/provider",
    ),
    (
        "`acp` without `command`",
        "[tools.t]\nkind = \"subagent\"\nprovider = \"acp\"",
        "/tools/t",
    ),
    (
        "an empty instance `command`",
        "[tools.t]\nkind = \"subagent\"\nprovider = \"acp\"\ncommand = []",
        "/tools/t/command",
    ),
    (
        "`command` for `spawn`",
        "[tools.t]\nkind = \"subagent\"\nprovider = \"spawn\"\ncommand = [\"x\"]",
        "/tools/t/command",
    ),
    (
        "`timeout_secs` for `fork`",
        "[tools.t]\nkind = \"subagent\"\nprovider = \"fork\"\ntimeout_secs = 5",
        "/tools/t/timeout_secs",
    ),
    (
        "`timeout_secs = 0`",
        "[tools.t]\nkind = \"subagent\"\nprovider = \"acp\"\ncommand = [\"x\"]\ntimeout_secs = 0",
        "/tools/t/timeout_secs",
    ),
    (
        "`child` for `fork`",
        "[tools.t]\nkind = \"subagent\"\nprovider = \"fork\"\n[tools.t.child]\nmodel = \"m\"",
        "/tools/t/child",
    ),
    (
        "`child` for `acp`",
        "[tools.t]\nkind = \"subagent\"\nprovider = \"acp\"\ncommand = [\"x\"]\n[tools.t.child]\nmodel = \"m\"",
        "/tools/t/child",
    ),
    (
        "`kind` in a built-in's table",
        "[tools.bash]\nkind = \"subagent\"",
        "/tools/bash/kind",
    ),
    (
        "a relative `roots` entry",
        "[tools.write]\nroots = [\"tmp\"]",
        "/tools/write/roots/0",
    ),
    (
        "a relative `writable` entry",
        "[sandbox]\nwritable = [\"cache\"]",
        "/sandbox/writable/0",
    ),
    (
        "an instruction file that is a path",
        "[instructions]\nfiles = [\"docs/AGENTS.md\"]",
        "/instructions/files/0",
    ),
    (
        "an instruction file `..`",
        "[instructions]\nfiles = [\"..\"]",
        "/instructions/files/0",
    ),
    (
        "an instruction budget under 256",
        "[instructions]\nmax_bytes = 100",
        "/instructions/max_bytes",
    ),
    (
        "an agent id with `/`",
        "[[agents]]\nid = \"a/b\"\npersona = \"x\"",
        "/agents/1/id",
    ),
    (
        "a blank agent id",
        "[[agents]]\nid = \" \"\npersona = \"x\"",
        "/agents/1/id",
    ),
    (
        "a tool listed twice",
        "[[agents]]\nid = \"b\"\npersona = \"x\"\ntools = [\"read\", \"read\"]",
        "/agents/1/tools",
    ),
    (
        "a section before the persona",
        "[[agents.sections]]\nname = \"x:y\"\ntext = \"t\"\norder = 0",
        "/agents/0/sections/0/order",
    ),
    (
        "a tool order without `<unlisted-tools>`",
        "tool_order = [\"read\"]\n^",
        "/tool_order",
    ),
    (
        "a tool listed twice in a tool order",
        "tool_order = [\"read\", \"<unlisted-tools>\", \"read\"]\n^",
        "/tool_order",
    ),
    (
        "a tokenizer this build lacks",
        "adapter: tokenizer = \"p50k_base\"",
        "/adapter/openai/tokenizer",
    ),
    (
        "two adapters",
        "[adapter.scripted]\nanswers = \"a.toml\"",
        "/adapter",
    ),
    (
        "no agents",
        "agents = []\n[adapter.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n=",
        "/agents",
    ),
    (
        "an agent without a model where the adapter has none",
        "[adapter.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\n[[agents]]\nid = \"a\"\npersona = \"x\"\n=",
        "/agents/0",
    ),
    (
        "a thinking budget under 1024",
        "[adapter.anthropic]\nmodel = \"claude-sonnet-4-5\"\nthinking_budget = 100\n\
         [[agents]]\nid = \"a\"\npersona = \"x\"\n=",
        "/adapter/anthropic/thinking_budget",
    ),
];

/// Deployments near the rules above that `dsh check` accepts, and so
/// must the schema: it is never stricter than dsh.
const KEPT_RULES: &[&str] = &[
    "[mcp.a1_b2]\ncommand = [\"x\"]\nheaders = {}\nstartup_timeout_secs = 0.5",
    "[mcp.docs]\nurl = \"http://127.0.0.1:9/mcp\"\nheaders = { A = \"b\" }\nbearer_token_env = \"T\"",
    "[tools.t]\nkind = \"subagent\"\nprovider = \"acp\"\ncommand = [\"x\"]\ntimeout_secs = 1",
    "[tools.t]\nkind = \"subagent\"\nprovider = \"spawn\"\n[tools.t.child]\ntools = [\"read\"]",
    "[tools.t]\nkind = \"subagent\"\nprovider = \"fork\"\npermission = \"ask\"",
    "[tools.read_twice]\nkind = \"subagent\"\nprovider = \"fork\"",
    "[instructions]\nenabled = false\nmax_bytes = 0",
    "[instructions]\nfiles = [\".rules\", \"a..b\"]\nmax_bytes = 256",
    "tool_order = [\"<unlisted-tools>\", \"bash\"]\n^",
    "adapter: tokenizer = \"cl100k_base\"",
    "[[agents.sections]]\nname = \"x:y\"\ntext = \"t\"\norder = 1",
];

#[test]
fn what_dsh_check_accepts_near_those_rules_the_schema_accepts() {
    let mut wrong = Vec::new();
    for extra in KEPT_RULES {
        let text = with(extra);
        let problems = check_problems(&text);
        let errors = schema_errors(&text);
        if !problems.is_empty() || !errors.is_empty() {
            wrong.push(format!(
                "{extra}: dsh check {problems:#?}, schema {errors:#?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn each_rule_of_dsh_check_the_schema_states_is_refused_by_both_at_its_place() {
    let good = with("");
    assert!(schema_errors(&good).is_empty() && check_problems(&good).is_empty());
    let mut wrong = Vec::new();
    for (rule, extra, place) in BROKEN_RULES {
        let text = with(extra);
        let errors = schema_errors(&text);
        let problems = check_problems(&text);
        let at_place = errors
            .iter()
            .any(|error| error.split_once(": ").is_some_and(|(at, _)| at == *place));
        // One error, or, where the rule is about the table as a whole
        // (a key it lacks), a few at that table's place and no other.
        let elsewhere = errors.iter().any(|error| {
            error
                .split_once(": ")
                .is_some_and(|(at, _)| !at.starts_with(place))
        });
        if !at_place || elsewhere || problems.is_empty() {
            wrong.push(format!(
                "{rule}: schema {errors:#?} (wanted one at `{place}`), dsh check {problems:#?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Every node of `node` with its JSON pointer, but the conditions of
/// `dsh check`'s rules (`if`, `then`, `else`: no editor shows them).
fn nodes<'v>(node: &'v Value, at: String, out: &mut Vec<(String, &'v Value)>) {
    out.push((at.clone(), node));
    let children: Vec<(String, &Value)> = match node {
        Value::Object(object) => object
            .iter()
            .filter(|(key, _)| !matches!(key.as_str(), "if" | "then" | "else"))
            .map(|(key, value)| (key.clone(), value))
            .collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(index, item)| (index.to_string(), item))
            .collect(),
        _ => Vec::new(),
    };
    for (key, child) in children {
        nodes(child, format!("{at}/{key}"), out);
    }
}

#[test]
fn the_schema_is_in_the_forms_an_editor_shows_key_by_key() {
    let schema = crate::file::schema();
    let mut all = Vec::new();
    nodes(&schema, String::new(), &mut all);
    let mut wrong = Vec::new();
    for (at, node) in all {
        let Some(object) = node.as_object() else {
            continue;
        };
        // Alternatives all failing are one error over a whole table, and
        // an editor's hover shows every alternative's text, none beside a
        // `$ref`.
        for keyword in ["oneOf", "anyOf", "allOf", "$ref"] {
            if object.contains_key(keyword) {
                wrong.push(format!("`{keyword}` at {at}"));
            }
        }
        for (key, property) in object
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if !property["description"].is_string() {
                wrong.push(format!("no description of {at}/properties/{key}"));
            }
        }
        // An editor offers the keys of `additionalProperties` in a table
        // `properties` lists too.
        let extra = &object.get("additionalProperties");
        if object.contains_key("properties")
            && extra.is_some_and(|extra| extra.is_object() && extra.get("not").is_none())
        {
            wrong.push(format!("listed keys and another table's at {at}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn the_schema_names_the_mcp_servers_dsh_tool_mcp_does() {
    let schema = crate::file::schema();
    let validator = jsonschema::validator_for(&schema["properties"]["mcp"]).expect("a schema");
    let long = "a".repeat(dsh_tool_mcp::MAX_SERVER_NAME);
    let too_long = format!("{long}b");
    let names = [
        "docs", "git_hub2", "a", "a1", "a_1_b", "Docs", "a__b", "2fa", "a_", "_a", "a-b", "é", "",
        "a b", &long, &too_long,
    ];
    for name in names {
        let table = serde_json::json!({ name: { "command": ["server"] } });
        assert_eq!(
            validator.is_valid(&table),
            dsh_tool_mcp::is_server_name(name),
            "{name:?}"
        );
    }
}

#[test]
fn a_wrong_type_is_one_error_at_its_value() {
    let cases = [
        ("adapter: timeout_ms = \"10\"", "/adapter/openai/timeout_ms"),
        ("[tools.bash]\npermission = 1", "/tools/bash/permission"),
        ("[tools.write]\nroots = \"/tmp\"", "/tools/write/roots"),
        (
            "[tools.t]\nkind = \"subagent\"\nprovider = \"fork\"\npermission = true",
            "/tools/t/permission",
        ),
        (
            "[mcp.docs]\ncommand = [\"x\"]\nstartup_timeout_secs = \"10\"",
            "/mcp/docs/startup_timeout_secs",
        ),
        ("[sandbox]\nnetwork = \"no\"", "/sandbox/network"),
    ];
    for (extra, place) in cases {
        let text = with(extra);
        let errors = schema_errors(&text);
        let [error] = errors.as_slice() else {
            panic!("{extra}: {errors:#?}");
        };
        assert!(error.starts_with(&format!("{place}: ")), "{extra}: {error}");
        assert!(
            !check_problems(&text).is_empty(),
            "dsh check accepts {extra}"
        );
    }
}

#[test]
fn hover_finds_a_description_where_taplo_looks_in_arrays() {
    let schema = crate::file::schema();
    // Over `command = […]` Taplo's hover shows the items' schema.
    let command = &schema["properties"]["mcp"]["patternProperties"]
        [dsh_tool_mcp::SERVER_NAME_PATTERN]["properties"]["command"];
    assert_eq!(command["items"]["description"], command["description"]);
    // Under `[[agents]]` it looks `id` up at `agents.0.0.id`.
    let agents = &schema["properties"]["agents"];
    assert!(agents["items"]["items"]["properties"]["id"]["description"].is_string());
    assert!(
        agents["items"]["items"]["properties"]["sections"]["items"]["items"]["properties"]["name"]
            ["description"]
            .is_string()
    );
}
