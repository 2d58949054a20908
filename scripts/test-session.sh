#!/usr/bin/env bash
# Runs inside `dbus-run-session`: unlocks a throwaway gnome-keyring, then runs every test under Xvfb.
set -euo pipefail
echo -n mandate-test | gnome-keyring-daemon --components=secrets --daemonize --unlock >/dev/null
export NO_AT_BRIDGE=1 GTK_USE_PORTAL=0
export TAURI_DRIVER="$PWD/target/tools/bin/tauri-driver"
rm -rf test-artifacts
exec xvfb-run -a -s "-screen 0 1440x900x24 -nolisten tcp" \
  cargo test --workspace --no-fail-fast -- --test-threads=2
