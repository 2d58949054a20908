#!/usr/bin/env bash
# Installs the Debian packages given as arguments that are not installed yet (idempotent).
# `PACKAGE:COMMAND` is satisfied by COMMAND on the PATH too (Node.js may come from elsewhere).
set -euo pipefail
if ! command -v cargo >/dev/null 2>&1; then
  echo "Rust (cargo) is required: install a current stable toolchain (1.90 or newer), e.g. with rustup, then run make again." >&2
  exit 1
fi
missing=()
for spec in "$@"; do
  pkg="${spec%%:*}"
  cmd="${spec#*:}"
  if [ "$cmd" != "$spec" ] && command -v "$cmd" >/dev/null 2>&1; then continue; fi
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "Installing: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
