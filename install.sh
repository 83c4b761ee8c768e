#!/bin/sh
# Installs a tabwire release for this machine, without root and without Rust:
#
#   curl -fsSL https://github.com/tabwire/tabwire/releases/latest/download/install.sh | sh
#
# It picks the archive for this system (Linux x86_64 or aarch64, macOS arm64 or x86_64),
# downloads it with the release's SHA256SUMS, refuses it unless its checksum matches, and
# installs the binaries into ~/.local/bin and the extension into ~/.local/share/tabwire/extension,
# where tabwire-hub finds it. Nothing is changed when a download, the checksum or the archive
# is wrong; everything is staged before the first file is replaced. Settings (environment):
#   TABWIRE_VERSION        a release such as 0.1.0 (default: the latest)
#   TABWIRE_DOWNLOAD_URL   the folder the release's files are downloaded from (default: the
#                          project's releases; a mirror, or a local server: only a URL given
#                          here may be plain http)
#   TABWIRE_PREFIX         where to install (default: ~/.local)
set -eu

# Everything is in functions, run by the last line: a download cut short runs nothing.

project="https://github.com/tabwire/tabwire"
say() { printf 'install.sh: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

fetch() { # URL FILE
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --proto "$protocols" --proto-redir "$protocols" -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    if [ "$protocols" = "=https" ]; then wget -q --https-only -O "$2" "$1"
    else wget -q -O "$2" "$1"; fi
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

main() {
  umask 022
  protocols="=https"
  if [ -n "${TABWIRE_DOWNLOAD_URL:-}" ]; then
    base="${TABWIRE_DOWNLOAD_URL%/}"
    case "$base" in
      http://*) protocols="=http,https"
        say "plain http ($base): the checksum comes from the same server, so it only catches a broken download" ;;
    esac
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

  work="$(mktemp -d "${TMPDIR:-/tmp}/tabwire-install.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  trap 'exit 1' INT TERM

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

  # Staged beside their places first (a name left there before, even a link, is removed, never
  # written through), then each renamed over its place: a failure while staging leaves the old
  # install whole, and a running hub keeps the binary it started from.
  bin_dir="$prefix/bin"
  share="$prefix/share/tabwire"
  mkdir -p "$bin_dir" "$share"
  chmod go-w "$share"
  for bin in $bins; do
    rm -f "$bin_dir/.$bin.new"
    cp "$from/$bin" "$bin_dir/.$bin.new" || die "could not write into $bin_dir"
    chmod 755 "$bin_dir/.$bin.new"
  done
  rm -rf "$share/extension.new" "$share/extension.old"
  cp -R "$from/extension" "$share/extension.new" || die "could not write into $share"
  chmod -R go-w "$share/extension.new"
  for file in LICENSE README.md VERSION tabwire-extension.zip; do
    if [ -f "$from/$file" ]; then
      rm -f "$share/.$file.new"
      cp "$from/$file" "$share/.$file.new"
    fi
  done

  for bin in $bins; do
    mv -f "$bin_dir/.$bin.new" "$bin_dir/$bin"
  done
  if [ -d "$share/extension" ]; then mv "$share/extension" "$share/extension.old"; fi
  mv "$share/extension.new" "$share/extension"
  rm -rf "$share/extension.old"
  for file in LICENSE README.md VERSION tabwire-extension.zip; do
    if [ -f "$share/.$file.new" ]; then mv -f "$share/.$file.new" "$share/$file"; fi
  done

  say "installed tabwire $(cat "$from/VERSION" 2>/dev/null || true) for $target:"
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
}

main "$@"
