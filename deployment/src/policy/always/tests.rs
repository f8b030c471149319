//! The rule as a person meets it: an answer given on one call, then what
//! it says of later calls.

use proptest::prelude::*;

use super::*;

/// A `bash` call's arguments.
fn bash(command: &str) -> String {
    serde_json::json!({ "command": command }).to_string()
}

/// A session where the person answered `said` "always" on `command`.
fn after(said: Said, command: &str) -> Remembered {
    let mut remembered = Remembered::default();
    remembered.remember_offer(&offer("bash", &bash(command)), said);
    remembered
}

/// What `remembered` says of a `bash` call running `command`.
fn said(remembered: &Remembered, command: &str) -> Option<Said> {
    remembered.said("bash", &bash(command))
}

fn allow_label(command: &str) -> String {
    offer("bash", &bash(command)).label(Said::Allowed)
}

#[test]
fn always_allow_ls_covers_ls_with_any_arguments() {
    assert_eq!(allow_label("ls -la"), "Always allow `ls` (any arguments)");
    let remembered = after(Said::Allowed, "ls -la");
    for command in [
        "ls -la",
        "ls",
        "ls src/",
        "  ls -R",
        "ls *.rs",
        "ls $HOME",
        "'ls'",
        r"l\s",
        "\"ls\" -l",
        "ls | ls",
        "ls && ls -a; ls\nls",
        "ls 2>&1",
        "ls 2>/dev/null",
        "ls < input",
    ] {
        assert_eq!(
            said(&remembered, command),
            Some(Said::Allowed),
            "{command:?}"
        );
    }
}

/// The eleven ways to chain something onto `ls` that a prefix rule lets
/// through (issue 55, tried as a new user would).
pub(crate) const CHAINED_ONTO_LS: [&str; 11] = [
    "ls && touch P",
    "ls || touch P",
    "ls & touch P",
    "ls | sh -c 'touch P'",
    "ls $(touch P)",
    "ls `touch P`",
    "ls -la; touch P",
    "ls x; touch P",
    "ls -la\ntouch P",
    "ls > P",
    "  ls && touch P",
];

#[test]
fn always_allow_ls_covers_nothing_chained_to_it() {
    let remembered = after(Said::Allowed, "ls -la");
    for command in CHAINED_ONTO_LS.into_iter().chain([
        // And more of the same.
        "ls >> P",
        "ls &> P",
        "ls >| P",
        "ls <> P",
        "ls \"$(touch P)\"",
        "ls <(touch P)",
        "ls ${X@P}",
        "ls &",
        "(ls; touch P)",
        "{ ls; touch P; }",
        "FOO=1 ls",
        "PATH=/tmp ls",
        "X=1; ls",
        "ls() { touch P; }; ls",
        "/bin/ls",
        "$X",
        "l* -la",
        "ls '",
        "ls # \ntouch P",
    ]) {
        assert_eq!(said(&remembered, command), None, "{command:?}");
    }
}

#[test]
fn a_subcommand_covers_that_subcommand_alone() {
    assert_eq!(
        allow_label("cargo test --workspace"),
        "Always allow `cargo test` (any arguments)"
    );
    let make = after(Said::Allowed, "make test");
    assert_eq!(said(&make, "make test"), Some(Said::Allowed));
    assert_eq!(said(&make, "make test && rm -rf x"), None);
    assert_eq!(said(&make, "make"), None);
    assert_eq!(said(&make, "make install"), None);

    let git = after(Said::Allowed, "git status");
    assert_eq!(said(&git, "git status --short"), Some(Said::Allowed));
    assert_eq!(said(&git, "git push"), None);
    assert_eq!(said(&git, "git status && git push"), None);
    assert_eq!(said(&git, "git -c core.pager=sh status"), None);
    assert_eq!(said(&git, "git $SUB"), None);
}

