#!/usr/bin/env bash
# The sandbox, MCP and hook tests again, from a copy of this checkout under /tmp with its own
# target directory there. bubblewrap gives confined hooks and servers a private /tmp, so a
# checkout, a test binary or a test MCP server kept under the real one must still work.
#
# The copy is what the working tree holds (tracked and new files, as they are now), its files
# new, so that the workspace's own crates are compiled again there: the test binaries, the
# test MCP server and the paths built into them all lie under /tmp. Its target directory
# starts from this one's compiled dependencies (hard links where the file system allows, a
# copy otherwise); the app binary the CLI tests drive is this checkout's, built from the same
# sources.
set -euo pipefail
cd "$(dirname "$0")/.."
src="$PWD"
main_target="${CARGO_TARGET_DIR:-$src/target}"

copy="$(mktemp -d -p /tmp)"
trap 'rm -rf "$copy"' EXIT
git ls-files -z --cached --others --exclude-standard \
  | tar --null --ignore-failed-read -T - -cf - 2>/dev/null \
  | tar --touch -xf - -C "$copy"

export CARGO_TARGET_DIR="$copy/target"
mkdir -p "$CARGO_TARGET_DIR/debug"
# cargo and rustc replace what they rebuild (a new file, then a rename), so linked files of
# the dependencies are never written through; /tmp on another file system gets a copy when
# there is room for one, else the dependencies are compiled there.
seeded=no
if [ -d "$main_target/debug/deps" ]; then
  if cp -al "$main_target/debug/deps" "$CARGO_TARGET_DIR/debug/" 2>/dev/null; then
    seeded=linked
  else
    rm -rf "$CARGO_TARGET_DIR/debug/deps"
    need_kb=$(du -sk "$main_target/debug/deps" | cut -f1)
    free_kb=$(df -Pk "$copy" | awk 'NR == 2 { print $4 }')
    if [ "$free_kb" -gt $((need_kb * 2)) ]; then
      cp -a "$main_target/debug/deps" "$CARGO_TARGET_DIR/debug/" && seeded=copied
    fi
  fi
fi
if [ "$seeded" != no ]; then
  # Small, and rewritten in place by cargo: copied, never linked.
  for dir in build .fingerprint; do
    if [ -d "$main_target/debug/$dir" ]; then cp -a "$main_target/debug/$dir" "$CARGO_TARGET_DIR/debug/"; fi
  done
fi
if [ -x "$main_target/debug/mandate" ]; then
  cp -a "$main_target/debug/mandate" "$CARGO_TARGET_DIR/debug/mandate"
else
  (cd "$copy" && cargo build --quiet -p mandate --bin mandate)
fi

cd "$copy"
echo "checkout and test binaries under $copy (dependencies: $seeded from $main_target)"
cargo test --quiet -p mandate-core --lib -- sandbox:: mcp:: user_hooks::
cargo test --quiet -p mandate-tests --test programs_anywhere --test mcp_confinement -- --test-threads=1
