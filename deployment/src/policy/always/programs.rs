//! What kind of program a command's first word names, for what an
//! "always" answer about it may cover: a few lists, each a group of
//! programs with the reason it is there, and a program in one list at
//! most.
//!
//! A program not in the table is [`Kind::Any`]: "always" covers it with
//! any arguments, and the label says so.

/// How an "always allow" answer covers a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Given code, or the name of another program, in its arguments, it
    /// runs anything: an interpreter, a wrapper, a shell builtin that
    /// evaluates text. Covered only as the exact command.
    Exact,
    /// A program whose first argument says what it does (`cargo test`,
    /// `git status`, `make check`): covered by program and subcommand.
    Subcommands(Subcommands),
    /// Usually a reader, but these options make it run a program or
    /// write a file: covered with any arguments but those, each written
    /// out (no expansion could produce one).
    Guarded(Guard),
    /// Covered with any arguments.
    Any,
}

/// A program with subcommands: the ones that run code of their own
/// arguments, and those with options that do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Subcommands {
    /// Subcommands covered only as the exact command.
    pub(super) exact: &'static [&'static str],
    /// Subcommands covered with any arguments but these options.
    pub(super) guarded: &'static [(&'static str, Guard)],
}

impl Subcommands {
    /// The guard of subcommand `subcommand` (none: any arguments).
    pub(super) fn guard(&self, subcommand: &str) -> Guard {
        (self.guarded.iter())
            .find(|(name, _)| *name == subcommand)
            .map_or(Guard::NONE, |(_, guard)| *guard)
    }
}

/// Options that make a program run another one or write a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Guard {
    /// Options, matched whole, with an `=value`, or (`--` ones) as any
    /// abbreviation, which GNU `getopt_long` and git accept.
    pub(super) options: &'static [&'static str],
    /// Short options that may stand in a cluster (`-uo FILE`).
    pub(super) short: &'static str,
}

impl Guard {
    /// No guard: every argument allowed.
    const NONE: Guard = guard(&[], "");

    /// Whether the guard forbids nothing.
    pub(super) fn is_empty(&self) -> bool {
        self.options.is_empty() && self.short.is_empty()
    }

    /// Whether argument `argument` is one of the guarded options.
    pub(super) fn forbids(&self, argument: &str) -> bool {
        let name = argument.split_once('=').map_or(argument, |(name, _)| name);
        let long_prefix =
            |option: &str| name.len() > 2 && name.starts_with("--") && option.starts_with(name);
        if self
            .options
            .iter()
            .any(|option| *option == name || long_prefix(option))
        {
            return true;
        }
        // A cluster of short options, or one with its value attached.
        match argument.strip_prefix('-') {
            Some(cluster) if !cluster.starts_with('-') => {
                cluster.chars().any(|letter| self.short.contains(letter))
            }
            _ => false,
        }
    }
}

/// The name a program is looked up by: the last part of a path, and
/// without a version suffix (`/usr/bin/python3.12` → `python`).
fn names(program: &str) -> [&str; 2] {
    let base = program.rsplit('/').next().unwrap_or(program);
    let unversioned = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    if unversioned.is_empty() {
        [base, base]
    } else {
        [base, unversioned]
    }
}

/// The kind of program `program` (a command's first word, as written
/// after quote removal) names.
pub(super) fn kind(program: &str) -> Kind {
    let [base, unversioned] = names(program);
    match table(base) {
        Kind::Any => table(unversioned),
        known => known,
    }
}

/// Shells and interpreters: their arguments are a script or code.
const INTERPRETERS: &[&str] = &[
    "sh",
    "bash",
    "dash",
    "zsh",
    "ksh",
    "mksh",
    "yash",
    "fish",
    "csh",
    "tcsh",
    "busybox",
    "toybox",
    "python",
    "pypy",
    "perl",
    "ruby",
    "irb",
    "node",
    "nodejs",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "wish",
    "Rscript",
    "R",
    "julia",
    "ghci",
    "runghc",
    "runhaskell",
    "java",
    "jshell",
    "groovy",
    "scala",
    "kotlin",
    "osascript",
    "pwsh",
    "powershell",
    "expect",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "sed",
    "gsed",
];

/// Editors, pagers and debuggers: commands in their arguments (`vim -c`,
/// `gdb -ex`, `less +!cmd`, `man -P`).
const EDITORS: &[&str] = &[
    "vi",
    "vim",
    "nvim",
    "view",
    "ex",
    "ed",
    "emacs",
    "emacsclient",
    "nano",
    "less",
    "more",
    "man",
    "gdb",
    "lldb",
    "rr",
];

