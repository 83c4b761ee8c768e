#!/usr/bin/env bash
# Builds the extension's wasm into extension/pkg/, after which extension/ loads unpacked.
# Works from any directory; honours CARGO_TARGET_DIR.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

target_dir="${CARGO_TARGET_DIR:-$repo/target}"
case "$target_dir" in /*) ;; *) target_dir="$repo/$target_dir" ;; esac

# binaryen's wasm-opt shrinks the module (Chrome compiles it at every service-worker start).
if ! command -v wasm-opt >/dev/null; then
  echo "build.sh: wasm-opt is not installed: scripts/start and scripts/test install it, or install binaryen (Debian: apt-get install binaryen; macOS: brew install binaryen)" >&2
  exit 1
fi

# The glue generator (bindgen/: wasm-bindgen's library at the version Cargo.toml pins with the
# crate), a debug build of the host; then the wasm.
cargo build --quiet -p tabwire-bindgen
cargo build --quiet -p tabwire-extension --target wasm32-unknown-unknown --profile wasm-release
built="$target_dir/wasm32-unknown-unknown/wasm-release/tabwire_extension.wasm"
optimised="${built%.wasm}.opt.wasm"
bindgen="$target_dir/debug/tabwire-bindgen"
final=extension/pkg/tabwire_extension_bg.wasm
# A second run with nothing changed (cargo leaves its outputs alone) skips both steps below.
if [ ! -f "$final" ] || [ "$built" -nt "$optimised" ] || [ "$optimised" -nt "$final" ] \
    || [ "$bindgen" -nt "$final" ]; then
  # Optimised before wasm-bindgen, never after: binaryen 108 retypes the externref table that
  # wasm-bindgen's output sets up, and the worker then fails at start (extension/README.md,
  # "Size"). The features are those rustc's wasm32 target emits.
  wasm-opt -Oz --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
    --enable-nontrapping-float-to-int --enable-reference-types --enable-multivalue \
    "$built" -o "$optimised"
  # The JavaScript glue and the final wasm (without its name section: bindgen/src/main.rs).
  "$bindgen" "$optimised" extension/pkg
fi

# The in-page collector is injected as a file (once per document), so it ships beside the wasm:
# its parts joined in the order of their names, as extension-wasm/build.rs joins them for the
# build hash.
(export LC_ALL=C; cat extension-wasm/js/collector/*.js) > extension/pkg/collector.js

size_kb=$(( $(wc -c < extension/pkg/tabwire_extension_bg.wasm) / 1024 ))
echo "extension built: extension/ (wasm ${size_kb} KB)"
