#!/usr/bin/env bash
# Everything `make test` runs, in order; stops at the first failing step.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "formatting"
cargo fmt --all -- --check

step "lints: clippy on every target, warnings are errors"
cargo clippy --workspace --all-targets --quiet -- -D warnings

step "UI: type-check the JavaScript against the generated protocol types"
if [ ! -x node_modules/.bin/tsc ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
node_modules/.bin/tsc -p tsconfig.json

step "build (app, core, tests)"
cargo build --workspace --all-targets

step "tests (private D-Bus session with gnome-keyring, virtual X display)"
dbus-run-session -- ./scripts/test-session.sh 2> >(grep -vE '^(dbus-daemon|\(xdg-desktop-portal|\(/usr/libexec|$|\[[WE]\]\[)' >&2)

step "tests from a copy of the checkout under /tmp (sandbox, MCP and hooks; confined processes get a private /tmp)"
./scripts/test-from-tmp.sh
