//! A release as a user gets it: `scripts/release` packs this run's binaries and extension into
//! an archive with its `SHA256SUMS`, a loopback server stands in for the release downloads, and
//! `install.sh` installs it into a fresh home with no Rust toolchain on `PATH`. The installed
//! hub then finds the extension beside it, launches its browser, and an agent snapshots a page
//! through the installed shim. An archive that does not match its checksum installs nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::routing::get;
use serde_json::json;
use tabwire_e2e::artifacts::{artifacts, repo_root};
use tabwire_e2e::launched::Home;
use tabwire_e2e::scenario::reads_the_login_page;
use tabwire_e2e::scratch::Scratch;
use tabwire_e2e::{Fixtures, Listener, McpClient};

/// The release downloads: the files of `dir`, by name, on a free loopback port.
async fn serve(dir: PathBuf) -> (String, tokio::task::JoinHandle<()>) {
    async fn file(
        State(dir): State<PathBuf>,
        UrlPath(name): UrlPath<String>,
    ) -> Result<Vec<u8>, StatusCode> {
        if name.contains('/') || name.starts_with('.') {
            return Err(StatusCode::NOT_FOUND);
        }
        std::fs::read(dir.join(name)).map_err(|_| StatusCode::NOT_FOUND)
    }
    let app = Router::new().route("/{name}", get(file)).with_state(dir);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, task)
}

/// This process's `PATH` without any folder that holds cargo, rustc or rustup: a user's
/// machine without Rust.
fn path_without_rust() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|dir| {
            !["cargo", "rustc", "rustup"]
                .iter()
                .any(|tool| dir.join(tool).exists())
        })
        .collect();
    let kept = std::env::join_paths(kept).unwrap().into_string().unwrap();
    assert!(
        !kept.is_empty(),
        "nothing is left on PATH once Rust's folders are taken out"
    );
    kept
}

/// `install.sh` from `dist` (as a user runs the copy published with the release), into `home`.
fn install(dist: &Path, url: &str, home: &Path, path: &str) -> Output {
    Command::new("sh")
        .arg(dist.join("install.sh"))
        .env_clear()
        .env("HOME", home)
        .env("PATH", path)
        .env("TABWIRE_DOWNLOAD_URL", url)
        .output()
        .expect("run install.sh")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The archive of this machine's platform in `dist`.
fn archive(dist: &Path) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(dist)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with(".tar.gz"))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found[0].clone()
}

