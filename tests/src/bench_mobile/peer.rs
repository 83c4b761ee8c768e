//! The peer: `@mobilenext/mobile-mcp`, installed from npm into the git-ignored `bench-peers/`
//! folder (as the browser benchmark installs `@playwright/mcp`) and started as a stdio MCP
//! server with `MOBILEMCP_LEGACY_ROBOT=1`, which makes it drive
//! `$ANDROID_HOME/platform-tools/adb`: here a link to the fake adb, serving the same scenario
//! as tabwire's backend.
//!
//! Its element list is `mobile_list_elements_on_screen {device}` (one line per element with
//! its class, text, label, ID and rectangle); a tap is `mobile_click_on_screen_at_coordinates
//! {device, x, y}`, which observes nothing, so a tap and a look are two calls.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::process::Command;

use crate::bench::peer::{installed_dir, npm_install};
use crate::bench::session::Session;
use crate::device::Phones;

/// The npm package.
pub const PACKAGE: &str = "@mobilenext/mobile-mcp";
/// The version measured (PLATFORM.md).
pub const VERSION: &str = "1.0.4";

pub fn package_dir() -> PathBuf {
    installed_dir(PACKAGE)
}

/// Installs the pinned version unless it is there; returns how long installing took.
pub async fn ensure_installed() -> Result<Option<Duration>> {
    npm_install(PACKAGE, VERSION).await
}

/// A running mobile-mcp.
pub struct MobileMcp {
    /// The metered MCP session.
    pub session: Session,
    /// How long installing took, or `None` when it was already there.
    pub install_took: Option<Duration>,
    /// Stops the adb server the peer starts, when it goes.
    _adb_server: AdbServerGuard,
}

/// Remembers whether an adb server listened on adb's default port before the peer started.
struct AdbServerGuard {
    before: bool,
}

/// adb's default server port. mobile-mcp's `mobilecli` helper lists devices through an adb
/// server on it (starting the real adb's when none runs, whatever `ANDROID_HOME`, `PATH` or
/// `ANDROID_ADB_SERVER_PORT` say); the benchmark's figures come from the fake adb alone.
const ADB_SERVER: (&str, u16) = ("127.0.0.1", 5037);

fn adb_server_listening() -> bool {
    std::net::TcpStream::connect(ADB_SERVER).is_ok()
}

impl Drop for AdbServerGuard {
    /// Stops the adb server the peer started, if it started one: servers a run starts stop
    /// with it.
    fn drop(&mut self) {
        if !self.before && adb_server_listening() {
            let _ = std::process::Command::new("adb")
                .args(["-P", &ADB_SERVER.1.to_string(), "kill-server"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

impl MobileMcp {
    /// Installs (if needed) and starts mobile-mcp against `phones`: `ANDROID_HOME` is a
    /// directory of the scenario whose `platform-tools/adb` is the fake adb; telemetry is off.
    pub async fn start(phones: &Phones) -> Result<MobileMcp> {
        let install_took = ensure_installed().await?;
        let adb_server = AdbServerGuard {
            before: adb_server_listening(),
        };
        let home = phones.dir().root().join("android-home");
        let tools = home.join("platform-tools");
        std::fs::create_dir_all(&tools).context("create ANDROID_HOME/platform-tools")?;
        let adb = tools.join("adb");
        if !adb.exists() {
            std::os::unix::fs::symlink(phones.adb(), &adb).context("link the fake adb")?;
        }
        let mut command = Command::new("node");
        command
            .arg(package_dir().join("lib/index.js"))
            .env("MOBILEMCP_LEGACY_ROBOT", "1")
            .env("MOBILEMCP_DISABLE_TELEMETRY", "1")
            .env("ANDROID_HOME", &home)
            // Anything it runs as plain `adb` finds the fake first too, never the real
            // program (which would start an adb server of its own and count nothing).
            .env("PATH", search_path(&tools))
            .env(crate::fake_adb::scenario::DIR_VAR, phones.dir().root())
            .current_dir(phones.dir().root());
        let session = Session::start("mobile-mcp", command).await?;
        Ok(MobileMcp {
            session,
            install_took,
            _adb_server: adb_server,
        })
    }

    /// The install note for the report.
    pub fn setup_note(&self) -> String {
        match self.install_took {
            Some(took) => format!(
                "{PACKAGE}@{VERSION} installed into bench-peers/ in {:.1} s",
                took.as_secs_f64()
            ),
            None => format!("{PACKAGE}@{VERSION} already installed in bench-peers/"),
        }
    }
}

/// The rectangles of mobile-mcp's element lines (`at=X,Y size=WxH`), as `[l, t, r, b]`.
pub fn element_rects(text: &str) -> Vec<[i64; 4]> {
    text.lines()
        .filter_map(|line| {
            let at = line
                .split_whitespace()
                .find_map(|w| w.strip_prefix("at="))?;
            let size = line
                .split_whitespace()
                .find_map(|w| w.strip_prefix("size="))?;
            let (x, y) = at.split_once(',')?;
            let (w, h) = size.split_once('x')?;
            let (x, y, w, h): (i64, i64, i64, i64) = (
                x.parse().ok()?,
                y.parse().ok()?,
                w.parse().ok()?,
                h.parse().ok()?,
            );
            Some([x, y, x + w, y + h])
        })
        .collect()
}

/// `dir` ahead of this process's `PATH`.
fn search_path(dir: &std::path::Path) -> std::ffi::OsString {
    let mut dirs = vec![dir.to_path_buf()];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).expect("directories without path separators")
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_element_rectangles() {
        let text = "One element per line: …\nEditText text=\"Email\" id=\"x\" at=60,600 size=960x140\nButton at=1,2 size=3x4 focused";
        assert_eq!(
            super::element_rects(text),
            [[60, 600, 1020, 740], [1, 2, 4, 6]]
        );
    }
}
