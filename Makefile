# Mandate: two commands for a fresh Debian 12 machine.
#   make run    installs what is missing, builds, opens the app on WORKSPACE (default: this directory)
#   make test   installs what the tests need, runs every test
# Both are idempotent.

SHELL := /bin/bash
WORKSPACE ?= $(CURDIR)

APT_BUILD := build-essential pkg-config libssl-dev libdbus-1-dev libwebkit2gtk-4.1-dev librsvg2-dev libxdo-dev
APT_TEST := git:git xvfb xauth webkit2gtk-driver gnome-keyring dbus-x11 libsecret-tools imagemagick xclip nodejs:node npm:npm ripgrep:rg bubblewrap:bwrap python3:python3 python3-pytest util-linux:setpriv
TAURI_DRIVER_VERSION := 2.1.0
TOOLS := $(CURDIR)/target/tools

.PHONY: run test deps test-deps build ts bench

run: deps
	cargo build -p mandate
	./target/debug/mandate --workspace "$(WORKSPACE)"

test: test-deps
	./scripts/test.sh

build: deps
	cargo build --workspace --all-targets

deps:
	@./scripts/ensure-deps.sh $(APT_BUILD)

test-deps: deps
	@./scripts/ensure-deps.sh $(APT_TEST)
	@./scripts/ensure-tauri-driver.sh $(TAURI_DRIVER_VERSION) $(TOOLS)

# Regenerates ui/js/protocol.d.ts from the Rust protocol types.
ts:
	UPDATE_TS=1 cargo test -p mandate-core --lib protocol::tests::typescript_declarations_are_current

# Benchmarks (not part of `make test`): prints a table of every figure against its budget.
bench: test-deps
	@./scripts/ensure-deps.sh openssl ripgrep:rg python3:python3 xdotool
	./bench/run.sh
