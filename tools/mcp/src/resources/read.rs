//! A server's resources, reached through one tool of its own:
//! `<server>__read_resource`, whose description lists them.
//!
//! The model has no other way to open a resource: a result's resource
//! link names this tool, and the tool reads any URI the server has, listed
//! or not (a template's, a link's).

use std::fmt::Write as _;
use std::sync::Arc;

use dsh_system_prompt::ToolSchema;
use rmcp::RoleClient;
use rmcp::model::{PaginatedRequestParams, ReadResourceRequestParams, Resource, ResourceTemplate};
use rmcp::service::{Peer, ServiceError};

use crate::MAX_RESULT_BYTES;
use crate::tools::render::{capped, render_contents};

/// The server's name of the tool that reads its resources; the model sees
/// it as `<server>__read_resource`.
pub const READ_RESOURCE: &str = "read_resource";

/// The most resources the reader's description lists; the rest are
/// counted.
pub const MAX_LISTED_RESOURCES: usize = 50;

/// The most bytes of the reader's description that list resources: a
/// description goes into every request, a long list would cost every
/// step.
pub const MAX_RESOURCE_LIST_BYTES: usize = 4 * 1024;

/// The most pages of `resources/list` dsh reads, and the most resources.
const MAX_RESOURCE_PAGES: usize = 20;
const MAX_RESOURCES: usize = 1000;

