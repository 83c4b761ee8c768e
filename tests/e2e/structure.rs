//! The source tree's own rules, checked from its files (`tabwire_e2e::structure`): every `.rs`
//! file is compiled (declared by a `mod`), no files import each other in a loop, the
//! extension's modules import only modules of their own layer or below, as ARCHITECTURE.md
//! lists the layers, and ARCHITECTURE.md's recipes stay true (the one for a peer kind short).

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
/// 10 and 3 of tests). Their count may only go down: raise it only with a reason in the recipe.
const PEER_KIND_FILES: usize = 13;

/// The paths in backticks of one recipe (a `### ` section under `## Recipes`).
fn recipe_paths<'a>(recipes: &'a str, name: &str) -> std::collections::BTreeSet<&'a str> {
    let heading = format!("### {name}\n");
    let start = recipes
        .find(&heading)
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has no recipe {name:?}"))
        + heading.len();
    let section = &recipes[start..];
    let section = &section[..section.find("\n### ").unwrap_or(section.len())];
    section
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|quoted| quoted.contains('/') && !quoted.contains(' '))
        .filter(|quoted| quoted.ends_with(".rs") || quoted.ends_with(".toml"))
        .collect()
}

/// Issue 27: ARCHITECTURE.md keeps true recipes for a browser tool, a device tool, a device
/// platform and a peer kind; every file they name exists.
#[test]
fn the_recipes_name_files_that_exist() {
    let repo = repo_root();
    let architecture = std::fs::read_to_string(repo.join("ARCHITECTURE.md")).unwrap();
    let start = architecture
        .find("\n## Recipes\n")
        .expect("a Recipes section");
    let recipes = &architecture[start + 1..];
    let recipes = &recipes[..recipes[3..]
        .find("\n## ")
        .map_or(recipes.len(), |end| end + 3)];
    for name in [
        "A browser tool",
        "A device tool",
        "A device platform",
        "A peer kind",
    ] {
        let paths = recipe_paths(recipes, name);
        let missing: Vec<_> = paths
            .iter()
            .filter(|path| !repo.join(path).is_file())
            .collect();
        assert!(
            missing.is_empty(),
            "the recipe {name:?} names files that do not exist: {missing:?}"
        );
        assert!(
            paths.len() >= 4,
            "{name:?} names too few files to be true: {paths:#?}"
        );
    }
    let peer = recipe_paths(recipes, "A peer kind");
    assert!(
        peer.len() <= PEER_KIND_FILES,
        "the recipe for a new peer kind names {} files, more than {PEER_KIND_FILES}: {peer:#?}",
        peer.len()
    );
}
