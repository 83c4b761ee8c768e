//! `tabwire-bindgen IN.wasm OUT_DIR`: the extension's wasm and its JavaScript glue, as the
//! wasm-bindgen CLI's `--target web --no-typescript --remove-name-section --out-name
//! tabwire_extension` would write them, from wasm-bindgen's own library at the version
//! Cargo.toml pins for the wasm-bindgen crate. Built with the workspace, so a fresh checkout
//! needs no separately installed CLI (extension/build.sh runs it).
use std::path::PathBuf;

use anyhow::{Context, bail};

fn main() -> anyhow::Result<()> {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [input, out_dir] = args.as_slice() else {
        bail!("usage: tabwire-bindgen IN.wasm OUT_DIR");
    };
    let mut bindgen = wasm_bindgen_cli_support::Bindgen::new();
    bindgen
        .input_path(input)
        .out_name("tabwire_extension")
        .web(true)?
        .typescript(false)
        // As the CLI does: `init()` with no argument loads the wasm beside the glue.
        .omit_default_module_path(false)
        // The name section (function names for stack traces) is a quarter of the file; panics
        // are logged with their message by the wasm itself.
        .remove_name_section(true);
    bindgen
        .generate(out_dir)
        .with_context(|| format!("wasm-bindgen on {}", input.display()))
}
