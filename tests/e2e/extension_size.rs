//! The extension's wasm stays small: Chrome compiles it on every service-worker start (it stops
//! idle workers), so its size is the worker's cold start. A size check of the built file, not a
//! timed assertion; `bench-coldstart` prints the start itself.

use tabwire_e2e::artifacts::artifacts;

/// The most the built `tabwire_extension_bg.wasm` may weigh: 1,541 KB today (`opt-level =
/// "z"`, the protocol's tagged enums read without serde's buffering, no device operations,
/// binaryen's `wasm-opt -Oz` before wasm-bindgen; 1,800 KB before all that) with a little room.
/// It was 1,450 KB until issue 28's network mocks (+54 KB) and recorded demonstrations (+44 KB)
/// (extension/README.md, "Size and start"). Issue 29 asks for 600 KB, which needs more than
/// serde; lower this as it lands.
const MAX_WASM_BYTES: u64 = 1_560 * 1024;

#[test]
fn the_extension_wasm_stays_under_its_limit() {
    let wasm = artifacts().extension.join("pkg/tabwire_extension_bg.wasm");
    let bytes = std::fs::metadata(&wasm)
        .unwrap_or_else(|e| panic!("{} was not built: {e}", wasm.display()))
        .len();
    assert!(
        bytes <= MAX_WASM_BYTES,
        "{} is {} KB, more than {} KB: the service worker compiles it on every start. \
         `twiggy top` on the module before wasm-bindgen says what grew (extension/README.md, \
         \"Size\")",
        wasm.display(),
        bytes / 1024,
        MAX_WASM_BYTES / 1024
    );
}
