#!/usr/bin/env bash
# Every benchmark, each against a reference measured in the same run; prints one table in which
# each figure is the median of BENCH_RUNS runs (3 unless set), with the minimum and maximum.
# Not part of `make test`. Data sets are generated deterministically under target/bench-data.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${BENCH_RUNS:-3}"
if [ "$runs" -lt 3 ]; then
  echo "BENCH_RUNS must be at least 3 (each figure is a median with its minimum and maximum)" >&2
  exit 2
fi
echo "==> building release binaries"
cargo build --release -p mandate
cargo build --release -p mandate-tests --bin context-bench
cargo bench -p mandate-core --bench figures --no-run
rm -f target/bench-*-run*.txt
for run in $(seq 1 "$runs"); do
  echo "==> run $run of $runs: the context window (long tasks against a provider on loopback)"
  MANDATE_BIN=target/release/mandate target/release/context-bench | tee "target/bench-context-run$run.txt"
  echo "==> run $run of $runs: core figures (cargo bench)"
  cargo bench -p mandate-core --bench figures | tee "target/bench-core-run$run.txt"
  echo "==> run $run of $runs: the window (Xvfb)"
  # In a private D-Bus session, as on a desktop (without one GLib spends start-up time looking for it).
  dbus-run-session -- python3 bench/app_figures.py 2>/dev/null | tee "target/bench-app-run$run.txt"
done
echo
python3 bench/aggregate.py target/bench-core-run*.txt target/bench-context-run*.txt target/bench-app-run*.txt \
  | tee target/bench-table.txt
