//! `dsh mcp list|login|logout`: the deployment's MCP servers and their
//! OAuth logins (`dsh_deployment::runtime::logins`).

use dsh_deployment::runtime::{self, logins};
use dsh_tool_mcp::AuthStatus;
use dsh_tool_mcp::auth::{LoggedIn, open_browser};

use crate::args::{McpAction, McpArgs, McpServerArgs};
use crate::commands::{Outcome, print};

pub(crate) fn run(args: &McpArgs) -> Outcome {
    match &args.action {
        McpAction::List(deployment) => {
            let deployment = runtime::load(deployment.config.as_deref())?;
            let lines: String = (logins::server_auths(&deployment)?.iter())
                .map(|server| format!("{}\n", server.line()))
                .collect();
            print(&lines)
        }
        McpAction::Login(McpServerArgs { deployment, name }) => {
            let deployment = runtime::load(deployment.config.as_deref())?;
            let logged_in = logins::login(&deployment, name, |url| {
                // The URL first, on stdout, whether or not a browser opens:
                // a person without one here opens it elsewhere.
                let _ = print(&format!(
                    "Open this URL to log in to MCP server `{name}`:\n{url}\n"
                ));
                if !open_browser(url) {
                    let _ = print("Waiting for the browser to come back to dsh…\n");
                }
            })?;
            print(&format!("{}\n", logged_in_line(name, logged_in)))
        }
        McpAction::Logout(McpServerArgs { deployment, name }) => {
            let deployment = runtime::load(deployment.config.as_deref())?;
            let line = if logins::logout(&deployment, name)? {
                format!("Logged out of MCP server `{name}`: its tokens are forgotten.\n")
            } else {
                format!("MCP server `{name}` had no login kept.\n")
            };
            print(&line)
        }
    }
}

fn logged_in_line(name: &str, logged_in: LoggedIn) -> String {
    format!(
        "Logged in to MCP server `{name}`: {}",
        AuthStatus::LoggedIn(logged_in).describe(name)
    )
}
