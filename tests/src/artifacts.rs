//! Building what the tests run, once per test process: the hub and shim binaries (with the same
//! profile as the tests) and the extension (`extension/build.sh`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Paths of the built artifacts.
pub struct Artifacts {
    /// `tabwire-hub`.
    pub hub: PathBuf,
    /// `tabwire-mcp`.
    pub shim: PathBuf,
    /// The loadable extension folder (`extension/`, with `pkg/` built).
    pub extension: PathBuf,
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the repository")
        .to_path_buf()
}

/// Builds everything on first use and returns the paths.
pub fn artifacts() -> &'static Artifacts {
    static ARTIFACTS: OnceLock<Artifacts> = OnceLock::new();
    ARTIFACTS.get_or_init(|| {
        let root = repo_root();
        let release = !cfg!(debug_assertions);
        let mut cargo = Command::new(env!("CARGO"));
        cargo.current_dir(&root).args([
            "build",
            "--quiet",
            "--bins",
            "-p",
            "tabwire-hub",
            "-p",
            "tabwire-mcp",
        ]);
        if release {
            cargo.arg("--release");
        }
        run(cargo, "cargo build of tabwire-hub and tabwire-mcp");
        let mut build = Command::new("bash");
        // Its one-line summary is not wanted in test or benchmark output; errors go to stderr.
        build
            .arg(root.join("extension/build.sh"))
            .current_dir(&root)
            .stdout(std::process::Stdio::null());
        run(build, "extension/build.sh");

        let target_dir = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .map(|dir| {
                if dir.is_relative() {
                    root.join(dir)
                } else {
                    dir
                }
            })
            .unwrap_or_else(|| root.join("target"));
        let profile_dir = target_dir.join(if release { "release" } else { "debug" });
        let artifacts = Artifacts {
            hub: profile_dir.join("tabwire-hub"),
            shim: profile_dir.join("tabwire-mcp"),
            extension: root.join("extension"),
        };
        for path in [&artifacts.hub, &artifacts.shim] {
            assert!(path.exists(), "{} was not built", path.display());
        }
        artifacts
    })
}

fn run(mut command: Command, what: &str) {
    let status = command
        .status()
        .unwrap_or_else(|error| panic!("cannot run {what}: {error}"));
    assert!(status.success(), "{what} failed ({status})");
}
