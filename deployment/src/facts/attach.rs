//! Context a person attaches to a prompt: an editor's embedded resource
//! or a link to a file of the session, `dsh run --attach FILE`. One rule
//! for both front ends: text goes into the user's message inline, marked
//! with where it came from (`<context ref="…">`, as claude-agent-acp
//! does), within a budget, said when cut; a file is read only inside the
//! session's directories.

use std::borrow::Cow;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use dsh_agent_loop::{Image, ImageBudget, MAX_IMAGE_BYTES};

/// The most bytes one attached file or resource puts in a prompt.
pub const MAX_ATTACHED_BYTES: usize = 100 * 1024;

/// `text`, from `uri`, as the prompt carries it: inline, cut to
/// [`MAX_ATTACHED_BYTES`] with a line saying how much was left out.
pub fn inline(uri: &str, text: &str) -> String {
    let kept = if text.len() > MAX_ATTACHED_BYTES {
        let mut end = MAX_ATTACHED_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!(
            "{}\n[cut: {} more bytes of this attachment were left out]",
            &text[..end],
            text.len() - end
        )
    } else {
        text.to_owned()
    };
    let uri = uri.replace('"', "%22");
    format!("<context ref=\"{uri}\">\n{kept}\n</context>")
}

/// Why a file cannot be attached.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AttachError {
    /// The file is outside the session's directories.
    #[error("`{path}` is outside the session's directories ({dirs}); attach a file of the project")]
    Outside {
        /// The file.
        path: PathBuf,
        /// The directories, in words.
        dirs: String,
    },
    /// It cannot be read as text.
    #[error("`{path}` cannot be attached: {reason}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// The file at `path`, read as text for a prompt, when it is inside one
/// of `dirs` (links resolved): [`inline`], its URI the file's.
pub fn file(path: &Path, dirs: &[PathBuf]) -> Result<String, AttachError> {
    let unreadable = |reason: String| AttachError::Unreadable {
        path: path.to_owned(),
        reason,
    };
    let real = inside(path, dirs)?;
    // A byte past the budget says there is more; the rest is not read.
    let limit = u64::try_from(MAX_ATTACHED_BYTES * 2).unwrap_or(u64::MAX);
    let (bytes, _) = read_bounded(path, &real, limit)?;
    if bytes.iter().take(8192).any(|byte| *byte == 0) {
        return Err(unreadable("it is a binary file, not text".to_owned()));
    }
    let text = String::from_utf8_lossy(&bytes);
    Ok(inline(&format!("file://{}", real.display()), &text))
}

/// The image types both model APIs take, by a file's extension.
const IMAGE_EXTENSIONS: [(&str, &str); 5] = [
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("webp", "image/webp"),
];

/// A file attached to a prompt: text to inline, or an image to send as
/// an image part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attached {
    /// Text, inline ([`file()`]).
    Text(String),
    /// An image (`.png`, `.jpg`, `.jpeg`, `.gif`, `.webp`).
    Image(dsh_agent_loop::Image),
}

/// The file at `path`, inside one of `dirs`, as a prompt carries it: an
/// image by its extension, else text.
pub fn attach(path: &Path, dirs: &[PathBuf]) -> Result<Attached, AttachError> {
    let extension = path
        .extension()
        .and_then(|extension| extension.to_str())
        .map(str::to_ascii_lowercase);
    let Some(mime_type) = IMAGE_EXTENSIONS
        .iter()
        .find(|(known, _)| Some(*known) == extension.as_deref())
        .map(|(_, mime_type)| *mime_type)
    else {
        return file(path, dirs).map(Attached::Text);
    };
    let unreadable = |reason: String| AttachError::Unreadable {
        path: path.to_owned(),
        reason,
    };
    let real = inside(path, dirs)?;
    let (bytes, more) = read_bounded(path, &real, MAX_IMAGE_BYTES)?;
    if more {
        return Err(unreadable(format!(
            "it is an image of more than {MAX_IMAGE_BYTES} bytes, the most the model APIs take"
        )));
    }
    use base64::Engine as _;
    let image = dsh_agent_loop::Image {
        mime_type: mime_type.to_owned(),
        data: base64::engine::general_purpose::STANDARD.encode(bytes),
    };
    // A `.png` that is a JPEG would make the model API refuse the turn.
    image
        .check()
        .map_err(|problem| unreadable(problem.to_string()))?;
    Ok(Attached::Image(image))
}

