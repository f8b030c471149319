//! A tool result as a model reads it: text, and the images a model may
//! see.

use dsh_agent_types::{Image, ImageBudget, decoded_len};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// The most bytes of a tool result the model reads, as for `bash`'s
/// output: a longer result keeps its first and its last half of this, with
/// a line between them saying how much was left out. A result goes into
/// every later request of the session, so one huge answer would cost every
/// step after it.
pub const MAX_RESULT_BYTES: usize = 30 * 1024;

/// A tool result as the model reads it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Rendered {
    /// The text, capped.
    pub(crate) text: String,
    /// The images a model may see, in the result's order, after the text.
    pub(crate) images: Vec<Image>,
    /// Whether the server marked it failed (`isError`).
    pub(crate) is_error: bool,
}

/// A tool result as the model reads it.
///
/// Text blocks come as they are; an embedded text resource with its URI
/// (`[resource <uri>]` on the line before it); an image a model API takes
/// ([`Image::check`], within the [`ImageBudget`] of one result) is one of
/// the images, any other described by type, size and why it is not sent;
/// audio and binary resources are described by type and size, never
/// inlined; a resource link by name
/// and URI, and by `reader`, the tool that opens it, when the server has
/// one. Without any text, `structuredContent` is given as its JSON. Text
/// parts are joined with a newline, and the whole is capped at
/// [`MAX_RESULT_BYTES`] ([`capped`]).
pub(crate) fn render_result(result: &CallToolResult, reader: Option<&str>) -> Rendered {
    let (text, images) = joined(result, reader);
    Rendered {
        text: capped(text, MAX_RESULT_BYTES),
        images,
        is_error: result.is_error == Some(true),
    }
}

/// What the model is told of a result that breaks its tool's
/// `outputSchema` (`schema`, compiled, or why it does not compile): the
/// specification has a server's structured content keep the schema, and
/// a model reading a result unremarked would trust it. `None` when it
/// keeps it. At most three violations are named, each at its JSON
/// Pointer.
pub(crate) fn schema_note(
    schema: &Result<std::sync::Arc<jsonschema::Validator>, String>,
    result: &CallToolResult,
) -> Option<String> {
    let validator = match schema {
        Ok(validator) => validator,
        Err(why) => {
            return Some(format!(
                "[dsh: the tool's outputSchema is not a valid JSON Schema ({why}); the \
                 structured content was not checked]"
            ));
        }
    };
    let Some(structured) = &result.structured_content else {
        return Some(
            "[dsh: the tool declares an outputSchema but the result has no structured content]"
                .to_owned(),
        );
    };
    let errors: Vec<String> = (validator.iter_errors(structured))
        .take(3)
        .map(|error| {
            let at = error.instance_path().to_string();
            let at = if at.is_empty() { "/".to_owned() } else { at };
            format!("`{at}`: {error}")
        })
        .collect();
    (!errors.is_empty()).then(|| {
        format!(
            "[dsh: the structured content does not keep the tool's outputSchema: {}]",
            errors.join("; ")
        )
    })
}

/// `text` as the model reads it: whole when it has at most `cap` bytes;
/// else its first and last `cap / 2` bytes (each cut back to a character
/// boundary), with the line between them every cut result has
/// ([`dsh_tools::head_and_tail`]).
pub(crate) fn capped(text: String, cap: usize) -> String {
    if text.len() <= cap {
        return text;
    }
    let head_cap = cap / 2;
    let tail_cap = cap - head_cap;
    let mut head_end = head_cap;
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - tail_cap;
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let omitted = (tail_start - head_end) as u64;
    dsh_tools::head_and_tail(
        &text[..head_end],
        &text[tail_start..],
        omitted,
        head_cap,
        tail_cap,
    )
}

/// A resource's contents (`resources/read`) as the model reads them, each
/// rendered as an embedded resource is, joined with a newline, uncapped.
pub(crate) fn render_contents(contents: &[ResourceContents]) -> String {
    let parts: Vec<String> = contents.iter().map(|part| resource(part).0).collect();
    parts.join("\n")
}

/// One resource's contents: text with its URI on the line before, binary
/// described; and whether it is text.
fn resource(contents: &ResourceContents) -> (String, bool) {
    match contents {
        ResourceContents::TextResourceContents { uri, text, .. } => {
            (format!("[resource {uri}]\n{text}"), true)
        }
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            ..
        } => (
            format!(
                "[binary resource {uri}: {}, {} bytes, not shown]",
                mime_type.as_deref().unwrap_or("unknown type"),
                decoded_len(blob)
            ),
            false,
        ),
        _ => ("[resource of a kind dsh does not know]".to_owned(), false),
    }
}

/// The blocks of `result` rendered, the text joined, uncapped; and the
/// images a model may see.
fn joined(result: &CallToolResult, reader: Option<&str>) -> (String, Vec<Image>) {
    let mut parts: Vec<String> = Vec::with_capacity(result.content.len());
    let mut images = Vec::new();
    let mut budget = ImageBudget::default();
    let mut has_text = false;
    for block in &result.content {
        if let ContentBlock::Image(image) = block {
            let image = Image {
                mime_type: image.mime_type.clone(),
                data: image.data.clone(),
            };
            match budget.admit(&image) {
                Ok(()) => images.push(image),
                Err(problem) => parts.push(image.refused(&problem)),
            }
            continue;
        }
        let (part, text) = render_block(block, reader);
        has_text |= text;
        parts.push(part);
    }
    if !has_text && let Some(structured) = &result.structured_content {
        parts.push(structured.to_string());
    }
    (parts.join("\n"), images)
}

