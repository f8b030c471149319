//! The OAuth test servers the tests of `dsh mcp login` run: an
//! authorization server and an MCP server it protects, both on 127.0.0.1,
//! from `tests/oauth/server.py` on the official Python SDK (`mcp` on
//! PyPI).
//!
//! [`install_python_sdk`] installs the SDK once into a directory of the
//! caller's (under the cargo target directory), under a file lock, so
//! tests running at once install it once; a machine without `python3` or
//! `pip` gets an error saying what is missing.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The version of the Python SDK the script is written against.
pub const PYTHON_SDK: &str = "mcp==2.3.0";

/// The script.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("oauth/server.py")
}

/// Installs [`PYTHON_SDK`] into `dir/site` unless it is there; the
/// directory to put on `PYTHONPATH`.
pub fn install_python_sdk(dir: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|error| format!("{}: {error}", dir.display()))?;
    let lock = std::fs::File::create(dir.join("install.lock"))
        .map_err(|error| format!("the install lock in {}: {error}", dir.display()))?;
    // Held until the install is done: parallel tests wait here.
    let _held = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, error)| format!("the install lock in {}: {error}", dir.display()))?;
    let site = dir.join("site");
    let done = site.join(format!(".installed-{PYTHON_SDK}"));
    if done.exists() {
        return Ok(site);
    }
    let output = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .arg("--target")
        .arg(&site)
        .arg(PYTHON_SDK)
        .output()
        .map_err(|error| {
            format!("the OAuth tests need `python3` with `pip` to install `{PYTHON_SDK}`: {error}")
        })?;
    if !output.status.success() {
        return Err(format!(
            "the OAuth tests need `{PYTHON_SDK}` from PyPI; `python3 -m pip install` failed \
             ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    std::fs::write(&done, b"").map_err(|error| format!("{}: {error}", done.display()))?;
    Ok(site)
}

/// The two servers, running; killed when dropped.
#[derive(Debug)]
pub struct OAuthServers {
    /// The authorization server's issuer URL.
    pub issuer: String,
    /// The MCP server's URL.
    pub url: String,
    child: Child,
}

impl OAuthServers {
    /// Starts the servers with the SDK installed under `dir` (see
    /// [`install_python_sdk`]); access tokens live `access_seconds`.
    pub fn start(dir: &Path, access_seconds: u64) -> Result<Self, String> {
        let site = install_python_sdk(dir)?;
        let mut child = Command::new("python3")
            .arg(script())
            .args(["--access-seconds", &access_seconds.to_string()])
            .env("PYTHONPATH", &site)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|error| format!("`python3 {}`: {error}", script().display()))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::BufReader::new(stdout).read_line(&mut line);
            let _ = sender.send(line);
        });
        let line = match receiver.recv_timeout(Duration::from_secs(60)) {
            Ok(line) if !line.is_empty() => line,
            _ => {
                let _ = child.kill();
                return Err("the OAuth test servers did not say where they listen".to_owned());
            }
        };
        let said: serde_json::Value =
            serde_json::from_str(&line).map_err(|error| format!("{line}: {error}"))?;
        let field = |name: &str| said[name].as_str().map(str::to_owned).ok_or(line.clone());
        Ok(Self {
            issuer: field("issuer")?,
            url: field("url")?,
            child,
        })
    }
}

impl Drop for OAuthServers {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a browser does with an authorization URL: follows it, through
/// the authorization server's redirect, to dsh's callback; the page the
/// callback answers.
pub async fn browse(url: &str) -> Result<String, String> {
    dsh_http::install_crypto_provider();
    // A browser follows redirects to any origin.
    let browser = reqwest::Client::builder()
        .build()
        .map_err(|error| error.to_string())?;
    let answer = (browser.get(url).send().await).map_err(|error| dsh_http::chain(&error))?;
    if !answer.status().is_success() {
        return Err(format!("{url}: {}", answer.status()));
    }
    answer.text().await.map_err(|error| error.to_string())
}

/// [`browse`], for a test without an async runtime.
pub fn browse_blocking(url: &str) -> Result<String, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?
        .block_on(browse(url))
}
