//! Opening the authorization URL in a browser, where there is one.

use std::process::{Command, Stdio};

/// The variable that, set to anything but empty or `0`, keeps `dsh mcp
/// login` from opening a browser: it prints the URL and waits.
pub const NO_BROWSER_VAR: &str = "DSH_NO_BROWSER";

/// Opens `url` in the person's browser: `$BROWSER` when set (its
/// `:`-separated commands tried in turn, as `xdg-open` reads it), else
/// `xdg-open` (`open` on macOS). Whether one started; never when
/// [`NO_BROWSER_VAR`] is set. The URL is printed either way, so a
/// person without a browser here opens it elsewhere.
pub fn open_browser(url: &str) -> bool {
    if std::env::var_os(NO_BROWSER_VAR).is_some_and(|value| !value.is_empty() && value != "0") {
        return false;
    }
    let commands: Vec<String> = match std::env::var("BROWSER") {
        Ok(browsers) if !browsers.trim().is_empty() => {
            browsers.split(':').map(str::to_owned).collect()
        }
        _ if cfg!(target_os = "macos") => vec!["open".to_owned()],
        _ => vec!["xdg-open".to_owned()],
    };
    commands.iter().any(|command| {
        let mut words = command.split_whitespace();
        let Some(program) = words.next() else {
            return false;
        };
        Command::new(program)
            .args(words)
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .is_ok()
    })
}