#[test]
fn a_subcommand_program_without_a_plain_subcommand_is_remembered_exactly() {
    assert_eq!(allow_label("make"), "Always allow exactly `make`");
    assert_eq!(
        allow_label("git -C dir status"),
        "Always allow exactly `git -C dir status`"
    );
    assert_eq!(
        allow_label("uv run pytest"),
        "Always allow exactly `uv run pytest`"
    );
    assert_eq!(
        allow_label("git config core.pager 'touch P'"),
        "Always allow exactly `git config core.pager 'touch P'`"
    );
    let git = after(Said::Allowed, "git -C dir status");
    assert_eq!(said(&git, "git -C dir status"), Some(Said::Allowed));
    assert_eq!(said(&git, "git -C dir status -v"), None);
    assert_eq!(said(&git, "git status"), None);
}

#[test]
fn interpreters_are_remembered_exactly() {
    assert_eq!(
        allow_label("python3 build.py"),
        "Always allow exactly `python3 build.py`"
    );
    let remembered = after(Said::Allowed, "python3 build.py");
    assert_eq!(said(&remembered, "python3 build.py"), Some(Said::Allowed));
    assert_eq!(
        said(&remembered, "python3  'build.py'"),
        Some(Said::Allowed)
    );
    assert_eq!(said(&remembered, "python3 -c 'print(1)'"), None);
    assert_eq!(said(&remembered, "python3 other.py"), None);
    assert_eq!(said(&remembered, "python3 build.py --fast"), None);
    assert_eq!(said(&remembered, "python3"), None);

    let code = after(Said::Allowed, "sh -c 'ls'");
    assert_eq!(said(&code, "sh -c 'ls'"), Some(Said::Allowed));
    assert_eq!(said(&code, "sh -c 'touch P'"), None);
    for command in [
        "bash -c x",
        "zsh -c x",
        "python -c x",
        "node -e x",
        "node -p x",
        "perl -e x",
        "ruby -e x",
        "deno eval x",
        "awk 'BEGIN{system(\"x\")}'",
    ] {
        let shown = allow_label(command);
        assert!(shown.starts_with("Always allow exactly `"), "{shown}");
    }
}

#[test]
fn wrappers_are_remembered_exactly() {
    for command in [
        "env FOO=1 ls",
        "env",
        "sudo ls",
        "xargs ls",
        "nohup ls",
        "timeout 5 ls",
    ] {
        let remembered = after(Said::Allowed, command);
        assert_eq!(said(&remembered, command), Some(Said::Allowed), "{command}");
        for other in [
            "env FOO=1 rm -rf /",
            "sudo rm -rf /",
            "xargs rm",
            "timeout 5 rm x",
        ] {
            assert_eq!(said(&remembered, other), None, "{command} then {other}");
        }
    }
}

#[test]
fn an_assignment_prefix_is_remembered_with_the_exact_text() {
    assert_eq!(allow_label("FOO=1 ls"), "Always allow exactly `FOO=1 ls`");
    let remembered = after(Said::Allowed, "FOO=1 ls");
    assert_eq!(said(&remembered, "FOO=1 ls"), Some(Said::Allowed));
    assert_eq!(said(&remembered, "FOO=1 ls -la"), None);
    assert_eq!(said(&remembered, "ls"), None);
}

#[test]
fn what_cannot_be_covered_is_remembered_as_its_exact_text() {
    for command in ["ls > out.txt", "ls '", "cat <<EOF\nx\nEOF", "ls $(pwd)"] {
        let shown = offer("bash", &bash(command));
        assert_eq!(
            shown.scopes(Said::Allowed),
            [Scope(Key::Text(command.to_owned()))]
        );
        let remembered = after(Said::Allowed, command);
        assert_eq!(said(&remembered, command), Some(Said::Allowed));
        assert_eq!(said(&remembered, &format!(" {command}")), None);
    }
    assert_eq!(
        allow_label("ls > out.txt"),
        "Always allow exactly `ls > out.txt`"
    );
}

#[test]
fn a_chain_of_coverable_commands_remembers_each() {
    assert_eq!(
        allow_label("cargo fmt && cargo test && python3 x.py && cargo fmt"),
        "Always allow `cargo fmt` (any arguments), `cargo test` (any arguments) and exactly \
         `python3 x.py`"
    );
    let remembered = after(Said::Allowed, "cargo fmt && cargo test");
    assert_eq!(said(&remembered, "cargo test"), Some(Said::Allowed));
    assert_eq!(
        said(&remembered, "cargo test; cargo fmt --check"),
        Some(Said::Allowed)
    );
    assert_eq!(said(&remembered, "cargo test && cargo run"), None);
}

