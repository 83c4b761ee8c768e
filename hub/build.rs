//! Names the commit the hub is built from, for `tabwire-hub --version`: `TABWIRE_COMMIT` when
//! the build is given it (a release built from an unpacked source archive), else git's `HEAD`
//! in the checkout, else `unknown`. Reruns only when one of those changes, so a second build
//! of an unchanged checkout builds nothing.
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
