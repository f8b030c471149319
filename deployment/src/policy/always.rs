//! What a person's "always allow" or "always reject" of a tool call
//! covers from then on.
//!
//! ```
//! use dsh_deployment::policy::always::{Remembered, Said, offer};
//!
//! let ls = offer("bash", r#"{"command": "ls -la"}"#);
//! assert_eq!(ls.label(Said::Allowed), "Always allow `ls` (any arguments)");
//! let mut remembered = Remembered::default();
//! remembered.remember_offer(&ls, Said::Allowed);
//!
//! let said = |command: &str| {
//!     let arguments = serde_json::json!({ "command": command }).to_string();
//!     remembered.said("bash", &arguments)
//! };
//! assert_eq!(said("ls src/"), Some(Said::Allowed));
//! // Every part of a command must be covered, and nothing else run.
//! assert_eq!(said("ls && touch P"), None);
//! assert_eq!(said("ls $(touch P)"), None);
//! assert_eq!(said("ls > P"), None);
//!
//! // An interpreter is only ever remembered as the exact command.
//! let build = offer("bash", r#"{"command": "python3 build.py"}"#);
//! assert_eq!(build.label(Said::Allowed), "Always allow exactly `python3 build.py`");
//! ```
//!
//! # The rule
//!
//! A call of any tool but `bash` is remembered by its tool: the scope
//! `tool:<name>`.
//!
//! A `bash` command is parsed with a real shell parser (tree-sitter-bash;
//! each word is then checked again against bash's quoting rules, so that
//! where the grammar and bash could read a word differently the command
//! counts as not understood). An answer is remembered for the *simple
//! commands* in it, each by what its program is:
//!
//! - most programs by the program: `ls -la` remembers `ls` (any
//!   arguments), which covers `ls`, `ls src/`, `ls -R $DIR`;
//! - programs with subcommands (`git`, `cargo`, `npm`, `make`, `docker`,
//!   … see `programs.rs`) by program and subcommand: `cargo test
//!   --workspace` remembers `cargo test` (any arguments), and `git status`
//!   does not cover `git push`. With no subcommand, or an option before
//!   it (`git -c x=y status`, `make -f other.mk`), only the exact command;
//!   and subcommands that run a command or code of their own arguments
//!   (`uv run`, `npm exec`, `docker run`, `git config`, `git rebase`)
//!   only exactly;
//! - interpreters, wrappers and bash's code-evaluating words (`sh`,
//!   `bash`, `python*`, `node`, `perl`, `ruby`, `awk`, `sed`, `env`,
//!   `xargs`, `sudo`, `nohup`, `timeout`, `time`, `ssh`, `npx`, `eval`,
//!   `source`, `.`, `exec`, `command`, `builtin`, `trap`, `read`, …) only as
//!   the exact command (its words, quoting aside): "always" on `python3
//!   build.py` covers `python3 build.py`, never `python3 other.py` or
//!   `python3 -c …`;
//! - readers with an option that runs a program or writes a file (`find
//!   -exec`, `find -delete`, `rg --pre`, `fd -x`, `sort -o`, `rsync -e`,
//!   `printf -v`, `test -v`; and git's `fetch --upload-pack`, `diff
//!   --output`, …) by the program (or subcommand), with any arguments
//!   but those, each written out (no `$VAR` or glob that could turn into
//!   one); with one of them, only exactly.
//!
//! "Any arguments" means any: "always" on `rm x` covers `rm -rf /`, and
//! `make test` runs whatever the Makefile says. The guards are for
//! readers whose dangerous options are easy to overlook, not a list of
//! every program's options; the label, which says "(any arguments)", is
//! what the person agrees to.
//!
//! A program is looked up by the last part of its path and without a
//! version suffix (`/usr/bin/python3.12` is `python`); it is remembered
//! as written (`/bin/ls` is not `ls`).
//!
//! A later command is **allowed** only when every simple command in it
//! is covered and it has nothing else: simple commands joined by `;`, a
//! newline, `&&`, `||`, `|` or `|&`, with
//!
//! - no command or process substitution (`$(…)`, backquotes, `<(…)`),
//!   no `${…}` or arithmetic expansion (`${X@P}` and subscripts run
//!   code); a plain `$NAME` in an argument is fine;
//! - no variable, glob, brace or tilde in the program's place or a
//!   subcommand's;
//! - no variable assignment, before a command or alone (`FOO=1 ls` is
//!   not covered by `ls`: `PATH=…`, `LD_PRELOAD=…` or
//!   `GIT_SSH_COMMAND=…` change what runs; it is remembered exactly);
//! - no redirection that writes: reading (`< file`, `<<< word`),
//!   duplicating or closing a descriptor (`2>&1`, `>&2`, `<&-`) and
//!   writing to `/dev/null` are allowed; `>`, `>>`, `&>`, `>|`, `<>` to
//!   anything else are not;
//! - no heredoc (an unquoted one's body is expanded, and it is where a
//!   grammar most easily parts from bash; agents mostly feed heredocs to
//!   interpreters or files, which are exact anyway);
//! - no background `&` (the job would outlive the call, its timeout and
//!   its output);
//! - no subshell, group, function, `if`/`for`/`while`/`case`, `[[ ]]`,
//!   `(( ))`, `!`, `time`, `coproc`, comment, or anything the parser does
//!   not know;
//! - no carriage return, other control character or unusual blank (bash
//!   splits words on spaces, tabs and newlines only, a grammar may not).
//!
//! A command the parser cannot read (a syntax error, or over 64 KiB),
//! or whose parts are not all coverable, is remembered as its **exact
//! text** only, and the label says so ("exactly `ls > out.txt`"). A
//! command whose every part is coverable remembers each part on its own:
//! "always" on `cargo fmt && cargo test` remembers `cargo fmt` and `cargo
//! test`, each then covered alone or chained with other covered
//! commands.
//!
//! An answer is **rejected** more broadly, as that fails safe: "always
//! reject" remembers each part's program (with its subcommand, for
//! programs that have subcommands), or the exact text of a command that
//! is not coverable. A later command is rejected when any simple command
//! found in it — also inside a substitution, a subshell, or a command
//! that does not parse — has a rejected program (by the program as
//! written, or the last part of its path), or its text is rejected.
//! Rejection wins over allowing.
//!
//! # Keys
//!
//! A [`Scope`] has a stable string form for the session store
//! ([`Scope::key`], [`Scope::from_key`]): `tool:<name>`, `bash:<program>`
//! or `bash:<program> <subcommand>` (words quoted as bash would read
//! them), `bash-exact:<words>` and `bash-text:<command>`. Keys recorded
//! by earlier versions (`bash:ls`, `bash:cargo test`) read as program
//! scopes and keep their meaning, but under today's rule: an old
//! `bash:python3` allows nothing (an interpreter only matches exactly),
//! while it still rejects every `python3` command. An old `tool:bash`
//! (a `bash` call without a readable command) still covers only such
//! calls.

