# Shared by scripts/start and scripts/test (sourced, not run): progress lines, and installing
# what a fresh machine lacks, each only when it is missing. Every install says what it installs
# and why before it starts, and a failure says what to do by hand.

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
case "$target_dir" in /*) ;; *) target_dir="$repo/$target_dir" ;; esac
started_at=$(date +%s)

# A progress line on stderr, with the seconds since the script started.
say() { printf '%s [+%ss] %s\n' "${script_name:-tabwire}" "$(( $(date +%s) - started_at ))" "$*" >&2; }
die() { say "error: $*"; exit 1; }
# A command that fails under `set -e` (a cargo build, say) printed its own error; this line says
# that the script stopped there, not somewhere later.
trap 'status=$?; say "stopped: the command above failed (exit $status)"' ERR

need_cargo() {
  command -v cargo >/dev/null \
    || die "cargo is not installed: install Rust from https://rustup.rs, then run this again"
}

# Runs a command as root: directly when we are root, else through sudo.
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@";
  elif command -v sudo >/dev/null; then sudo "$@";
  else return 1; fi
}

# Installs distribution packages. Arguments are Debian names; Fedora names are mapped.
install_packages() {
  if command -v apt-get >/dev/null; then
    say "installing with apt-get: $*"
    as_root apt-get update -qq \
      && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  elif command -v dnf >/dev/null; then
    local mapped=()
    for package in "$@"; do
      case "$package" in
        nginx-light) mapped+=(nginx) ;;
        adb) mapped+=(android-tools) ;;
        *) mapped+=("$package") ;;
      esac
    done
    say "installing with dnf: ${mapped[*]}"
    as_root dnf install -y -q "${mapped[@]}"
  else
    return 1
  fi
}

# The wasm32 target, for the extension's Rust.
ensure_wasm_target() {
  if command -v rustup >/dev/null; then
    if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
      say "adding the Rust target wasm32-unknown-unknown (the extension's logic is Rust compiled to wasm)"
      rustup target add wasm32-unknown-unknown >&2 || die "rustup could not add wasm32-unknown-unknown"
    fi
  elif [ ! -d "$(rustc --print sysroot)/lib/rustlib/wasm32-unknown-unknown" ]; then
    die "the Rust target wasm32-unknown-unknown is missing and rustup is not installed to add it"
  fi
}

# binaryen's wasm-opt, which extension/build.sh runs on the extension's wasm.
ensure_wasm_opt() {
  command -v wasm-opt >/dev/null && return 0
  say "installing binaryen (its wasm-opt shrinks the extension's wasm, which Chrome compiles at every worker start)"
  install_packages binaryen \
    || die "could not install binaryen (no apt-get or dnf, or no root and no sudo): install it yourself (Debian: apt-get install binaryen; macOS: brew install binaryen)"
}

# Chromium, when the hub's discovery (the same code the launcher and the tests use) finds no
# Chrome or Chromium. `$1` is the built tabwire-hub.
ensure_chromium() {
  local hub="$1" found
  # find-chrome's explanation (every place it looked) goes straight to the terminal.
  if found="$("$hub" find-chrome)"; then
    say "browser: $found"
    return 0
  fi
  say "no Chrome or Chromium found (above: where the hub looked)"
  install_packages chromium \
    || die "could not install Chromium (no apt-get or dnf, or no root and no sudo): install Chromium or Google Chrome yourself, or set TABWIRE_CHROME=/path/to/chrome"
  found="$("$hub" find-chrome)" || die "Chromium was installed but is still not found"
  say "browser: $found"
}
