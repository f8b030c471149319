//! The command lines the user documentation shows are `dsh`'s: each
//! subcommand exists and takes each flag shown with it.

use crate::common::{self, dsh, stdout};

/// Every line of a `sh` block of `README.md` and `docs/*.md` that runs
/// `dsh`, with where it is.
fn documented_command_lines() -> Vec<(String, String)> {
    let root = common::workspace();
    let mut paths = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/ exists") {
        paths.push(entry.expect("an entry").path());
    }
    let mut lines = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).expect("a readable document");
        let mut in_sh = false;
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with("```") {
                in_sh = line == "```sh";
            } else if in_sh && line.starts_with("dsh ") {
                lines.push((path.display().to_string(), line.to_owned()));
            }
        }
    }
    lines
}

#[test]
fn every_documented_command_and_flag_exists() {
    let lines = documented_command_lines();
    assert!(lines.len() >= 8, "{lines:?}");
    for (document, line) in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        let subcommand = words[1];
        let help = dsh(&[subcommand, "--help"]);
        assert!(
            help.status.success(),
            "{document}: `{line}`: no `dsh {subcommand}`"
        );
        let help = stdout(&help);
        // A shown flag, cut from its value and the brackets around it.
        let flags = words
            .iter()
            .take_while(|word| **word != "#")
            .filter_map(|word| word.trim_start_matches('[').split(['=', ']']).next())
            .filter(|word| word.starts_with("--"));
        for flag in flags {
            assert!(
                help.contains(flag),
                "{document}: `{line}`: `dsh {subcommand}` has no `{flag}`"
            );
        }
    }
}