#[test]
fn guarded_readers_cover_any_arguments_but_the_guarded_ones() {
    assert_eq!(
        allow_label("find . -name '*.rs'"),
        "Always allow `find` (any arguments but `-exec`, `-execdir`, `-ok`, `-okdir`, \
         `-delete`, `-fprint`, `-fprint0`, `-fprintf` or `-fls`, and none with `$` or a glob)"
    );
    let find = after(Said::Allowed, "find . -name '*.rs'");
    assert_eq!(said(&find, "find src -type f"), Some(Said::Allowed));
    assert_eq!(said(&find, "find . -exec touch P ';'"), None);
    assert_eq!(said(&find, "find . -delete"), None);
    assert_eq!(said(&find, "find . $X"), None);
    assert_eq!(
        allow_label("find . -delete"),
        "Always allow exactly `find . -delete`"
    );
    let sort = after(Said::Allowed, "sort -u");
    assert_eq!(said(&sort, "sort -o P"), None);
    assert_eq!(said(&sort, "sort --out=P"), None);
    assert_eq!(
        allow_label("git status"),
        "Always allow `git status` (any arguments)"
    );
    assert_eq!(
        allow_label("git fetch"),
        "Always allow `git fetch` (any arguments but `--upload-pack`, and none with `$` or a \
         glob)"
    );
    let git = after(Said::Allowed, "git fetch");
    assert_eq!(said(&git, "git fetch origin"), Some(Said::Allowed));
    assert_eq!(said(&git, "git fetch --upload-pack='touch P' ."), None);
    assert_eq!(said(&git, "git fetch --upl='touch P' ."), None);
}

#[test]
fn always_reject_holds_for_the_program() {
    assert_eq!(
        offer("bash", &bash("rm -rf /")).label(Said::Rejected),
        "Always reject `rm` (any arguments)"
    );
    let remembered = after(Said::Rejected, "rm -rf /");
    for command in [
        "rm -rf /",
        "rm x",
        "/bin/rm x",
        "ls && rm x",
        "ls $(rm x)",
        "echo `rm x` > P",
        "rm x '",
    ] {
        assert_eq!(
            said(&remembered, command),
            Some(Said::Rejected),
            "{command:?}"
        );
    }
    assert_eq!(said(&remembered, "ls"), None);

    let git = after(Said::Rejected, "git push --force");
    assert_eq!(said(&git, "git push"), Some(Said::Rejected));
    assert_eq!(said(&git, "git status"), None);

    // Rejecting wins over allowing.
    let mut both = after(Said::Allowed, "ls");
    both.remember_offer(&offer("bash", &bash("rm x")), Said::Rejected);
    assert_eq!(said(&both, "ls; rm y"), Some(Said::Rejected));
    assert_eq!(said(&both, "ls"), Some(Said::Allowed));
}

