//! `dsh sessions`: the sessions the deployment's store recorded, the most
//! recent first (`--json`: all their fields); `dsh sessions delete ID` and
//! `delete --all`.

use dsh_session_store::{ListQuery, SessionInfo};

use crate::args::{SessionsAction, SessionsArgs};
use crate::commands::{Outcome, print};
use crate::diagnostics::escape_controls_in_line;
use crate::explain::{columns, row};
use dsh_deployment::Problem;
use dsh_deployment::host::store;
use dsh_deployment::runtime;

pub(crate) fn run(args: &SessionsArgs) -> Outcome {
    let deployment = runtime::load(args.deployment.config.as_deref())?;
    let store = store::open_for_listing(&deployment).map_err(|problem| vec![problem])?;
    match &args.action {
        None => {
            let sessions = store
                .list(&ListQuery::default())
                .map_err(|error| vec![store::problem(error)])?;
            if args.json {
                let json = serde_json::to_string_pretty(&sessions)
                    .map_err(|error| vec![Problem::new(format!("cannot write JSON: {error}"))])?;
                print(&format!("{json}\n"))
            } else {
                print(&table(&sessions, dsh_session_store::now_ms()))
            }
        }
        Some(SessionsAction::Delete(delete)) => match &delete.id {
            Some(id) => {
                store
                    .delete(id)
                    .map_err(|error| vec![store::problem(error)])?;
                print(&format!("deleted session {id}\n"))
            }
            None => {
                let in_use = store
                    .delete_all()
                    .map_err(|error| vec![store::problem(error)])?;
                if in_use.is_empty() {
                    print("deleted every session\n")
                } else {
                    Err(in_use
                        .iter()
                        .map(|id| {
                            Problem::new(format!(
                                "session `{id}` is open in another dsh process and was kept"
                            ))
                        })
                        .collect())
                }
            }
        },
    }
}

/// One line a session: id, agent, age, working directory, title. What
/// the store holds was written by others (a prompt, a directory's name,
/// whatever else wrote the file): its control characters are shown
/// escaped, never sent to the terminal, and a line break never splits a
/// row.
fn table(sessions: &[SessionInfo], now_ms: i64) -> String {
    if sessions.is_empty() {
        return "no sessions recorded yet\n".to_owned();
    }
    let mut rows = vec![row(["ID", "AGENT", "AGE", "CWD", "TITLE"])];
    rows.extend(sessions.iter().map(|session| {
        let cwd = (session.cwd.as_deref())
            .map_or_else(|| "-".to_owned(), |cwd| cwd.display().to_string());
        let cells = [
            session.id.clone(),
            session.agent.clone(),
            age(now_ms - session.updated_at_ms),
            cwd,
            session.title.clone(),
        ];
        cells.map(escape_controls_in_line).to_vec()
    }));
    let mut out = String::new();
    columns(&mut out, &rows);
    out
}

/// How long ago, in the largest unit that fits (`42s`, `5m`, `3h`, `2d`).
fn age(ms: i64) -> String {
    let seconds = ms.max(0) / 1000;
    match seconds {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_use_the_largest_unit() {
        assert_eq!(age(4_000), "4s");
        assert_eq!(age(125_000), "2m");
        assert_eq!(age(3 * 3_600_000), "3h");
        assert_eq!(age(49 * 3_600_000), "2d");
        assert_eq!(age(-5), "0s", "a clock set back is no negative age");
    }

    /// A first prompt that would retitle the terminal (OSC 0), from a
    /// directory whose name clears the screen and breaks the line.
    #[test]
    fn control_characters_of_titles_and_directories_are_escaped() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let store = dsh_session_store::Store::open(dir.path().join("sessions.db"))
            .expect("the store opens");
        let new = dsh_session_store::NewSession::new("coder", "m").with_cwd("/w/\x1b[2J\nx\ty");
        let writer = store.create(&new).expect("a session");
        writer
            .append(&dsh_agent_loop::Event::UserMessage {
                text: "\x1b]0;owned\x07 fix\rit".into(),
            })
            .expect("recorded");
        let sessions = store.list(&ListQuery::default()).expect("listed");
        let printed = table(&sessions, sessions[0].updated_at_ms);
        let row = printed.lines().nth(1).expect("a row");
        assert!(
            row.ends_with("  /w/\\u{1b}[2J\\u{a}x\\u{9}y  \\u{1b}]0;owned\\u{7} fix\\u{d}it"),
            "{printed:?}"
        );
        assert_eq!(printed.lines().count(), 2, "{printed:?}");
        assert!(
            !printed.chars().any(|c| c.is_control() && c != '\n'),
            "{printed:?}"
        );
    }
}
