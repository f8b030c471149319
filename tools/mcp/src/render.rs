//! A tool result as a text model reads it.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// The text of a tool result, and whether the server marked it failed
/// (`isError`).
///
/// Text blocks come as they are; an embedded text resource with its URI
/// (`[resource <uri>]` on the line before it); images, audio and binary
/// resources are described by type and size, never inlined; a resource
/// link by name and URI. Without any text, `structuredContent` is given
/// as its JSON. Blocks are joined with a newline.
pub(crate) fn render_result(result: &CallToolResult) -> (String, bool) {
    let mut parts: Vec<String> = Vec::with_capacity(result.content.len());
    let mut has_text = false;
    for block in &result.content {
        match block {
            ContentBlock::Text(text) => {
                has_text = true;
                parts.push(text.text.clone());
            }
            ContentBlock::Image(image) => parts.push(format!(
                "[image: {}, {} bytes, not shown]",
                image.mime_type,
                decoded_len(&image.data)
            )),
            ContentBlock::Audio(audio) => parts.push(format!(
                "[audio: {}, {} bytes, not shown]",
                audio.mime_type,
                decoded_len(&audio.data)
            )),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    has_text = true;
                    parts.push(format!("[resource {uri}]\n{text}"));
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => parts.push(format!(
                    "[binary resource {uri}: {}, {} bytes, not shown]",
                    mime_type.as_deref().unwrap_or("unknown type"),
                    decoded_len(blob)
                )),
                _ => parts.push("[resource of a kind dsh does not know]".to_owned()),
            },
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("[resource link: {} {}]", link.name, link.uri));
            }
            other => parts.push(format!(
                "[content of a kind dsh does not know: {}]",
                serde_json::to_value(other)
                    .ok()
                    .and_then(|value| value.get("type").cloned())
                    .unwrap_or_default()
            )),
        }
    }
    if !has_text && let Some(structured) = &result.structured_content {
        parts.push(structured.to_string());
    }
    (parts.join("\n"), result.is_error == Some(true))
}

/// The size of the data a base64 text encodes.
fn decoded_len(base64: &str) -> usize {
    let padding = base64.bytes().rev().take_while(|&b| b == b'=').count();
    (base64.len() / 4 * 3).saturating_sub(padding)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_render_for_a_text_model() {
        let result = CallToolResult::success(vec![
            ContentBlock::text("a pixel:"),
            ContentBlock::image("AAAA", "image/png"),
            ContentBlock::embedded_text("file:///a.md", "# A"),
        ]);
        assert_eq!(
            render_result(&result),
            (
                "a pixel:\n[image: image/png, 3 bytes, not shown]\n[resource file:///a.md]\n# A"
                    .to_owned(),
                false
            )
        );
        let mut structured = CallToolResult::error(Vec::new());
        structured.structured_content = Some(serde_json::json!({"answer": 42}));
        assert_eq!(
            render_result(&structured),
            (r#"{"answer":42}"#.to_owned(), true)
        );
    }
}
