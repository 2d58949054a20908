# Mandate: two commands for a fresh Debian 12 machine.
#   make run    installs what is missing, builds (release), opens the app on WORKSPACE (default: this directory)
#   make test   installs what the tests need, runs every test
# Both are idempotent. Then, to keep the app:
#   make install    builds (release) and puts `mandate`, `mandate-window`, the desktop entry and the
#                   icon under PREFIX (default ~/.local; DESTDIR honoured); again to update
#   make uninstall  removes exactly what `make install` put there

SHELL := /bin/bash
WORKSPACE ?= $(CURDIR)
# `release` (what is installed: whole-program LTO, slow to build) or `dev` (the tests' build).
PROFILE ?= release
BUILD_DIR = target/$(if $(filter dev,$(PROFILE)),debug,$(PROFILE))
PREFIX ?= $(HOME)/.local
DESTDIR ?=
# A directory holding `mandate` and `mandate-window` built already: `make install` copies
# those and builds nothing (CI installs the test build this way instead of a second build).
BUILT ?=

APT_BUILD := build-essential pkg-config libssl-dev libdbus-1-dev liblzma-dev libwebkit2gtk-4.1-dev librsvg2-dev libxdo-dev
APT_TEST := git:git desktop-file-utils:desktop-file-validate xvfb xauth webkit2gtk-driver gnome-keyring dbus-x11 libsecret-tools imagemagick xclip nodejs:node npm:npm ripgrep:rg bubblewrap:bwrap python3:python3 python3-pytest util-linux:setpriv dunst xdotool
TAURI_DRIVER_VERSION := 2.1.0
TOOLS := $(CURDIR)/target/tools

.PHONY: run test deps test-deps build ts bench install uninstall

run: deps
	cargo build --profile $(PROFILE) -p mandate
	./$(BUILD_DIR)/mandate --workspace "$(WORKSPACE)"

test: test-deps
	./scripts/test.sh

build: deps
	cargo build --workspace --all-targets

deps:
	@./scripts/ensure-deps.sh $(APT_BUILD)

test-deps: deps
	@./scripts/ensure-deps.sh $(APT_TEST)
	@./scripts/ensure-tauri-driver.sh $(TAURI_DRIVER_VERSION) $(TOOLS)

install:
ifeq ($(BUILT),)
	@./scripts/ensure-deps.sh $(APT_BUILD)
	cargo build --profile $(PROFILE) -p mandate
endif
	@PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" ./scripts/install.sh install "$(or $(BUILT),$(BUILD_DIR))"

uninstall:
	@PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" ./scripts/install.sh uninstall

# Regenerates ui/js/protocol.d.ts from the Rust protocol types.
ts:
	UPDATE_TS=1 cargo test -p mandate-core --lib protocol::tests::typescript_declarations_are_current

# Benchmarks (not part of `make test`): prints a table of every figure against its budget.
bench: test-deps
	@./scripts/ensure-deps.sh openssl ripgrep:rg python3:python3 xdotool
	./bench/run.sh