mod programs;
mod shell;

use std::collections::HashSet;

use dsh_system_prompt::template::series;

use programs::{Guard, Kind};
use shell::{SimpleCommand, Word};

/// A person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Said {
    /// "Allow".
    Allowed,
    /// "Reject".
    Rejected,
}

/// What one remembered answer holds for: a tool, a `bash` program (with
/// its subcommand), an exact `bash` command as words, or an exact
/// `bash` command text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Scope(Key);

/// A scope's kinds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    /// Every call of the tool (`bash`: every call without a readable
    /// command).
    Tool(String),
    /// A program, with its subcommand for programs that have them.
    Program {
        program: String,
        subcommand: Option<String>,
    },
    /// One simple command, exactly these words.
    Argv(Vec<String>),
    /// One whole command, exactly this text.
    Text(String),
}

/// The key prefixes.
const TOOL_PREFIX: &str = "tool:";
const PROGRAM_PREFIX: &str = "bash:";
const ARGV_PREFIX: &str = "bash-exact:";
const TEXT_PREFIX: &str = "bash-text:";

/// The tool whose calls are read as shell commands, and its argument.
const BASH_TOOL: &str = dsh_tool_bash::TOOL_NAME;
const COMMAND_ARGUMENT: &str = "command";

impl Scope {
    /// Every call of tool `name`.
    pub fn tool(name: &str) -> Scope {
        Scope(Key::Tool(name.to_owned()))
    }

    /// The scope's stable string form, for the session store.
    pub fn key(&self) -> String {
        match &self.0 {
            Key::Tool(name) => format!("{TOOL_PREFIX}{name}"),
            Key::Program {
                program,
                subcommand,
            } => {
                let mut key = format!("{PROGRAM_PREFIX}{}", quote(program));
                if let Some(subcommand) = subcommand {
                    key.push(' ');
                    key.push_str(&quote(subcommand));
                }
                key
            }
            Key::Argv(words) => format!("{ARGV_PREFIX}{}", quote_all(words)),
            Key::Text(text) => format!("{TEXT_PREFIX}{text}"),
        }
    }

