#!/usr/bin/env bash
# Runs inside `dbus-run-session`: unlocks a throwaway gnome-keyring, then runs every test under Xvfb.
set -euo pipefail
# A fresh keyring directory each run, so an old login keyring with another password never interferes.
XDG_DATA_HOME="$(mktemp -d)"
export XDG_DATA_HOME
trap 'rm -rf "$XDG_DATA_HOME"' EXIT
echo -n mandate-test | gnome-keyring-daemon --components=secrets --daemonize --unlock >/dev/null
export NO_AT_BRIDGE=1 GTK_USE_PORTAL=0
export TAURI_DRIVER="$PWD/target/tools/bin/tauri-driver"
rm -rf test-artifacts
# Each window test starts its own Xvfb display (tests/src/app.rs).
# One test at a time: the window tests each drive a WebKit process tree, and 2 cores is what CI has.
cargo test --workspace --no-fail-fast -- --test-threads=1