// Several threads: install.sh runs as a blocking child while the server answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_installed_release_launches_its_browser_with_no_rust_on_path() {
    let built = artifacts();
    let fixtures = Fixtures::serve().await;
    let scratch = Scratch::new("install");
    let dist = scratch.path().join("dist");
    let bin_dir = built.hub.parent().unwrap();
    let packed = Command::new("bash")
        .arg(repo_root().join("scripts/release"))
        .args(["--out".as_ref(), dist.as_os_str()])
        .args(["--bin-dir".as_ref(), bin_dir.as_os_str()])
        .output()
        .unwrap();
    assert!(packed.status.success(), "{}", text(&packed));

    // The release's files: one archive, the installer, and checksums of both.
    let archive = archive(&dist);
    let name = archive.file_name().unwrap().to_str().unwrap().to_owned();
    let sums = std::fs::read_to_string(dist.join("SHA256SUMS")).unwrap();
    let named: Vec<&str> = sums
        .lines()
        .map(|line| line.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(named, ["install.sh", name.as_str()], "{sums}");
    // One line per file, as `tar -tv` shows it: its mode, owner/group, size, time and name.
    let verbose = Command::new("tar")
        .arg("-tvzf")
        .arg(&archive)
        .output()
        .unwrap();
    let verbose = String::from_utf8(verbose.stdout).unwrap();
    let listing: String = verbose
        .lines()
        .map(|line| format!("{}\n", line.split_whitespace().last().unwrap()))
        .collect();
    let top = name.trim_end_matches(".tar.gz");
    for file in [
        "tabwire-hub",
        "tabwire-mcp",
        "tabwire",
        "tabwire-android",
        "tabwire-ios",
        "extension/manifest.json",
        "extension/pkg/tabwire_extension_bg.wasm",
        "extension/pkg/collector.js",
        "tabwire-extension.zip",
        "LICENSE",
        "README.md",
        "VERSION",
    ] {
        assert!(
            listing.lines().any(|line| line == format!("{top}/{file}")),
            "{file} is not in the archive:\n{listing}"
        );
    }
    // Owned by root in the archive: unpacked as root, no stranger's user ID owns the binaries.
    assert!(
        verbose.lines().all(|line| line.contains(" 0/0 ")),
        "{verbose}"
    );
    for left_out in ["extension/build.sh", "extension/config.json"] {
        assert!(
            !listing.contains(&format!("{top}/{left_out}")),
            "{left_out} is in the archive"
        );
    }

    let (url, server) = serve(dist.clone()).await;
    let path = path_without_rust();
    let home = scratch.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let installed = install(&dist, &url, &home, &path);
    let said = text(&installed);
    assert!(installed.status.success(), "{said}");
    assert!(said.contains("checksum verified"), "{said}");
    let prefix = home.join(".local");
    assert!(
        said.contains(&format!(
            "next: run  {}/bin/tabwire-hub --launch-browser",
            prefix.display()
        )),
        "{said}"
    );
    let hub = prefix.join("bin/tabwire-hub");
    let extension = prefix.join("share/tabwire/extension");
    assert!(extension.join("pkg/tabwire_extension_bg.wasm").is_file());

    // The installed hub names the commit it was built from.
    let version = Command::new(&hub).arg("--version").output().unwrap();
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(repo_root())
        .output()
        .unwrap();
    let commit = String::from_utf8(commit.stdout).unwrap();
    assert_eq!(
        String::from_utf8(version.stdout).unwrap(),
        format!("tabwire-hub 0.1.0 (commit {})\n", commit.trim())
    );

    // Run as the user would: no Rust, no --extension; the hub finds the installed extension.
    let user = Home::new().with_hub(&hub);
    let running = user.launch(&[("PATH", path.as_str())]);
    let ready = running.ready();
    assert!(
        ready
            .text
            .contains(&format!("Load unpacked: {}", extension.display())),
        "{}",
        ready.text
    );
    let client = McpClient::connect_shim(
        &prefix.join("bin/tabwire-mcp"),
        &user.socket,
        Listener::default(),
    )
    .await
    .unwrap();
    let browsers = client.call("list_browsers", json!({})).await;
    assert_eq!(
        browsers.data()["browsers"][0]["name"],
        "tabwire Chromium",
        "{}",
        browsers.text
    );
    reads_the_login_page(&client, &fixtures).await;
    drop(client);
    assert!(running.stop().success());

    // An archive changed on the way does not match SHA256SUMS: nothing is installed.
    let mut bytes = std::fs::read(&archive).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&archive, bytes).unwrap();
    let other_home = scratch.path().join("other-home");
    std::fs::create_dir(&other_home).unwrap();
    let refused = install(&dist, &url, &other_home, &path);
    let said = text(&refused);
    assert!(!refused.status.success(), "{said}");
    assert!(
        said.contains(&format!("{name} does not match SHA256SUMS")),
        "{said}"
    );
    assert!(!other_home.join(".local").exists(), "{said}");
    server.abort();
}

/// The forge's release workflow builds every platform `install.sh` knows with
/// `scripts/release`, then writes one `SHA256SUMS` for the set.
#[test]
fn the_release_workflow_builds_every_platform_the_installer_picks() {
    let workflow =
        std::fs::read_to_string(repo_root().join(".github/workflows/release.yml")).unwrap();
    let installer = std::fs::read_to_string(repo_root().join("install.sh")).unwrap();
    for target in [
        "x86_64-unknown-linux-gnu",
        "aarch64-unknown-linux-gnu",
        "aarch64-apple-darwin",
        "x86_64-apple-darwin",
    ] {
        assert!(
            workflow.contains(&format!("target: {target} }}")),
            "{target} is not built"
        );
        assert!(
            installer.contains(&format!("target={target} ;;")),
            "{target} is not picked"
        );
    }
    assert!(workflow.contains("scripts/release --target ${{ matrix.target }} --out dist"));
    assert!(workflow.contains("scripts/release --sums dist"));
}