    /// The scope a key stands for: one from [`Scope::key`], or one an
    /// earlier version recorded (`bash:ls`, `bash:cargo test`). `None`
    /// for a key of no scope.
    pub fn from_key(key: &str) -> Option<Scope> {
        let key = if let Some(text) = key.strip_prefix(TEXT_PREFIX) {
            Key::Text(text.to_owned())
        } else if let Some(words) = key.strip_prefix(ARGV_PREFIX) {
            Key::Argv(literal_words(words)?)
        } else if let Some(words) = key.strip_prefix(PROGRAM_PREFIX) {
            // Earlier versions wrote the command's leading words as they
            // were; this one quotes them, so both read back through the
            // parser, and what it cannot read by whitespace.
            let words = literal_words(words)
                .unwrap_or_else(|| words.split_whitespace().map(str::to_owned).collect());
            match <[String; 1]>::try_from(words) {
                Ok([program]) => Key::Program {
                    program,
                    subcommand: None,
                },
                Err(words) => {
                    let [program, subcommand] = <[String; 2]>::try_from(words).ok()?;
                    Key::Program {
                        program,
                        subcommand: Some(subcommand),
                    }
                }
            }
        } else {
            let name = key.strip_prefix(TOOL_PREFIX)?;
            if name.is_empty() {
                return None;
            }
            Key::Tool(name.to_owned())
        };
        Some(Scope(key))
    }

    /// What the scope covers, in the person's words, for an answer
    /// `said`: "`ls` (any arguments)", "exactly `python3 build.py`".
    pub fn describe(&self, said: Said) -> String {
        match &self.0 {
            Key::Tool(name) if name == BASH_TOOL => {
                format!("every {} call without a command", code(name))
            }
            Key::Tool(name) => format!("every {} call", code(name)),
            Key::Program {
                program,
                subcommand,
            } => describe_program(program, subcommand.as_deref(), said),
            Key::Argv(words) => format!("exactly {}", code(&quote_all(words))),
            Key::Text(text) => format!("exactly {}", code(text)),
        }
    }
}

/// What a program scope covers, in the person's words.
fn describe_program(program: &str, subcommand: Option<&str>, said: Said) -> String {
    let named = match subcommand {
        Some(subcommand) => code(&format!("{} {}", quote(program), quote(subcommand))),
        None => code(&quote(program)),
    };
    if said == Said::Rejected {
        return format!("{named} (any arguments)");
    }
    let only_exactly = || format!("nothing: {named} is remembered only as an exact command");
    match (programs::kind(program), subcommand) {
        (Kind::Exact, _) => only_exactly(),
        (Kind::Subcommands(_), None) => format!("{named} without arguments"),
        (Kind::Subcommands(subcommands), Some(subcommand))
            if subcommands.exact.contains(&subcommand) =>
        {
            only_exactly()
        }
        (Kind::Subcommands(subcommands), Some(subcommand)) => {
            describe_guard(&named, subcommands.guard(subcommand))
        }
        (Kind::Guarded(guard), _) => describe_guard(&named, guard),
        (Kind::Any, _) => format!("{named} (any arguments)"),
    }
}

/// "`find` (any arguments but `-exec` …)".
fn describe_guard(named: &str, guard: Guard) -> String {
    if guard.is_empty() {
        return format!("{named} (any arguments)");
    }
    let options = (guard.options.iter().map(|option| (*option).to_owned()))
        .chain(guard.short.chars().map(|letter| format!("-{letter}")))
        .map(|option| code(&option));
    format!(
        "{named} (any arguments but {}, and none with `$` or a glob)",
        series(options, "or")
    )
}

/// What "always" on one call would remember: its scopes for each answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    allow: Vec<Scope>,
    reject: Vec<Scope>,
}

impl Offer {
    /// The scopes answer `said` remembers: one or several, never none.
    pub fn scopes(&self, said: Said) -> &[Scope] {
        match said {
            Said::Allowed => &self.allow,
            Said::Rejected => &self.reject,
        }
    }

    /// The words of the choice: "Always allow `ls` (any arguments)",
    /// "Always reject `rm` (any arguments)".
    pub fn label(&self, said: Said) -> String {
        let verb = match said {
            Said::Allowed => "Always allow",
            Said::Rejected => "Always reject",
        };
        let scopes = self.scopes(said).iter().map(|scope| scope.describe(said));
        format!("{verb} {}", series(scopes, "and"))
    }
}

