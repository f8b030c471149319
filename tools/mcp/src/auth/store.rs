//! Where a server's login is kept: one file a server, `<dir>/<name>.json`,
//! mode 0600 in a directory of mode 0700, written whole (a temporary file
//! renamed over it), so a reader never sees half a token.
//!
//! The file holds the server's `url` and rmcp's [`StoredCredentials`]:
//! the client dsh registered as, the tokens, when they were received, and
//! the issuer of the authorization server that gave them. A login is the
//! server's and that issuer's: one made for another `url` is not used, and
//! rmcp drops one whose issuer is no longer the server's authorization
//! server (`AuthorizationManager::initialize_from_store`).

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use rmcp::transport::auth::{
    AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};

use super::LoginError;

/// Where the logins to MCP servers are kept: a directory, one file a
/// server. dsh's is `logins/mcp` in its state directory
/// (`$XDG_STATE_HOME/dsh`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Logins {
    dir: PathBuf,
}

/// What one file holds.
#[derive(Serialize, Deserialize)]
struct Saved {
    /// The server's `url` when it logged in.
    url: String,
    credentials: StoredCredentials,
}

impl Logins {
    /// The logins kept in `dir` (created when the first is saved).
    pub fn in_dir(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of server `server`'s login.
    pub fn path(&self, server: &str) -> PathBuf {
        self.dir.join(format!("{server}.json"))
    }

    /// Server `server`'s login to `url`, if one is kept (and has tokens);
    /// `None` also when the one kept was made for another URL.
    pub(crate) fn saved(
        &self,
        server: &str,
        url: &str,
    ) -> Result<Option<StoredCredentials>, LoginError> {
        let path = self.path(server);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(LoginError::store(server, &path, error)),
        };
        let saved: Saved =
            serde_json::from_str(&text).map_err(|error| LoginError::store(server, &path, error))?;
        Ok(
            (saved.url == url && saved.credentials.token_response.is_some())
                .then_some(saved.credentials),
        )
    }

    /// Forgets server `server`'s login; whether there was one.
    pub fn forget(&self, server: &str) -> Result<bool, LoginError> {
        let path = self.path(server);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(LoginError::store(server, &path, error)),
        }
    }

    /// Keeps `credentials` as server `server`'s login to `url`.
    fn save(
        &self,
        server: &str,
        url: &str,
        credentials: StoredCredentials,
    ) -> Result<(), LoginError> {
        let path = self.path(server);
        let failed = |error: &dyn std::fmt::Display| LoginError::store(server, &path, error);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|error| failed(&error))?;
        let saved = Saved {
            url: url.to_owned(),
            credentials,
        };
        let json = serde_json::to_vec_pretty(&saved).map_err(|error| failed(&error))?;
        // A temporary file is created 0600; it is renamed over the old one
        // once written whole.
        let mut file =
            tempfile::NamedTempFile::new_in(&self.dir).map_err(|error| failed(&error))?;
        file.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|error| failed(&error))?;
        file.write_all(&json).map_err(|error| failed(&error))?;
        file.persist(&path).map_err(|error| failed(&error.error))?;
        Ok(())
    }

    /// rmcp's view of server `server`'s login to `url`.
    pub(crate) fn of(&self, server: &str, url: &str) -> ServerLogin {
        ServerLogin {
            logins: self.clone(),
            server: server.to_owned(),
            url: url.to_owned(),
        }
    }
}

/// One server's login, as rmcp's OAuth reads and writes it: loaded when
/// the server starts, saved at a login and at each refresh.
pub(crate) struct ServerLogin {
    logins: Logins,
    server: String,
    url: String,
}

fn store_error(error: LoginError) -> AuthError {
    AuthError::CredentialStoreError(error.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for ServerLogin {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        (self.logins)
            .saved(&self.server, &self.url)
            .map_err(store_error)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        (self.logins)
            .save(&self.server, &self.url, credentials)
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.logins.forget(&self.server).map_err(store_error)?;
        Ok(())
    }

    /// One refresh at a time across processes (`dsh run` and `dsh acp`
    /// share a login): an exclusive `flock` on `<name>.lock` beside the
    /// file, held from the load through the save, so a second refresh
    /// reads the tokens the first saved rather than spending a refresh
    /// token an authorization server that rotates them has just retired.
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let dir = self.logins.dir.clone();
        let path = dir.join(format!("{}.lock", self.server));
        let failed = {
            let (server, path) = (self.server.clone(), path.clone());
            move |error: &dyn std::fmt::Display| {
                store_error(LoginError::store(&server, &path, error))
            }
        };
        let locked = tokio::task::spawn_blocking(move || {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir)?;
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .open(&path)?;
            nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
                .map_err(|(_, errno)| std::io::Error::from(errno))
        })
        .await
        .map_err(|error| failed(&error))?
        .map_err(|error| failed(&error))?;
        Ok(Some(CredentialRefreshGuard::new(locked)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_login_is_kept_private_for_its_url_and_forgotten() {
        let dir = tempfile::tempdir().expect("a directory");
        let logins = Logins::in_dir(dir.path().join("logins"));
        let store = logins.of("docs", "http://127.0.0.1:1/mcp");
        let token: rmcp::transport::auth::OAuthTokenResponse = serde_json::from_value(
            serde_json::json!({"access_token": "a", "token_type": "bearer", "expires_in": 60}),
        )
        .expect("a token");
        let credentials = StoredCredentials::new("client".into(), Some(token), vec![], Some(1));
        store.save(credentials).await.expect("saved");
        let mode =
            |path: &Path| std::fs::metadata(path).expect("there").permissions().mode() & 0o777;
        assert_eq!(mode(&logins.path("docs")), 0o600);
        assert_eq!(mode(logins.dir()), 0o700);
        let loaded = store.load().await.expect("read").expect("kept");
        assert_eq!(loaded.client_id, "client");
        // Another URL under the same name is another server.
        let moved = logins
            .saved("docs", "http://127.0.0.1:2/mcp")
            .expect("read");
        assert!(moved.is_none());
        assert!(logins.forget("docs").expect("forgotten"));
        assert!(!logins.forget("docs").expect("nothing to forget"));
        assert!(store.load().await.expect("read").is_none());
    }

    /// A refresh's guard is exclusive: a second one (another process's,
    /// here another store of the same login) waits until the first is
    /// dropped.
    #[tokio::test(flavor = "multi_thread")]
    async fn one_refresh_at_a_time_holds_the_logins_lock() {
        let dir = tempfile::tempdir().expect("a directory");
        let logins = Logins::in_dir(dir.path().join("logins"));
        let first = logins.of("docs", "http://127.0.0.1:1/mcp");
        let second = logins.of("docs", "http://127.0.0.1:1/mcp");
        let held = first.acquire_refresh_guard().await.expect("locked");
        let waiting = tokio::spawn(async move { second.acquire_refresh_guard().await });
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert!(!waiting.is_finished(), "the second refresh did not wait");
        drop(held);
        let next = tokio::time::timeout(std::time::Duration::from_secs(10), waiting)
            .await
            .expect("the second refresh goes on once the first is done");
        assert!(next.expect("ran").expect("locked").is_some());
        let mode = std::fs::metadata(logins.dir().join("docs.lock")).expect("there");
        assert_eq!(mode.permissions().mode() & 0o777, 0o600);
    }
}