#[test]
fn other_tools_are_remembered_by_name() {
    let shown = offer("write", r#"{"path": "x"}"#);
    assert_eq!(shown.scopes(Said::Allowed), [Scope::tool("write")]);
    assert_eq!(
        shown.label(Said::Allowed),
        "Always allow every `write` call"
    );
    let mut remembered = Remembered::default();
    remembered.remember_offer(&shown, Said::Allowed);
    assert_eq!(remembered.said("write", "{}"), Some(Said::Allowed));
    assert_eq!(remembered.said("edit", "{}"), None);
    assert_eq!(remembered.said("bash", &bash("write")), None);
}

#[test]
fn a_bash_call_without_a_command_is_remembered_by_the_tool_alone() {
    let shown = offer("bash", "not json");
    assert_eq!(shown.scopes(Said::Allowed), [Scope::tool("bash")]);
    assert_eq!(
        shown.label(Said::Allowed),
        "Always allow every `bash` call without a command"
    );
    let mut remembered = Remembered::default();
    remembered.remember_offer(&shown, Said::Rejected);
    assert_eq!(remembered.said("bash", "{}"), Some(Said::Rejected));
    assert_eq!(remembered.said("bash", &bash("ls")), None);
}

#[test]
fn keys_read_back_and_old_keys_keep_their_meaning() {
    for scope in [
        Scope::tool("write"),
        Scope(Key::Program {
            program: "cargo".into(),
            subcommand: Some("test".into()),
        }),
        Scope(Key::Program {
            program: "my prog".into(),
            subcommand: None,
        }),
        Scope(Key::Argv(vec![
            "python3".into(),
            "it's here.py".into(),
            String::new(),
        ])),
        Scope(Key::Argv(vec!["time".into(), "ls".into()])),
        Scope(Key::Text("ls > P\nrm x".into())),
    ] {
        assert_eq!(
            Scope::from_key(&scope.key()),
            Some(scope.clone()),
            "{}",
            scope.key()
        );
    }
    assert_eq!(
        Scope::from_key("bash:cargo test").map(|scope| scope.key()),
        Some("bash:cargo test".to_owned())
    );
    assert_eq!(Scope::from_key("bash:"), None);
    assert_eq!(Scope::from_key("tool:"), None);
    assert_eq!(Scope::from_key("mode"), None);

    let mut old = Remembered::default();
    for key in ["bash:ls", "bash:cargo test", "bash:python3", "bash:sh"] {
        old.remember(Scope::from_key(key).expect(key), Said::Allowed);
    }
    assert_eq!(said(&old, "ls -la"), Some(Said::Allowed));
    assert_eq!(said(&old, "cargo test --workspace"), Some(Said::Allowed));
    assert_eq!(said(&old, "python3 build.py"), None);
    assert_eq!(said(&old, "python3 -c 'print(1)'"), None);
    assert_eq!(said(&old, "sh -c 'touch P'"), None);

    let mut rejected = Remembered::default();
    rejected.remember(
        Scope::from_key("bash:python3").expect("a key"),
        Said::Rejected,
    );
    assert_eq!(said(&rejected, "python3 build.py"), Some(Said::Rejected));
}

#[test]
fn labels_quote_code_spans_safely() {
    assert_eq!(code("ls"), "`ls`");
    assert_eq!(code("echo `x`"), "`` echo `x` ``");
    assert_eq!(code("a `` b"), "```a `` b```");
}

proptest! {
    /// No input panics, and what is offered covers the call it was
    /// offered for, allowing and rejecting.
    #[test]
    fn offers_cover_their_own_call(command in "\\PC{0,40}|[a-z $'\"`|&;<>(){}*\\\\\n=-]{0,40}") {
        let arguments = bash(&command);
        let shown = offer("bash", &arguments);
        for said in [Said::Allowed, Said::Rejected] {
            prop_assert!(!shown.scopes(said).is_empty());
            let mut remembered = Remembered::default();
            remembered.remember_offer(&shown, said);
            prop_assert_eq!(remembered.said("bash", &arguments), Some(said));
            for scope in shown.scopes(said) {
                prop_assert_eq!(Scope::from_key(&scope.key()), Some(scope.clone()));
            }
        }
    }

    /// Whatever plain words were allowed, a command chained to them is
    /// not covered.
    #[test]
    fn nothing_chained_is_covered(
        words in prop::collection::vec("[a-z][a-z0-9-]{0,6}", 1..4),
        chain in prop::sample::select(vec![" && ", " || ", " & ", "; ", "\n", " | ", " $(", " `"]),
    ) {
        prop_assume!(words[0] != "touch");
        let command = words.join(" ");
        let remembered = after(Said::Allowed, &command);
        let chained = format!("{command}{chain}touch P");
        prop_assert_eq!(said(&remembered, &chained), None);
    }

    /// Arbitrary JSON-ish arguments and tools never panic.
    #[test]
    fn any_arguments_are_read(tool in "bash|write|[a-z]{0,5}", arguments in "\\PC{0,60}") {
        let _ = offer(&tool, &arguments);
        let _ = Remembered::default().said(&tool, &arguments);
    }
}