/// What "always" on a call of `tool` with `arguments_json` would
/// remember, allowing or rejecting.
pub fn offer(tool: &str, arguments_json: &str) -> Offer {
    let Some(command) = bash_command(tool, arguments_json) else {
        let scope = Scope::tool(tool);
        return Offer {
            allow: vec![scope.clone()],
            reject: vec![scope],
        };
    };
    let text = || vec![Scope(Key::Text(command.clone()))];
    let Some(commands) = shell::read(&command).plain else {
        return Offer {
            allow: text(),
            reject: text(),
        };
    };
    let scopes = |scope_of: fn(&SimpleCommand) -> Option<Key>| -> Option<Vec<Scope>> {
        let mut scopes: Vec<Scope> = Vec::new();
        for simple in &commands {
            let scope = Scope(scope_of(simple)?);
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        Some(scopes)
    };
    Offer {
        allow: scopes(allow_key).unwrap_or_else(text),
        reject: scopes(reject_key).unwrap_or_else(text),
    }
}

/// The command of a `bash` call; `None` for another tool, or a call
/// without a readable command.
fn bash_command(tool: &str, arguments_json: &str) -> Option<String> {
    if tool != BASH_TOOL {
        return None;
    }
    let arguments: serde_json::Value = serde_json::from_str(arguments_json).ok()?;
    Some(arguments.get(COMMAND_ARGUMENT)?.as_str()?.to_owned())
}

/// What "always allow" remembers of one simple command; `None` when
/// nothing short of the whole command's text can be.
fn allow_key(simple: &SimpleCommand) -> Option<Key> {
    let program = simple.program()?;
    let arguments = simple.arguments();
    let by_program = |subcommand: Option<&str>| Key::Program {
        program: program.to_owned(),
        subcommand: subcommand.map(str::to_owned),
    };
    let exactly = || {
        let argv = simple.argv()?;
        Some(Key::Argv(argv.into_iter().map(str::to_owned).collect()))
    };
    match programs::kind(program) {
        Kind::Exact => exactly(),
        Kind::Any => Some(by_program(None)),
        Kind::Guarded(guard) if guard_passes(guard, arguments) => Some(by_program(None)),
        Kind::Guarded(_) => exactly(),
        Kind::Subcommands(subcommands) => match arguments.first().and_then(Word::literal) {
            Some(subcommand)
                if is_subcommand(subcommand)
                    && !subcommands.exact.contains(&subcommand)
                    && guard_passes(subcommands.guard(subcommand), arguments) =>
            {
                Some(by_program(Some(subcommand)))
            }
            _ => exactly(),
        },
    }
}

/// What "always reject" remembers of one simple command: its program,
/// with the subcommand of a program that has them; `None` when the
/// program is not written out.
fn reject_key(simple: &SimpleCommand) -> Option<Key> {
    let program = simple.program()?;
    let subcommand = match programs::kind(program) {
        Kind::Subcommands(_) => (simple.arguments().first())
            .and_then(Word::literal)
            .filter(|word| is_subcommand(word)),
        _ => None,
    };
    Some(Key::Program {
        program: program.to_owned(),
        subcommand: subcommand.map(str::to_owned),
    })
}

/// Whether a word reads as a subcommand (`test`, `run-script`,
/// `exec:java`), not an option, a path or a file.
fn is_subcommand(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_alphanumeric())
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':'))
}

/// Whether `arguments` pass `guard`: none is a guarded option, and each
/// is written out (an expansion could produce one).
fn guard_passes(guard: Guard, arguments: &[Word]) -> bool {
    guard.is_empty()
        || (arguments.iter()).all(|word| word.literal().is_some_and(|word| !guard.forbids(word)))
}

/// Whether an allowed `scope` covers one simple command.
fn allows(scope: &Key, simple: &SimpleCommand) -> bool {
    match scope {
        Key::Program {
            program,
            subcommand,
        } => {
            if simple.program() != Some(program.as_str()) {
                return false;
            }
            let arguments = simple.arguments();
            let first = arguments.first().and_then(Word::literal);
            let subcommand_matches = subcommand.is_none() || first == subcommand.as_deref();
            match programs::kind(program) {
                Kind::Exact => false,
                Kind::Any => subcommand_matches,
                Kind::Guarded(guard) => subcommand_matches && guard_passes(guard, arguments),
                Kind::Subcommands(subcommands) => match subcommand {
                    None => arguments.is_empty(),
                    Some(subcommand) => {
                        subcommand_matches
                            && !subcommands.exact.contains(&subcommand.as_str())
                            && guard_passes(subcommands.guard(subcommand), arguments)
                    }
                },
            }
        }
        Key::Argv(words) => simple
            .argv()
            .is_some_and(|argv| argv.iter().eq(words.iter())),
        Key::Tool(_) | Key::Text(_) => false,
    }
}