/// One content block as the model reads it (a tool result's, a prompt
/// message's), and whether it is text: text as it is, an embedded text
/// resource with its URI, the rest described.
pub(crate) fn render_block(block: &ContentBlock, reader: Option<&str>) -> (String, bool) {
    match block {
        ContentBlock::Text(text) => (text.text.clone(), true),
        ContentBlock::Image(image) => (
            Image {
                mime_type: image.mime_type.clone(),
                data: image.data.clone(),
            }
            .described(),
            false,
        ),
        ContentBlock::Audio(audio) => (
            format!(
                "[audio: {}, {} bytes, not shown]",
                audio.mime_type,
                decoded_len(&audio.data)
            ),
            false,
        ),
        ContentBlock::Resource(embedded) => resource(&embedded.resource),
        ContentBlock::ResourceLink(link) => (
            match reader {
                Some(reader) => format!(
                    "[resource link: {} {} (read it with `{reader}`)]",
                    link.name, link.uri
                ),
                None => format!("[resource link: {} {}]", link.name, link.uri),
            },
            false,
        ),
        other => (
            format!(
                "[content of a kind dsh does not know: {}]",
                serde_json::to_value(other)
                    .ok()
                    .and_then(|value| value.get("type").cloned())
                    .unwrap_or_default()
            ),
            false,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_agent_types::MAX_IMAGE_BYTES;

    /// A PNG's signature, in base64.
    const PNG: &str = "iVBORw0KGgo=";

    #[test]
    fn a_long_result_keeps_its_head_and_tail_and_says_what_was_cut() {
        assert_eq!(capped("short".to_owned(), 8), "short");
        // 18 bytes, a cap of 8: head `abcd`, tail `opqr`, 10 omitted.
        assert_eq!(
            capped("abcdefghijklmnopqr".to_owned(), 8),
            "abcd\n[output truncated: 10 bytes omitted; the first 4 and the last 4 bytes are shown]\nopqr"
        );
        // `é` is two bytes: the tail's cut would split one, and is moved
        // past it.
        assert_eq!(
            capped("aéééééééééb".to_owned(), 7),
            "aé\n[output truncated: 14 bytes omitted; the first 3 and the last 4 bytes are shown]\néb"
        );
    }

    #[test]
    fn audio_and_binary_resources_are_described_not_inlined() {
        let blob =
            ResourceContents::blob("AAAAAAAA", "file:///a.bin").with_mime_type("application/zip");
        let result = CallToolResult::success(vec![
            ContentBlock::audio("AAAA", "audio/wav"),
            ContentBlock::resource(blob),
        ]);
        assert_eq!(
            render_result(&result, None).text,
            "[audio: audio/wav, 3 bytes, not shown]\n\
             [binary resource file:///a.bin: application/zip, 6 bytes, not shown]"
        );
    }

    #[test]
    fn blocks_render_as_text_and_images() {
        let result = CallToolResult::success(vec![
            ContentBlock::text("a pixel:"),
            ContentBlock::image(PNG, "image/png"),
            ContentBlock::embedded_text("file:///a.md", "# A"),
        ]);
        assert_eq!(
            render_result(&result, None),
            Rendered {
                text: "a pixel:\n[resource file:///a.md]\n# A".to_owned(),
                images: vec![Image {
                    mime_type: "image/png".to_owned(),
                    data: PNG.to_owned()
                }],
                is_error: false
            }
        );
        let linked = CallToolResult::success(vec![ContentBlock::resource_link(
            rmcp::model::Resource::new("demo://a", "a"),
        )]);
        assert_eq!(
            render_result(&linked, Some("demo__read_resource")).text,
            "[resource link: a demo://a (read it with `demo__read_resource`)]"
        );
        assert_eq!(
            render_result(&linked, None).text,
            "[resource link: a demo://a]"
        );
        let mut structured = CallToolResult::error(Vec::new());
        structured.structured_content = Some(serde_json::json!({"answer": 42}));
        let rendered = render_result(&structured, None);
        assert_eq!(
            (rendered.text.as_str(), rendered.is_error),
            (r#"{"answer":42}"#, true)
        );
    }

    #[test]
    fn an_image_no_model_api_takes_is_described() {
        // Over the size the APIs take: 5 MiB and 1 byte.
        let big = "A".repeat(usize::try_from(MAX_IMAGE_BYTES).expect("fits") / 3 * 4 + 4);
        let result = CallToolResult::success(vec![
            ContentBlock::image("AAAA", "image/tiff"),
            ContentBlock::image(big, "image/png"),
            // A JPEG's first bytes, labelled PNG; then no base64.
            ContentBlock::image("/9j/4AAQ", "image/png"),
            ContentBlock::image("iVBORw0KGgo=!", "image/png"),
        ]);
        let rendered = render_result(&result, None);
        assert_eq!(
            rendered.text,
            "[image: image/tiff, 3 bytes, not shown: the model APIs take only image/png, \
             image/jpeg, image/gif, image/webp]\n\
             [image: image/png, 5242881 bytes, not shown: it is 5242881 bytes, over the \
             5242880 the model APIs take]\n\
             [image: image/png, 6 bytes, not shown: its bytes are not of the type it declares]\n\
             [image: image/png, 9 bytes, not shown: its data is not valid base64]"
        );
        assert!(rendered.images.is_empty());
    }
}