/// At most `limit` bytes of the regular file `real` (`path` as the
/// person gave it), and whether there were more. Anything but a regular
/// file is refused before a byte is read: a FIFO would block the open
/// until a writer came, a character device (`/dev/zero` named `.png`)
/// would never end.
fn read_bounded(path: &Path, real: &Path, limit: u64) -> Result<(Vec<u8>, bool), AttachError> {
    let unreadable = |reason: String| AttachError::Unreadable {
        path: path.to_owned(),
        reason,
    };
    let file = dsh_tools::open_regular(real).map_err(|error| match error {
        dsh_tools::NotRegular::Kind(kind) => {
            unreadable(format!("it is {kind}, not a regular file; attach a file"))
        }
        dsh_tools::NotRegular::Io(error) => unreadable(error.to_string()),
    })?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|error| unreadable(error.to_string()))?;
    let more = u64::try_from(bytes.len()).unwrap_or(u64::MAX) > limit;
    if more {
        bytes.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    Ok((bytes, more))
}

/// The real path of `path` when it is inside one of `dirs` (links
/// resolved).
fn inside(path: &Path, dirs: &[PathBuf]) -> Result<PathBuf, AttachError> {
    let real = std::fs::canonicalize(path).map_err(|error| AttachError::Unreadable {
        path: path.to_owned(),
        reason: error.to_string(),
    })?;
    let inside = dirs
        .iter()
        .filter_map(|dir| std::fs::canonicalize(dir).ok())
        .any(|dir| real.starts_with(dir));
    if inside {
        return Ok(real);
    }
    let dirs: Vec<String> = dirs.iter().map(|dir| dir.display().to_string()).collect();
    Err(AttachError::Outside {
        path: path.to_owned(),
        dirs: dirs.join(", "),
    })
}

/// The path a `file://` URI names, if it is one.
pub fn file_uri_path(uri: &str) -> Option<PathBuf> {
    url::Url::parse(uri).ok()?.to_file_path().ok()
}

/// One part of what a person sent as a prompt, as a front end received
/// it (an editor's content blocks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptPart<'a> {
    /// Text the person typed.
    Text(Cow<'a, str>),
    /// An image the person attached.
    Image(Image),
    /// A link to a resource: a file of the session is read and inlined,
    /// anything else named as a link.
    Link {
        /// The resource's URI.
        uri: &'a str,
        /// Its name.
        name: &'a str,
    },
    /// A resource's text, embedded by the front end (an editor's buffer).
    Embedded {
        /// The resource's URI.
        uri: &'a str,
        /// Its text.
        text: &'a str,
    },
    /// A binary resource, which is described, not sent.
    Blob {
        /// The resource's URI.
        uri: &'a str,
        /// Its media type, if said.
        mime_type: Option<&'a str>,
        /// The length of its base64.
        base64_len: usize,
    },
}

