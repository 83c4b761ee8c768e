//! Names the commit the hub is built from, for `tabwire-hub --version`, and the checkout's
//! extension folder (below). The commit is `TABWIRE_COMMIT` when the build is given it (a
//! release built from an unpacked source archive), else git's `HEAD` in the checkout, else
//! `unknown`. Reruns only when one of those changes, so a second build of an unchanged
//! checkout builds nothing.
use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=TABWIRE_COMMIT");
    let given = std::env::var("TABWIRE_COMMIT")
        .ok()
        .filter(|commit| !commit.trim().is_empty());
    let commit = given
        .or_else(from_git)
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=TABWIRE_COMMIT={commit}");
    // The checkout's extension folder, the default of a build from source; none in a release
    // (`TABWIRE_RELEASE=1`, set by scripts/release), whose binaries run on other machines where
    // that path means nothing, or something another user made (src/launch/beside.rs).
    println!("cargo:rerun-if-env-changed=TABWIRE_RELEASE");
    let release = std::env::var("TABWIRE_RELEASE").is_ok_and(|value| !value.is_empty());
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("../extension");
    let checkout = std::fs::canonicalize(&checkout).unwrap_or(checkout);
    let checkout = if release {
        String::new()
    } else {
        checkout.display().to_string()
    };
    println!("cargo:rustc-env=TABWIRE_CHECKOUT_EXTENSION={checkout}");
}

/// `HEAD`'s short hash, watching the files that change with it: `HEAD` itself, the branch's
/// ref and `packed-refs`, those that exist (a missing one would rerun this at every build).
fn from_git() -> Option<String> {
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        out.status.success().then(|| text.trim().to_owned())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--path-format=absolute", "--git-path", &name])
            && Path::new(&path).is_file()
        {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    Some(commit)
}
