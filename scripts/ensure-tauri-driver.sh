#!/usr/bin/env bash
# Installs tauri-driver (the WebDriver bridge for the window tests) into target/tools (idempotent).
set -euo pipefail
version="$1"
root="$2"
bin="$root/bin/tauri-driver"
if [ -x "$bin" ] && grep -q "\"tauri-driver $version " "$root/.crates.toml" 2>/dev/null; then
  exit 0
fi
echo "Installing tauri-driver $version"
cargo install tauri-driver --version "$version" --locked --root "$root" --quiet