/// The user's message `parts` make, in a session whose files are in
/// `dirs`: the texts, each embedded resource inline with its URI
/// ([`inline`]), each link to a file of the session read and inlined
/// ([`file()`], within its budget), other links as their name and URI,
/// each binary resource described; and the images, each one a model API
/// takes ([`ImageBudget`]). `Err` names the part (by its index) and why.
pub fn compose<'a>(
    parts: impl IntoIterator<Item = PromptPart<'a>>,
    dirs: &[PathBuf],
) -> Result<(String, Vec<Image>), (usize, String)> {
    let (mut texts, mut images, mut budget) = (Vec::new(), Vec::new(), ImageBudget::default());
    for (at, part) in parts.into_iter().enumerate() {
        match part {
            PromptPart::Text(text) => texts.push(text.into_owned()),
            PromptPart::Image(image) => match budget.admit(&image) {
                Ok(()) => images.push(image),
                Err(problem) => {
                    let kind = &image.mime_type;
                    return Err((
                        at,
                        format!("an image of type `{kind}` dsh cannot send: {problem}"),
                    ));
                }
            },
            PromptPart::Link { uri, name } => {
                let inside = file_uri_path(uri).and_then(|path| file(&path, dirs).ok());
                texts.push(inside.unwrap_or_else(|| format!("[{name}]({uri})")));
            }
            PromptPart::Embedded { uri, text } => texts.push(inline(uri, text)),
            PromptPart::Blob {
                uri,
                mime_type,
                base64_len,
            } => texts.push(format!(
                "[resource {uri}: {}, {base64_len} bytes of base64, not shown]",
                mime_type.unwrap_or("binary"),
            )),
        }
    }
    Ok((texts.join("\n\n"), images))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_of_the_project_is_inlined_and_one_outside_refused() {
        let project = tempfile::tempdir().expect("project");
        let outside = tempfile::tempdir().expect("outside");
        std::fs::write(project.path().join("notes.md"), "Use tabs.\n").expect("write");
        std::fs::write(outside.path().join("secret.txt"), "no").expect("write");
        let dirs = [project.path().to_owned()];
        let text = file(&project.path().join("notes.md"), &dirs).expect("inside");
        assert!(text.starts_with("<context ref=\"file://"), "{text}");
        assert!(
            text.ends_with("notes.md\">\nUse tabs.\n\n</context>"),
            "{text}"
        );
        let error = file(&outside.path().join("secret.txt"), &dirs).expect_err("outside");
        assert!(
            error
                .to_string()
                .contains("is outside the session's directories")
        );
        // A link out of the project is judged by where it points.
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), project.path().join("l"))
            .expect("symlink");
        assert!(file(&project.path().join("l"), &dirs).is_err());
    }

    #[test]
    fn an_image_is_attached_as_an_image_by_its_extension() {
        let project = tempfile::tempdir().expect("project");
        std::fs::write(project.path().join("shot.PNG"), *b"\x89PNG\r\n\x1a\n").expect("write");
        std::fs::write(project.path().join("notes.txt"), "text").expect("write");
        let dirs = [project.path().to_owned()];
        match attach(&project.path().join("shot.PNG"), &dirs).expect("an image") {
            Attached::Image(image) => {
                assert_eq!(
                    (image.mime_type.as_str(), image.data.as_str()),
                    ("image/png", "iVBORw0KGgo=")
                );
            }
            other => panic!("an image: {other:?}"),
        }
        assert!(matches!(
            attach(&project.path().join("notes.txt"), &dirs),
            Ok(Attached::Text(_))
        ));
        // A JPEG named `.png`: the model API would refuse it.
        std::fs::write(project.path().join("photo.png"), [0xFF, 0xD8, 0xFF, 0xE0]).expect("write");
        let refused = attach(&project.path().join("photo.png"), &dirs).expect_err("refused");
        assert!(
            refused
                .to_string()
                .contains("its bytes are not of the type it declares"),
            "{refused}"
        );
    }

    /// A special file made by the test, named as an image and as text.
    fn special(dir: &Path, name: &str, kind: &str) -> PathBuf {
        let path = dir.join(name);
        let mut command = std::process::Command::new("mknod");
        command.arg(&path).arg(kind);
        if kind == "c" {
            // 1 5 is `/dev/zero`: it never ends.
            command.args(["1", "5"]);
        }
        let status = command.status().expect("mknod runs");
        assert!(status.success(), "mknod {name} {kind} (tests run as root)");
        path
    }

    #[test]
    fn a_fifo_or_a_device_named_as_an_image_or_text_is_refused_unread() {
        let project = tempfile::tempdir().expect("project");
        let dirs = [project.path().to_owned()];
        for (name, kind, said) in [
            ("pic.png", "p", "a FIFO (named pipe)"),
            ("notes.txt", "p", "a FIFO (named pipe)"),
            ("zero.png", "c", "a character device"),
            ("zero.md", "c", "a character device"),
        ] {
            let path = special(project.path(), name, kind);
            // Old code blocked here on the FIFO and read `/dev/zero`
            // until memory ran out.
            let refused = attach(&path, &dirs).expect_err("a special file");
            let refused = refused.to_string();
            assert!(refused.contains(said), "{name}: {refused}");
            assert!(refused.contains("not a regular file"), "{name}: {refused}");
        }
    }

    #[test]
    fn an_image_over_the_cap_is_refused_without_reading_past_it() {
        let project = tempfile::tempdir().expect("project");
        let big = project.path().join("big.png");
        let file = std::fs::File::create(&big).expect("create");
        file.set_len(MAX_IMAGE_BYTES + 1).expect("grow");
        let dirs = [project.path().to_owned()];
        let refused = attach(&big, &dirs).expect_err("too large").to_string();
        assert!(
            refused.contains("the most the model APIs take"),
            "{refused}"
        );
    }

    #[test]
    fn a_long_attachment_is_cut_and_said() {
        let text = inline("file:///big.txt", &"é".repeat(MAX_ATTACHED_BYTES));
        assert!(text.contains("[cut: "), "{}", &text[text.len() - 100..]);
        assert!(text.len() < MAX_ATTACHED_BYTES + 200);
    }

    #[test]
    fn file_uris_are_decoded() {
        assert_eq!(
            file_uri_path("file:///home/a%20b/c.rs"),
            Some(PathBuf::from("/home/a b/c.rs"))
        );
        assert_eq!(file_uri_path("https://example.com"), None);
    }
}
