//! Building what the tests run, once per test process: the hub, shim, CLI and device backend
//! binaries and the fake adb (with the same profile as the tests) and the extension
//! (`extension/build.sh`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Paths of the built artifacts.
pub struct Artifacts {
    /// `tabwire-hub`.
    pub hub: PathBuf,
    /// `tabwire-mcp`.
    pub shim: PathBuf,
    /// `tabwire`, the CLI (beside the hub, so it can start one).
    pub cli: PathBuf,
    /// `tabwire-android`, the Android device backend.
    pub android: PathBuf,
    /// `tabwire-ios`, the iOS device backend.
    pub ios: PathBuf,
    /// `fake-adb`, the scripted stand-in for adb (`src/fake_adb/`).
    pub fake_adb: PathBuf,
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
        without_crate_env(&mut cargo);
        cargo.current_dir(&root).args([
            "build",
            "--quiet",
            "--bins",
            "-p",
            "tabwire-hub",
            "-p",
            "tabwire-mcp",
            "-p",
            "tabwire-cli",
            "-p",
            "tabwire-android",
            "-p",
            "tabwire-ios",
        ]);
        if release {
            cargo.arg("--release");
        }
        run(
            cargo,
            "cargo build of tabwire-hub, tabwire-mcp, tabwire, tabwire-android and tabwire-ios",
        );
        // Only this one of the crate's binaries: the benchmarks need not be linked for tests.
        let mut fake = Command::new(env!("CARGO"));
        without_crate_env(&mut fake);
        fake.current_dir(&root).args([
            "build",
            "--quiet",
            "-p",
            "tabwire-e2e",
            "--bin",
            "fake-adb",
        ]);
        if release {
            fake.arg("--release");
        }
        run(fake, "cargo build of fake-adb");
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
            cli: profile_dir.join("tabwire"),
            android: profile_dir.join("tabwire-android"),
            ios: profile_dir.join("tabwire-ios"),
            fake_adb: profile_dir.join("fake-adb"),
            extension: root.join("extension"),
        };
        for path in [
            &artifacts.hub,
            &artifacts.shim,
            &artifacts.cli,
            &artifacts.android,
            &artifacts.fake_adb,
        ] {
            assert!(path.exists(), "{} was not built", path.display());
        }
        artifacts
    })
}

/// Removes the variables cargo sets for the crate under test (`CARGO_MANIFEST_DIR`,
/// `CARGO_PKG_*`, …) from a nested cargo's environment. Build scripts that watch them (ring's
/// watches `CARGO_MANIFEST_DIR`) would otherwise see them change between this build and the
/// outer `cargo test`, and each would rebuild half the crate graph for the other.
fn without_crate_env(command: &mut Command) {
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let set_by_cargo_for_the_crate = name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_BIN_")
            || name.starts_with("CARGO_MANIFEST_")
            || matches!(
                &*name,
                "CARGO_CRATE_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_TMPDIR"
                    | "CARGO_RUSTC_CURRENT_DIR"
            );
        if set_by_cargo_for_the_crate {
            command.env_remove(&*name);
        }
    }
}

fn run(mut command: Command, what: &str) {
    let status = command
        .status()
        .unwrap_or_else(|error| panic!("cannot run {what}: {error}"));
    assert!(status.success(), "{what} failed ({status})");
}