/// Wrappers: they run the program their arguments name.
const WRAPPERS: &[&str] = &[
    "env",
    "xargs",
    "sudo",
    "doas",
    "su",
    "runuser",
    "pkexec",
    "setpriv",
    "sg",
    "nohup",
    "timeout",
    "nice",
    "ionice",
    "chrt",
    "taskset",
    "numactl",
    "prlimit",
    "stdbuf",
    "setsid",
    "unshare",
    "nsenter",
    "chroot",
    "flock",
    "script",
    "unbuffer",
    "faketime",
    "fakeroot",
    "strace",
    "ltrace",
    "valgrind",
    "perf",
    "time",
    "watch",
    "parallel",
    "entr",
    "watchexec",
    "nodemon",
    "hyperfine",
    "ssh",
    "mosh",
    "tmux",
    "screen",
    "firejail",
    "bwrap",
    "systemd-run",
    "dbus-run-session",
    "xvfb-run",
    "npx",
    "pnpx",
    "bunx",
    "uvx",
    "pipx",
    "gosu",
    "su-exec",
];

/// Bash words that run text as code or set what later commands run (a
/// trap, an alias, a variable whose subscript is evaluated: `read
/// 'a[$(…)]'`), and reserved words, should one stand quoted in a
/// command's place.
const SHELL_WORDS: &[&str] = &[
    "eval",
    "source",
    ".",
    "exec",
    "command",
    "builtin",
    "let",
    "declare",
    "typeset",
    "local",
    "readonly",
    "export",
    "unset",
    "read",
    "mapfile",
    "readarray",
    "trap",
    "alias",
    "unalias",
    "enable",
    "set",
    "shopt",
    "getopts",
    "hash",
    "fc",
    "complete",
    "compgen",
    "compopt",
    "bind",
    "wait",
    "coproc",
    "function",
    "if",
    "then",
    "else",
    "elif",
    "fi",
    "case",
    "esac",
    "for",
    "select",
    "while",
    "until",
    "do",
    "done",
    "in",
    "{",
    "}",
    "!",
    "[[",
    "]]",
];

/// Readers with options that run a program or write a file; `printf -v
/// 'a[$(…)]'` and `test -v 'a[$(…)]'` evaluate a subscript.
const GUARDED: &[(&str, Guard)] = &[
    ("printf", guard(&["-v"], "")),
    ("test", guard(&["-v", "-R"], "")),
    ("[", guard(&["-v", "-R"], "")),
    (
        "find",
        guard(
            &[
                "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
                "-fls",
            ],
            "",
        ),
    ),
    ("fd", guard(&["--exec", "--exec-batch"], "xX")),
    ("fdfind", guard(&["--exec", "--exec-batch"], "xX")),
    ("rg", guard(&["--pre"], "")),
    ("sort", guard(&["--compress-program", "--output"], "o")),
    ("rsync", guard(&["--rsh", "--rsync-path"], "e")),
];

/// Programs with subcommands. Subcommands that run a command or code
/// given as an argument (`uv run`, `npm exec`, `docker run`) are
/// remembered exactly; those that run the project's own scripts or build
/// (`npm run`, `cargo run`, `make test`) by name.
const SUBCOMMANDS: &[(&str, Subcommands)] = &[
    ("git", GIT),
    ("cargo", exact(&["watch", "script"])),
    ("rustup", exact(&["run"])),
    ("npm", exact(&["exec", "x", "explore"])),
    ("pnpm", exact(&["exec", "dlx"])),
    ("yarn", exact(&["exec", "dlx"])),
    ("bun", exact(&["run", "x", "exec", "repl"])),
    ("deno", exact(&["run", "eval", "repl", "x", "serve"])),
    ("go", exact(&["run", "tool"])),
    ("uv", exact(&["run", "tool"])),
    ("poetry", exact(&["run", "shell"])),
    ("pipenv", exact(&["run", "shell"])),
    ("hatch", exact(&["run", "shell"])),
    ("pdm", exact(&["run"])),
    ("conda", exact(&["run"])),
    ("mamba", exact(&["run"])),
    ("micromamba", exact(&["run"])),
    ("bundle", exact(&["exec"])),
    ("nix", exact(&["run", "shell", "develop", "eval", "repl"])),
    (
        "stack",
        exact(&["exec", "runghc", "runhaskell", "ghci", "eval", "repl"]),
    ),
    ("cabal", exact(&["exec", "run", "repl"])),
    ("dotnet", exact(&["exec", "fsi"])),
    ("docker", exact(&["run", "exec", "compose", "container"])),
    ("podman", exact(&["run", "exec", "compose", "container"])),
    ("kubectl", exact(&["exec", "run", "debug", "attach"])),
    ("gh", exact(&["alias", "extension"])),
    ("ip", exact(&["netns"])),
    ("make", exact(&[])),
    ("gmake", exact(&[])),
    ("just", exact(&[])),
    ("ninja", exact(&[])),
    ("mvn", exact(&[])),
    ("gradle", exact(&[])),
    ("gradlew", exact(&[])),
    ("pip", exact(&[])),
    ("gem", exact(&[])),
    ("rake", exact(&[])),
    ("mix", exact(&[])),
    ("sbt", exact(&[])),
    ("helm", exact(&[])),
    ("terraform", exact(&[])),
    ("tofu", exact(&[])),
    ("brew", exact(&[])),
    ("apt", exact(&[])),
    ("apt-get", exact(&[])),
    ("dnf", exact(&[])),
    ("yum", exact(&[])),
    ("systemctl", exact(&[])),
];

