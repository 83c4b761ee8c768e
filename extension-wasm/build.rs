//! Joins the in-page collector's parts (`js/collector/*.js`, in the order of their names) into
//! one file, the way `extension/build.sh` joins them for the extension: `page.rs` includes it to
//! compute the build hash that tells a page whether the collector it holds is current.

use std::path::PathBuf;

fn main() {
    println!("cargo::rerun-if-changed=js/collector");
    let mut parts: Vec<PathBuf> = std::fs::read_dir("js/collector")
        .expect("js/collector is readable")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "js"))
        .collect();
    // By name, byte for byte, as `LC_ALL=C` sorts the shell's glob in build.sh.
    parts.sort();
    let mut joined = String::new();
    for part in &parts {
        joined.push_str(&std::fs::read_to_string(part).expect("a collector part is UTF-8"));
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("collector.js"), joined).expect("OUT_DIR is writable");
}
