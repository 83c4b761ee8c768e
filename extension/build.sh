#!/usr/bin/env bash
# Builds the extension's wasm into extension/pkg/, after which extension/ loads unpacked.
# Works from any directory; honours CARGO_TARGET_DIR.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

# The wasm-bindgen CLI must match the wasm-bindgen crate exactly; the pin lives in Cargo.toml.
pinned="$(sed -n 's/^wasm-bindgen *= *"=\([0-9][0-9.]*\)".*/\1/p' Cargo.toml | head -n 1)"
if [[ -z "$pinned" ]]; then
  echo "build.sh: could not find the wasm-bindgen pin (wasm-bindgen = \"=X.Y.Z\") in $repo/Cargo.toml" >&2
  exit 1
fi
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
case "$target_dir" in /*) ;; *) target_dir="$repo/$target_dir" ;; esac
# scripts/start and scripts/test install the pinned CLI into the checkout's own tools directory.
export PATH="$target_dir/tools/bin:$PATH"
installed="$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)"
if [[ "$installed" != "$pinned" ]]; then
  have="${installed:+version $installed is installed}"
  echo "build.sh: the wasm-bindgen CLI must be version $pinned (${have:-it is not installed}); scripts/start and scripts/test install it, or run: cargo install wasm-bindgen-cli --version $pinned --root $target_dir/tools" >&2
  exit 1
fi

# binaryen's wasm-opt shrinks the module (Chrome compiles it at every service-worker start).
if ! command -v wasm-opt >/dev/null; then
  echo "build.sh: wasm-opt is not installed: scripts/start and scripts/test install it, or install binaryen (Debian: apt-get install binaryen; macOS: brew install binaryen)" >&2
  exit 1
fi

cargo build --quiet -p tabwire-extension --target wasm32-unknown-unknown --profile wasm-release
built="$target_dir/wasm32-unknown-unknown/wasm-release/tabwire_extension.wasm"
# Optimised before wasm-bindgen, never after: binaryen 108 retypes the externref table that
# wasm-bindgen's output sets up, and the worker then fails at start (extension/README.md, "Size").
# The features are those rustc's wasm32 target emits.
wasm-opt -Oz --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
  --enable-nontrapping-float-to-int --enable-reference-types --enable-multivalue \
  "$built" -o "${built%.wasm}.opt.wasm"
# The name section (function names for stack traces) is a quarter of the file; panics are
# logged with their message by the wasm itself, so it is dropped.
wasm-bindgen --target web --no-typescript --remove-name-section --out-dir extension/pkg \
  --out-name tabwire_extension "${built%.wasm}.opt.wasm"

# The in-page collector is injected as a file (once per document), so it ships beside the wasm:
# its parts joined in the order of their names, as extension-wasm/build.rs joins them for the
# build hash.
(export LC_ALL=C; cat extension-wasm/js/collector/*.js) > extension/pkg/collector.js

size_kb=$(( $(wc -c < extension/pkg/tabwire_extension_bg.wasm) / 1024 ))
echo "extension built: extension/ (wasm ${size_kb} KB)"
