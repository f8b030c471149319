//! The user documentation (`README.md`, `docs/*.md`) stays true: every
//! TOML example is TOML the schema of `dsh.toml` accepts, and every whole
//! deployment it shows loads and builds.

use crate::SourceFile;
use crate::file::Deployment;
use crate::runtime::Runtime;

/// The documents, and their fenced blocks of `language`, each with the
/// line its fence opens on.
fn blocks(language: &str) -> Vec<(String, usize, String)> {
    let mut documents = vec![super::workspace().join("README.md")];
    let docs = std::fs::read_dir(super::workspace().join("docs")).expect("docs/ exists");
    documents.extend(docs.map(|entry| entry.expect("an entry").path()));
    let mut found = Vec::new();
    for path in documents
        .iter()
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
    {
        let text = std::fs::read_to_string(path).expect("a readable document");
        let name = path
            .strip_prefix(super::workspace())
            .unwrap_or(path)
            .display()
            .to_string();
        let mut open: Option<(usize, String)> = None;
        for (index, line) in text.lines().enumerate() {
            match &mut open {
                None if line.trim_start() == format!("```{language}") => {
                    open = Some((index + 1, String::new()));
                }
                Some(_) if line.trim_start() == "```" => {
                    let (at, block) = open.take().expect("an open block");
                    found.push((name.clone(), at, block));
                }
                Some((_, block)) => {
                    block.push_str(line);
                    block.push('\n');
                }
                None => {}
            }
        }
    }
    found
}

#[test]
fn every_toml_example_is_toml() {
    let blocks = blocks("toml");
    assert!(
        blocks.len() >= 5,
        "the documents show TOML: {}",
        blocks.len()
    );
    for (document, line, block) in blocks {
        if let Err(error) = block.parse::<toml::Table>() {
            panic!("{document}:{line}: not TOML: {error}\n{block}");
        }
    }
}

#[test]
fn every_toml_example_is_a_part_of_a_deployment_the_schema_accepts() {
    let mut schema = crate::file::schema();
    // An example shows a part of a file: the tables a whole file must
    // have may be left out, nothing else.
    if let Some(object) = schema.as_object_mut() {
        object.remove("required");
    }
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    for (document, line, block) in blocks("toml") {
        let value: serde_json::Value = toml::from_str(&block).expect("TOML (tested above)");
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|error| format!("{} at {}", error, error.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{document}:{line}: {errors:?}\n{block}");
    }
}

#[test]
fn every_whole_deployment_of_the_documents_loads_and_builds() {
    let mut loaded = 0;
    for (document, line, block) in blocks("toml") {
        if !block.contains("[[agents]]") || !block.contains("[adapter.") {
            continue;
        }
        let names = ["read", "write", "edit", "bash", "todo_write"];
        let deployment = Deployment::parse(SourceFile::new(&document, block), None, &names)
            .unwrap_or_else(|problems| panic!("{document}:{line}: {}", problems[0].message()));
        Runtime::new(&deployment)
            .unwrap_or_else(|problems| panic!("{document}:{line}: {}", problems[0].message()));
        loaded += 1;
    }
    assert!(loaded >= 2, "whole deployments in the documents: {loaded}");
}
