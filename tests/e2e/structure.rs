//! The source tree's own rules, checked from its files (`tabwire_e2e::structure`): every `.rs`
//! file is compiled (declared by a `mod`), no files import each other in a loop, the
//! extension's modules import only modules of their own layer or below, as ARCHITECTURE.md
//! lists the layers, and ARCHITECTURE.md's recipe for a new peer kind stays short and true.

use tabwire_e2e::artifacts::repo_root;
use tabwire_e2e::structure::{PACKAGES, layer_violations, layers, targets, undeclared_files};

#[test]
fn every_rust_file_is_declared_by_a_mod() {
    let repo = repo_root();
    let undeclared: Vec<_> = PACKAGES
        .iter()
        .flat_map(|package| undeclared_files(&repo, package, &targets(&repo, package)))
        .collect();
    assert!(
        undeclared.is_empty(),
        "never compiled (no `mod` declares them): {undeclared:#?}"
    );
}

#[test]
fn no_files_import_each_other_in_a_loop() {
    let repo = repo_root();
    let mut found = Vec::new();
    for target in PACKAGES.iter().flat_map(|package| targets(&repo, package)) {
        for files in target.loops() {
            // Each file of the loop with the files of the loop it imports: where to cut.
            let edges: Vec<String> = files
                .iter()
                .map(|path| {
                    let imported = target.imports(&target.files[path]);
                    let within: Vec<String> = imported
                        .iter()
                        .filter(|other| files.contains(other))
                        .map(|other| other.display().to_string())
                        .collect();
                    format!("{} -> {}", path.display(), within.join(", "))
                })
                .collect();
            found.push(edges);
        }
    }
    assert!(found.is_empty(), "files importing each other: {found:#?}");
}

#[test]
fn the_extension_keeps_its_layers() {
    let repo = repo_root();
    let architecture = std::fs::read_to_string(repo.join("ARCHITECTURE.md")).unwrap();
    let layers = layers(&architecture, "#### Layers of extension-wasm");
    assert!(layers.len() > 4, "{layers:?}");
    let library = targets(&repo, "extension-wasm")
        .into_iter()
        .find(|target| target.root.ends_with("src/lib.rs"))
        .expect("extension-wasm has a library");
    let violations = layer_violations(&library, &layers);
    assert!(violations.is_empty(), "{violations:#?}");
}

/// The files a new peer kind touches, as ARCHITECTURE.md's recipe names them: the kinds table
/// and `each_kind!` keep them few (issue 24: the recipe named 14 and a kind took about 20; now
/// 10 and 3 of tests). Each named file exists, and their count may only go down: raise it only
/// with a reason in the recipe.
const PEER_KIND_FILES: usize = 13;

#[test]
fn a_new_peer_kind_touches_few_files() {
    let repo = repo_root();
    let architecture = std::fs::read_to_string(repo.join("ARCHITECTURE.md")).unwrap();
    let heading = "## Adding a tool group of another peer kind";
    let start = architecture.find(heading).expect("the recipe") + heading.len();
    let section = &architecture[start..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    // Paths in backticks: `hub/src/peer.rs`.
    let paths: std::collections::BTreeSet<&str> = section
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|quoted| quoted.contains('/') && quoted.ends_with(".rs") && !quoted.contains(' '))
        .collect();
    let missing: Vec<_> = paths
        .iter()
        .filter(|path| !repo.join(path).is_file())
        .collect();
    assert!(
        missing.is_empty(),
        "the recipe names files that do not exist: {missing:?}"
    );
    assert!(
        paths.len() <= PEER_KIND_FILES,
        "the recipe for a new peer kind names {} files, more than {PEER_KIND_FILES}: {paths:#?}",
        paths.len()
    );
    assert!(
        paths.len() >= 6,
        "the recipe names too few files to be true: {paths:#?}"
    );
}