/// Every resource `peer` lists, page after page, at most
/// `MAX_RESOURCE_PAGES` pages and `MAX_RESOURCES` resources (the rest are
/// not read: the reader still opens them by URI).
pub(crate) async fn list_resources(peer: &Peer<RoleClient>) -> Result<Vec<Resource>, ServiceError> {
    let mut resources = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_RESOURCE_PAGES {
        let params =
            cursor.map(|cursor| PaginatedRequestParams::default().with_cursor(Some(cursor)));
        let page = peer.list_resources(params).await?;
        resources.extend(page.resources);
        if resources.len() >= MAX_RESOURCES {
            resources.truncate(MAX_RESOURCES);
            break;
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    Ok(resources)
}

/// Every resource template `peer` lists (`resources/templates/list`),
/// with the same bounds as [`list_resources`].
pub(crate) async fn list_templates(
    peer: &Peer<RoleClient>,
) -> Result<Vec<ResourceTemplate>, ServiceError> {
    let mut templates = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_RESOURCE_PAGES {
        let params =
            cursor.map(|cursor| PaginatedRequestParams::default().with_cursor(Some(cursor)));
        let page = peer.list_resource_templates(params).await?;
        templates.extend(page.resource_templates);
        if templates.len() >= MAX_RESOURCES {
            templates.truncate(MAX_RESOURCES);
            break;
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    Ok(templates)
}

/// The reader's schema, as the model sees it: named `exposed`, its
/// description saying what it does and listing `resources` of server
/// `server`.
pub(crate) fn reader_schema(
    server: &str,
    exposed: &str,
    resources: &[Resource],
    templates: &[ResourceTemplate],
) -> Arc<ToolSchema> {
    let parameters = serde_json::json!({
        "type": "object",
        "properties": {
            "uri": {
                "type": "string",
                "description": "The URI of the resource, as listed here or as a resource link gives it"
            }
        },
        "required": ["uri"]
    });
    Arc::new(ToolSchema::new(
        exposed,
        reader_description(server, resources, templates),
        parameters,
    ))
}

/// What the reader does, and the server's resources: at most
/// [`MAX_LISTED_RESOURCES`] of them in at most
/// [`MAX_RESOURCE_LIST_BYTES`] bytes, then how many were left out.
pub(crate) fn reader_description(
    server: &str,
    resources: &[Resource],
    templates: &[ResourceTemplate],
) -> String {
    let mut text = format!(
        "Reads a resource of MCP server `{server}` by its URI: text comes back as it is \
         (cut past {} KiB), binary content is described, not shown. Resource links in \
         the server's results name URIs this reads.",
        MAX_RESULT_BYTES / 1024
    );
    let lines: Vec<String> = resources.iter().map(resource_line).collect();
    listed(&mut text, "\n\nIts resources:", &lines, "resources");
    let lines: Vec<String> = templates.iter().map(template_line).collect();
    listed(
        &mut text,
        "\n\nIts resource templates (an RFC 6570 URI template: fill in each `{…}` to \
         make a URI to read):",
        &lines,
        "templates",
    );
    text
}

/// `lines` after `heading` in `text`: at most [`MAX_LISTED_RESOURCES`]
/// of them in at most [`MAX_RESOURCE_LIST_BYTES`] bytes, then how many
/// `what` were left out; nothing when there are none.
fn listed(text: &mut String, heading: &str, lines: &[String], what: &str) {
    if lines.is_empty() {
        return;
    }
    text.push_str(heading);
    let mut listed = 0;
    let mut list_bytes = 0;
    for line in lines.iter().take(MAX_LISTED_RESOURCES) {
        if list_bytes + line.len() > MAX_RESOURCE_LIST_BYTES {
            break;
        }
        list_bytes += line.len();
        text.push_str(line);
        listed += 1;
    }
    if listed < lines.len() {
        let _ = write!(
            text,
            "\n- and {} more, not listed here (the list is cut at {MAX_LISTED_RESOURCES} \
             {what} and {} KiB)",
            lines.len() - listed,
            MAX_RESOURCE_LIST_BYTES / 1024
        );
    }
}

/// One resource template as the description lists it, as a resource is
/// ([`resource_line`]), by its URI template.
fn template_line(template: &ResourceTemplate) -> String {
    let title = template.title.as_deref().unwrap_or(&template.name);
    entry_line(
        &template.uri_template,
        title,
        template.mime_type.as_deref(),
        template.description.as_deref(),
    )
}

/// One resource as the description lists it:
/// `` - `uri`: title (type): description ``.
fn resource_line(resource: &Resource) -> String {
    let title = resource.title.as_deref().unwrap_or(&resource.name);
    entry_line(
        &resource.uri,
        title,
        resource.mime_type.as_deref(),
        resource.description.as_deref(),
    )
}

/// `` - `uri`: title (type) — description ``, on one line.
fn entry_line(uri: &str, title: &str, mime: Option<&str>, description: Option<&str>) -> String {
    let mut line = format!("\n- `{uri}`: {title}");
    if let Some(mime) = mime {
        let _ = write!(line, " ({mime})");
    }
    if let Some(description) = description.map(str::trim)
        && !description.is_empty()
    {
        // One line a resource: a description's own lines are joined.
        let description: Vec<&str> = description.split_whitespace().collect();
        let _ = write!(line, " — {}", description.join(" "));
    }
    line
}

/// The URI argument of a reader's call, or what is wrong with it.
pub(crate) fn uri_argument(arguments: &serde_json::Value) -> Result<String, String> {
    match arguments.get("uri") {
        Some(serde_json::Value::String(uri)) if !uri.trim().is_empty() => Ok(uri.clone()),
        Some(serde_json::Value::String(_)) => Err("`uri` is empty; give a resource's URI".into()),
        Some(other) => Err(format!("`uri` must be a string, not `{other}`")),
        None => Err("the argument `uri` is missing; give a resource's URI".into()),
    }
}

/// Reads the resource `uri`, as the model reads it: each of its contents
/// rendered (text with its URI, binary described), capped at
/// [`MAX_RESULT_BYTES`].
///
/// A server of 2026-07-28 may ask questions first (`input_required`):
/// `handler` answers them ([`crate::questions::mrtr`]).
pub(crate) async fn read(
    handler: &crate::questions::client::Handler,
    peer: &Peer<RoleClient>,
    uri: &str,
) -> Result<String, ServiceError> {
    use crate::questions::mrtr::Round;
    use rmcp::model::ReadResourceResponse;
    let params = ReadResourceRequestParams::new(uri);
    let result = crate::questions::mrtr::drive(handler, peer, params, |params| async move {
        match peer.read_resource_once(params).await? {
            ReadResourceResponse::Complete(result) => Ok(Round::Complete(result)),
            ReadResourceResponse::InputRequired(asked) => Ok(Round::InputRequired(asked)),
            _ => Err(ServiceError::UnexpectedResponse),
        }
    })
    .await?;
    let text = render_contents(&result.contents);
    Ok(capped(text, MAX_RESULT_BYTES))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_lists_resources_and_says_when_the_list_is_cut() {
        let resources: Vec<Resource> = (0..60)
            .map(|n| {
                Resource::new(format!("demo://r/{n}"), format!("r{n}"))
                    .with_mime_type("text/plain")
                    .with_description("A\nresource.")
            })
            .collect();
        let text = reader_description("demo", &resources[..1], &[]);
        assert!(
            text.ends_with("Its resources:\n- `demo://r/0`: r0 (text/plain) — A resource."),
            "{text}"
        );
        let text = reader_description("demo", &resources, &[]);
        assert_eq!(text.matches("\n- `demo://").count(), MAX_LISTED_RESOURCES);
        assert!(
            text.ends_with(
                "- and 10 more, not listed here (the list is cut at 50 resources and 4 KiB)"
            ),
            "{text}"
        );
        let long: Vec<Resource> = (0..20)
            .map(|n| Resource::new(format!("demo://r/{n}"), "x".repeat(400)))
            .collect();
        let text = reader_description("demo", &long, &[]);
        assert!(text.contains("- and 11 more"), "{text}");
        assert!(!reader_description("demo", &[], &[]).contains("Its resources"));
    }

    #[test]
    fn a_bad_uri_argument_says_what_is_wrong() {
        let uri = |value| uri_argument(&value);
        assert_eq!(
            uri(serde_json::json!({"uri": "a://b"})),
            Ok("a://b".to_owned())
        );
        assert!(uri(serde_json::json!({})).unwrap_err().contains("missing"));
        assert!(
            uri(serde_json::json!({"uri": 3}))
                .unwrap_err()
                .contains("must be a string")
        );
        assert!(
            uri(serde_json::json!({"uri": " "}))
                .unwrap_err()
                .contains("empty")
        );
    }
}
