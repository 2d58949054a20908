#!/usr/bin/env bash
# `make install` and `make uninstall`:
#   install.sh install BINDIR   copies BINDIR/mandate and BINDIR/mandate-window, the desktop entry
#                               and the icons under $DESTDIR$PREFIX
#   install.sh uninstall        removes exactly what the install put there
# PREFIX defaults to ~/.local; DESTDIR (for packagers) is put before every path written, never in
# the paths written into the files. The install keeps a list of the files it wrote and of the
# directories it had to create ($PREFIX/lib/mandate/installed); the uninstall removes those files
# and, when they are empty, those directories, and nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."

PREFIX="${PREFIX:-$HOME/.local}"
DESTDIR="${DESTDIR:-}"
APP_ID=dev.mandate.app
ICON_SIZES=(32 48 64 128)

die() { echo "install.sh: $*" >&2; exit 2; }

PREFIX="${PREFIX%/}"
case "$PREFIX" in
  /?*) ;;
  *) die "PREFIX must be an absolute path other than / (got '${PREFIX:-/}')" ;;
esac
# The desktop entry names the binary by its path; these characters would need escaping there.
case "$PREFIX" in
  *[\"\`\$\\%]* | *$'\n'*) die "PREFIX may not contain \", \`, \$, \\, % or a newline" ;;
esac
MANIFEST_DIR="$PREFIX/lib/mandate"
MANIFEST="$MANIFEST_DIR/installed"

# Directories from the top down, so the manifest lists parents before children.
make_dir() {
  local sub="" part
  local -a parts
  IFS=/ read -ra parts <<<"$1"
  for part in "${parts[@]}"; do
    [ -n "$part" ] || continue
    sub="$sub/$part"
    if [ ! -d "$DESTDIR$sub" ]; then
      mkdir "$DESTDIR$sub"
      created+=("$sub")
    fi
  done
}

put() { # put MODE SOURCE DEST
  make_dir "$(dirname "$3")"
  install -m "$1" "$2" "$DESTDIR$3"
  files+=("$3")
}

do_install() {
  local from="$1"
  for bin in mandate mandate-window; do
    [ -x "$from/$bin" ] || die "$from/$bin is missing: build it first (make install builds it)"
  done
  if [ -f "$DESTDIR$MANIFEST" ]; then
    do_uninstall quiet # an update: what the last install put is replaced, not left beside
  fi
  files=()
  created=()
  put 755 "$from/mandate" "$PREFIX/bin/mandate"
  put 755 "$from/mandate-window" "$PREFIX/bin/mandate-window"

  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  local entry="$scratch/$APP_ID.desktop"
  local bindir
  bindir="$(printf '%s' "$PREFIX/bin" | sed 's/[&|]/\\&/g')"
  sed "s|@BINDIR@|$bindir|g" packaging/$APP_ID.desktop >"$entry"
  if command -v desktop-file-validate >/dev/null 2>&1; then
    desktop-file-validate "$entry"
  fi
  put 644 "$entry" "$PREFIX/share/applications/$APP_ID.desktop"
  for size in "${ICON_SIZES[@]}"; do
    local icon="src-tauri/icons/${size}x${size}.png"
    [ "$size" = 128 ] && icon=src-tauri/icons/icon.png
    put 644 "$icon" "$PREFIX/share/icons/hicolor/${size}x${size}/apps/$APP_ID.png"
  done

  make_dir "$MANIFEST_DIR"
  {
    printf 'file\t%s\n' "${files[@]}" "$MANIFEST"
    # Deepest first, the order they can be removed in.
    [ ${#created[@]} -eq 0 ] || printf 'dir\t%s\n' "${created[@]}" | sort -r
  } >"$DESTDIR$MANIFEST"

  echo "Installed Mandate under $DESTDIR$PREFIX: $PREFIX/bin/mandate, the desktop entry and the icon."
  if [ -z "$DESTDIR" ]; then
    case ":$PATH:" in
      *":$PREFIX/bin:"*) ;;
      *) echo "Note: $PREFIX/bin is not on your PATH; add it (e.g. in ~/.profile) to run 'mandate'." ;;
    esac
  fi
}

do_uninstall() {
  if [ ! -f "$DESTDIR$MANIFEST" ]; then
    [ "${1:-}" = quiet ] || echo "Mandate is not installed under $DESTDIR$PREFIX (no $DESTDIR$MANIFEST)."
    return 0
  fi
  local kind path
  local -a dirs=()
  while IFS=$'\t' read -r kind path; do
    # Whatever the list says: files only under the prefix; directories (removed only when
    # empty) under it, or the prefix and those above it when the install created them. The
    # install writes plain paths: one with `..` or `.` in it is not its own.
    case "/$path/" in
      */../* | */./*) continue ;;
    esac
    case "$kind:$path" in
      file:"$PREFIX"/*) rm -f -- "$DESTDIR$path" ;;
      dir:"$PREFIX"/* | dir:"$PREFIX") dirs+=("$path") ;;
      dir:/*) case "$PREFIX" in "$path"/*) dirs+=("$path") ;; esac ;;
    esac
  done <"$DESTDIR$MANIFEST"
  for path in "${dirs[@]}"; do
    rmdir -- "$DESTDIR$path" 2>/dev/null || true
  done
  [ "${1:-}" = quiet ] || echo "Removed Mandate from $DESTDIR$PREFIX (your settings, task history and keys are kept)."
}

case "${1:-}" in
  install) [ $# -eq 2 ] || die "usage: install.sh install BINDIR"; do_install "$2" ;;
  uninstall) do_uninstall ;;
  *) die "usage: install.sh install BINDIR | uninstall" ;;
esac