/// Whether a rejected `scope` rejects one simple command: by program as
/// written or by the last part of its path, with any arguments (after
/// the subcommand, if the scope has one).
fn rejects(scope: &Key, simple: &SimpleCommand) -> bool {
    match scope {
        Key::Program {
            program,
            subcommand,
        } => {
            let Some(found) = simple.program() else {
                return false;
            };
            let base = found.rsplit('/').next().unwrap_or(found);
            let first = simple.arguments().first().and_then(Word::literal);
            (found == program || base == program)
                && (subcommand.is_none() || first == subcommand.as_deref())
        }
        Key::Argv(words) => simple
            .argv()
            .is_some_and(|argv| argv.iter().eq(words.iter())),
        Key::Tool(_) | Key::Text(_) => false,
    }
}

/// The answers a person gave "always" to, for the rest of a session.
#[derive(Debug, Clone, Default)]
pub struct Remembered {
    allowed: HashSet<Scope>,
    rejected: HashSet<Scope>,
}

impl Remembered {
    /// Remembers `said` for `scope`. A scope both allowed and rejected is
    /// rejected.
    pub fn remember(&mut self, scope: Scope, said: Said) {
        match said {
            Said::Allowed => self.allowed.insert(scope),
            Said::Rejected => self.rejected.insert(scope),
        };
    }

    /// Forgets what was said for `scope` (a tool that changed: what was
    /// answered was about the tool as it was).
    pub fn forget(&mut self, scope: &Scope) {
        self.allowed.remove(scope);
        self.rejected.remove(scope);
    }

    /// Remembers `said` for each scope `offer` holds for it.
    pub fn remember_offer(&mut self, offer: &Offer, said: Said) {
        for scope in offer.scopes(said) {
            self.remember(scope.clone(), said);
        }
    }

    /// What was said "always" of a call of `tool` with `arguments_json`:
    /// `Rejected` when anything in it is rejected, `Allowed` when all of
    /// it is covered, otherwise `None` (ask).
    pub fn said(&self, tool: &str, arguments_json: &str) -> Option<Said> {
        let Some(command) = bash_command(tool, arguments_json) else {
            let scope = Scope::tool(tool);
            return if self.rejected.contains(&scope) {
                Some(Said::Rejected)
            } else if self.allowed.contains(&scope) {
                Some(Said::Allowed)
            } else {
                None
            };
        };
        let text = Scope(Key::Text(command.clone()));
        if self.rejected.contains(&text) {
            return Some(Said::Rejected);
        }
        let reading = shell::read(&command);
        let rejected = (reading.seen.iter())
            .any(|simple| (self.rejected.iter()).any(|scope| rejects(&scope.0, simple)));
        if rejected {
            return Some(Said::Rejected);
        }
        if self.allowed.contains(&text) {
            return Some(Said::Allowed);
        }
        let covered = reading.plain.is_some_and(|commands| {
            commands
                .iter()
                .all(|simple| (self.allowed.iter()).any(|scope| allows(&scope.0, simple)))
        });
        covered.then_some(Said::Allowed)
    }
}

/// The words of one simple command written out in `text`, as bash reads
/// them; `None` when `text` is anything else.
fn literal_words(text: &str) -> Option<Vec<String>> {
    let commands = shell::read(text).plain?;
    let [simple] = &commands[..] else {
        return None;
    };
    let argv = simple.argv()?;
    Some(argv.into_iter().map(str::to_owned).collect())
}

/// `word` as bash reads it back: as it is when it has only characters
/// that mean nothing to bash and is no reserved word, otherwise in single
/// quotes.
fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && !shell::RESERVED.contains(&word)
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+:,./-".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Words quoted and joined with spaces.
fn quote_all(words: &[String]) -> String {
    let quoted: Vec<String> = words.iter().map(|word| quote(word)).collect();
    quoted.join(" ")
}

/// `text` as a Markdown code span, fenced with more backquotes than any
/// run inside it.
fn code(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with(['`', ' ']) || text.ends_with(['`', ' ']) {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

#[cfg(test)]
pub(crate) mod tests;
