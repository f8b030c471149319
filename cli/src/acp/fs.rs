//! The editor's files, for the file tools of an ACP session.
//!
//! - With the client's `fs.readTextFile` capability, `read` (and the text
//!   `write` and `edit` start from) goes through `fs/read_text_file`, so
//!   the model sees the editor's buffer, unsaved changes included; with
//!   `fs.writeTextFile`, changes go through `fs/write_text_file` and land
//!   in the buffer (and its undo). Without a capability, that half is the
//!   disk's. The observation policy applies to what the client returns.
//!
//! They reach the tools through each call's context
//! ([`SessionFiles::lend`]); the tools know nothing of ACP. (The
//! session's `additionalDirectories` join the workspace, and a change
//! anywhere else is asked of the editor, by the host's session.)

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    self, FileSystemCapabilities, ReadTextFileRequest, WriteTextFileRequest,
};
use agent_client_protocol::{Client, Error, ErrorCode};
use dsh_tool_fs::{DiskFiles, FileAccess, FileError};
use dsh_tools::{ToolCallContext, async_trait};

/// The session's `additionalDirectories`: absolute, as ACP requires.
pub(super) fn additional_directories(directories: Vec<PathBuf>) -> Result<Vec<PathBuf>, Error> {
    for (at, directory) in directories.iter().enumerate() {
        if !directory.is_absolute() {
            return Err(Error::new(
                ErrorCode::INVALID_PARAMS,
                format!(
                    "`additionalDirectories[{at}]` must be an absolute path, got `{}`",
                    directory.display()
                ),
            )
            .data(serde_json::json!({ "field": format!("additionalDirectories[{at}]") })));
        }
    }
    Ok(directories)
}

/// The editor's buffers, for the file tools of one ACP session, when the
/// client offers any half of them.
#[derive(Debug)]
pub(super) struct SessionFiles(Option<Arc<dyn FileAccess>>);

impl SessionFiles {
    pub(super) fn new(
        capabilities: &FileSystemCapabilities,
        acp_session: schema::SessionId,
        cx: ConnectionTo<Client>,
    ) -> Self {
        Self(
            (capabilities.read_text_file || capabilities.write_text_file).then(|| {
                Arc::new(EditorFiles {
                    acp_session,
                    reads: capabilities.read_text_file,
                    writes: capabilities.write_text_file,
                    cx,
                }) as Arc<dyn FileAccess>
            }),
        )
    }

    /// Lends the editor's files to a call's context (the session reports
    /// the changes, asks about the outside, and shows the command's
    /// output).
    pub(super) fn lend(&self, cx: &mut ToolCallContext) {
        if let Some(editor) = &self.0 {
            cx.extensions.insert(Arc::clone(editor));
        }
    }
}

/// The editor's buffers, for the halves the client offers; the disk for
/// the others.
#[derive(Debug)]
struct EditorFiles {
    acp_session: schema::SessionId,
    reads: bool,
    writes: bool,
    cx: ConnectionTo<Client>,
}

#[async_trait]
impl FileAccess for EditorFiles {
    async fn read_text(&self, path: &Path) -> Result<String, FileError> {
        if !self.reads {
            return DiskFiles::new().read_text(path).await;
        }
        let request = ReadTextFileRequest::new(self.acp_session.clone(), path);
        match self.cx.send_request(request).block_task().await {
            Ok(response) => {
                let bytes = response.content.len() as u64;
                if bytes > dsh_tool_fs::MAX_FILE_BYTES {
                    return Err(FileError::TooLarge {
                        path: path.to_owned(),
                        bytes,
                        limit: dsh_tool_fs::MAX_FILE_BYTES,
                    });
                }
                FileError::check_text(path, response.content.into_bytes())
            }
            // Clients differ in how they say a file does not exist; one
            // with no buffer and nothing on disk does not.
            Err(error)
                if error.code == ErrorCode::RESOURCE_NOT_FOUND
                    || std::fs::symlink_metadata(path).is_err() =>
            {
                Err(FileError::NotFound {
                    path: path.to_owned(),
                })
            }
            Err(error) => Err(FileError::Access {
                action: "read",
                path: path.to_owned(),
                message: error.message,
            }),
        }
    }

    async fn write_text(&self, path: &Path, text: &str) -> Result<(), FileError> {
        if !self.writes {
            return DiskFiles::new().write_text(path, text).await;
        }
        let request = WriteTextFileRequest::new(self.acp_session.clone(), path, text);
        self.cx
            .send_request(request)
            .block_task()
            .await
            .map(drop)
            .map_err(|error| FileError::Access {
                action: "write",
                path: path.to_owned(),
                message: error.message,
            })
    }
}