/// git: subcommands that run commands, or write configuration and hooks
/// that later ones run; options that name a program to run or a file to
/// write.
const GIT: Subcommands = Subcommands {
    exact: &[
        "config",
        "clone",
        "submodule",
        "bisect",
        "rebase",
        "filter-branch",
        "difftool",
        "mergetool",
        "daemon",
        "instaweb",
        "send-email",
        "credential",
        "archimport",
        "cvsimport",
        "svn",
    ],
    guarded: &[
        ("fetch", guard(&["--upload-pack"], "")),
        ("pull", guard(&["--upload-pack"], "")),
        ("ls-remote", guard(&["--upload-pack"], "")),
        ("push", guard(&["--receive-pack", "--exec"], "")),
        ("archive", guard(&["--exec", "--output"], "o")),
        ("grep", guard(&["--open-files-in-pager"], "O")),
        ("diff", guard(&["--output"], "")),
        ("log", guard(&["--output"], "")),
        ("show", guard(&["--output"], "")),
        ("init", guard(&["--template"], "")),
    ],
};

/// A guard of these options and short option letters.
const fn guard(options: &'static [&'static str], short: &'static str) -> Guard {
    Guard { options, short }
}

/// Subcommands of which `exact` are remembered exactly, none guarded.
const fn exact(exact: &'static [&'static str]) -> Subcommands {
    Subcommands {
        exact,
        guarded: &[],
    }
}

/// A program's kind by the name it is run as.
fn table(name: &str) -> Kind {
    let listed = |group: &[&str]| group.contains(&name);
    if [INTERPRETERS, EDITORS, WRAPPERS, SHELL_WORDS]
        .into_iter()
        .any(listed)
    {
        return Kind::Exact;
    }
    if let Some((_, guard)) = GUARDED.iter().find(|(program, _)| *program == name) {
        return Kind::Guarded(*guard);
    }
    if let Some((_, subcommands)) = SUBCOMMANDS.iter().find(|(program, _)| *program == name) {
        return Kind::Subcommands(*subcommands);
    }
    Kind::Any
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpreters_are_found_by_base_name_and_without_a_version() {
        for program in [
            "python3",
            "/usr/bin/python3.12",
            "python",
            "./node",
            "perl5.36",
            "sh",
        ] {
            assert_eq!(kind(program), Kind::Exact, "{program}");
        }
        assert_eq!(kind("ls"), Kind::Any);
        assert_eq!(kind("/bin/ls"), Kind::Any);
        assert!(matches!(kind("pip3"), Kind::Subcommands(_)));
        // A name of digits only keeps its digits.
        assert_eq!(kind("7"), Kind::Any);
    }

    #[test]
    fn every_program_is_listed_once() {
        let mut names: Vec<&str> = [INTERPRETERS, EDITORS, WRAPPERS, SHELL_WORDS].concat();
        names.extend(GUARDED.iter().map(|(name, _)| *name));
        names.extend(SUBCOMMANDS.iter().map(|(name, _)| *name));
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count);
    }

    #[test]
    fn a_guard_matches_options_whole_with_values_abbreviated_and_clustered() {
        let Kind::Guarded(sort) = kind("sort") else {
            panic!("sort is guarded");
        };
        for argument in [
            "--output",
            "--output=P",
            "--out",
            "--compress-program=sh",
            "-o",
            "-uoP",
        ] {
            assert!(sort.forbids(argument), "{argument}");
        }
        for argument in ["-u", "-k1,1", "--", "-", "file", "--unique"] {
            assert!(!sort.forbids(argument), "{argument}");
        }
        let Kind::Guarded(find) = kind("find") else {
            panic!("find is guarded");
        };
        assert!(find.forbids("-exec"));
        assert!(!find.forbids("-name"));
        assert!(!find.forbids("-e"), "find's primaries are not abbreviated");
    }
}
