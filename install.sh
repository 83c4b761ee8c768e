#!/bin/sh
# Installs a tabwire release for this machine, without root and without Rust:
#
#   curl -fsSL https://github.com/tabwire/tabwire/releases/latest/download/install.sh | sh
#
# It picks the archive for this system (Linux x86_64 or aarch64, macOS arm64 or x86_64),
# downloads it with the release's SHA256SUMS, refuses it unless its checksum matches, and
# installs the binaries into ~/.local/bin and the extension into ~/.local/share/tabwire/extension,
# where tabwire-hub finds it. Nothing is changed when any step fails. Settings (environment):
#   TABWIRE_VERSION        a release such as 0.1.0 (default: the latest)
#   TABWIRE_DOWNLOAD_URL   the folder the release's files are downloaded from (default: the
#                          project's releases; a local server or a mirror works too)
#   TABWIRE_PREFIX         where to install (default: ~/.local)
set -eu

project="https://github.com/tabwire/tabwire"
say() { printf 'install.sh: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

if [ -n "${TABWIRE_DOWNLOAD_URL:-}" ]; then
  base="${TABWIRE_DOWNLOAD_URL%/}"
elif [ -n "${TABWIRE_VERSION:-}" ]; then
  base="$project/releases/download/v${TABWIRE_VERSION#v}"
else
  base="$project/releases/latest/download"
fi
[ -n "${HOME:-}" ] || [ -n "${TABWIRE_PREFIX:-}" ] || die "HOME is not set: set TABWIRE_PREFIX"
prefix="${TABWIRE_PREFIX:-$HOME/.local}"

case "$(uname -s)/$(uname -m)" in
  Linux/x86_64 | Linux/amd64) target=x86_64-unknown-linux-gnu ;;
  Linux/aarch64 | Linux/arm64) target=aarch64-unknown-linux-gnu ;;
  Darwin/arm64 | Darwin/aarch64) target=aarch64-apple-darwin ;;
  Darwin/x86_64) target=x86_64-apple-darwin ;;
  *) die "no tabwire release for $(uname -s) $(uname -m): build it from source ($project)" ;;
esac
name="tabwire-$target"

fetch() { # URL FILE
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --proto '=https,http' -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2" "$1"
  else
    die "neither curl nor wget is installed"
  fi
}
sha256() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1"
  elif command -v shasum >/dev/null 2>&1; then shasum -a 256 "$1"
  else die "neither sha256sum nor shasum is installed to check the download"
  fi | awk '{print $1}'
}

work="$(mktemp -d "${TMPDIR:-/tmp}/tabwire-install.XXXXXX")"
trap 'rm -rf "$work"' EXIT INT TERM

say "downloading $name.tar.gz and SHA256SUMS from $base"
fetch "$base/SHA256SUMS" "$work/SHA256SUMS" || die "could not download $base/SHA256SUMS"
expected="$(awk -v file="$name.tar.gz" '$2 == file || $2 == "*" file {print $1; exit}' "$work/SHA256SUMS")"
[ -n "$expected" ] || die "SHA256SUMS at $base names no $name.tar.gz: no release for $target there"
fetch "$base/$name.tar.gz" "$work/$name.tar.gz" || die "could not download $base/$name.tar.gz"
actual="$(sha256 "$work/$name.tar.gz")"
[ "$actual" = "$expected" ] \
  || die "$name.tar.gz does not match SHA256SUMS (expected $expected, got $actual): nothing installed"
say "checksum verified ($actual)"

mkdir "$work/unpacked"
tar -xzf "$work/$name.tar.gz" -C "$work/unpacked" || die "could not unpack $name.tar.gz"
from="$work/unpacked/$name"
bins="tabwire-hub tabwire-mcp tabwire tabwire-android tabwire-ios"
for bin in $bins; do
  [ -f "$from/$bin" ] || die "$name.tar.gz has no $bin: not a tabwire release"
done
[ -f "$from/extension/manifest.json" ] || die "$name.tar.gz has no extension/: not a tabwire release"

bin_dir="$prefix/bin"
share="$prefix/share/tabwire"
mkdir -p "$bin_dir" "$share"
# Each file is copied beside its place and renamed over it, so a running hub keeps its binary
# and a failed copy leaves the old one.
for bin in $bins; do
  cp "$from/$bin" "$bin_dir/.$bin.new"
  chmod 755 "$bin_dir/.$bin.new"
  mv -f "$bin_dir/.$bin.new" "$bin_dir/$bin"
done
rm -rf "$share/extension.new" "$share/extension.old"
cp -R "$from/extension" "$share/extension.new"
chmod -R go-w "$share/extension.new"
[ -d "$share/extension" ] && mv "$share/extension" "$share/extension.old"
mv "$share/extension.new" "$share/extension"
rm -rf "$share/extension.old"
for file in LICENSE README.md VERSION tabwire-extension.zip; do
  [ -f "$from/$file" ] && cp "$from/$file" "$share/$file"
done

say "installed tabwire $(cat "$from/VERSION" 2>/dev/null || echo '') for $target:"
say "  $bin_dir: $bins"
say "  $share/extension: the extension (chrome://extensions → Load unpacked, for your own profile)"
case ":${PATH:-}:" in
  *":$bin_dir:"*) hub=tabwire-hub ;;
  *) hub="$bin_dir/tabwire-hub"
     say "  $bin_dir is not on your PATH: add it, or use the full paths below" ;;
esac
say "next: run  $hub --launch-browser"
say "  it starts a Chromium profile of its own with the extension connected, and prints the"
say "  line for your MCP client, such as:  claude mcp add tabwire -- $bin_dir/tabwire-mcp"
