#!/usr/bin/env bash
# Every benchmark, each against a reference measured in the same run; prints one table.
# Not part of `make test`. Data sets are generated deterministically under target/bench-data.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "==> building release binaries"
cargo build --release -p mandate
echo "==> the context window: long tasks against a provider on loopback"
cargo build --release -p mandate-tests --bin context-bench
MANDATE_BIN=target/release/mandate target/release/context-bench | tee target/bench-context.txt
echo "==> core figures (cargo bench)"
cargo bench -p mandate-core --bench figures | tee target/bench-core.txt
echo "==> the window (Xvfb)"
# In a private D-Bus session, as on a desktop (without one GLib spends start-up time looking for it).
dbus-run-session -- python3 bench/app_figures.py 2>/dev/null | tee target/bench-app.txt
echo
echo "| figure | measured | reference (same run) | ratio | budget | |"
echo "|---|---|---|---|---|---|"
grep -h '^| ' target/bench-core.txt target/bench-context.txt target/bench-app.txt | grep -v '^| figure\|^|---'
