# Weft — the two commands a newcomer runs (see README.md):
#   make demo   install what is missing, build, and run the example workflows
#   make test   install what is missing and run every test (Rust, UI, end-to-end)
#
# Installing is idempotent: each step checks first (dpkg -s, node_modules
# stamp, cargo-nextest on PATH) and costs nothing on a prepared machine.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

CARGO ?= cargo
# One shared target dir for everything, fuzz targets included.
export CARGO_TARGET_DIR ?= $(CURDIR)/target
WEFT := $(CARGO_TARGET_DIR)/debug/weft
APP := $(CARGO_TARGET_DIR)/debug/weft-desktop
# Where `make demo`'s workflow runs its commands.
DEMO_DIR := $(CARGO_TARGET_DIR)/demo

# Tauri's build dependencies (see ../shared/design/PLATFORM.md), the tools the
# end-to-end tests drive (Xvfb, WebKitWebDriver, a session bus, a notification
# server, Chromium) and Graphviz (the parse benchmark compares against `gc`).
# The sandbox tests (tests/tests/it/sandbox_docker.rs, docs/sandbox.md) run a
# hermetic Podman Docker-API service: podman with runc (never crun, which
# refuses this kind of cgroup v1/hybrid host; do not add it), catatonit for
# the containers' init, and busybox-static + bash-static for the test image.
# The ssh:// engine tests (tests/tests/it/sandbox_ssh.rs) run sshd per
# connection behind ssh's ProxyCommand: openssh-server (which brings
# openssh-client). They need no listening sshd: when this installs it on a
# systemd machine, the service apt enables is disabled again at once, so
# `make test` never leaves an SSH server listening on port 22.
# The Debian package (packaging/deb/build.sh) is built with dpkg-deb and
# dpkg-shlibdeps (dpkg-dev); its test validates the desktop entry with
# desktop-file-validate (desktop-file-utils). tests/app/tray.py stands in for a
# tray host by owning a D-Bus name and answering on it (python3-dbus,
# python3-gi).
APT_PACKAGES := \
	libwebkit2gtk-4.1-dev libgtk-3-dev libayatana-appindicator3-dev librsvg2-dev \
	libssl-dev libxdo-dev pkg-config build-essential file \
	xvfb xauth webkit2gtk-driver dbus-x11 dunst chromium graphviz time python3 \
	podman runc catatonit busybox-static bash-static openssh-server \
	dpkg-dev desktop-file-utils python3-dbus python3-gi

XVFB := xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session --

.PHONY: help deps deps-apt deps-npm deps-adapters deps-cargo ui build build-app demo test \
	test-rust test-ui test-app test-package package lint fuzz-build bench clean regenerate

help:
	@echo "make demo   - install what is missing, build, validate and summarise the examples"
	@echo "make test   - install what is missing and run every test"
	@echo "make package - build the Debian package (release) into $(CARGO_TARGET_DIR)/"
	@echo "make bench  - run the benchmarks (release build; docs/performance.md)"
	@echo "make bench-peers - the engine bench beside scud-cli (installs it once)"
	@echo "make regenerate - rewrite the generated files the tests check (wire types, UI fixtures)"

## ---- installing what is missing -------------------------------------------

deps: deps-apt deps-npm deps-cargo

deps-apt:
	@missing=""; \
	for p in $(APT_PACKAGES); do \
	  dpkg -s "$$p" >/dev/null 2>&1 || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "==> installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi; \
	  $$sudo apt-get update -qq; \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  case " $$missing " in *" openssh-server "*) \
	    if [ -d /run/systemd/system ]; then \
	      echo "==> disabling the ssh service apt just enabled (the tests run sshd themselves)"; \
	      $$sudo systemctl disable --now ssh.service ssh.socket >/dev/null 2>&1 || true; \
	    fi;; \
	  esac; \
	fi

# `npm ci` only when package-lock.json changed since the last install.
deps-npm: ui/node_modules/.weft-stamp
ui/node_modules/.weft-stamp: ui/package-lock.json
	@echo "==> npm ci (ui/)"
	cd ui && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The real ACP adapters the end-to-end tests drive against the fake LLM
# server (tests/tests/it/acp_claude_adapter.rs): Claude Code's, ~400 MB
# with its native CLI. `npm ci` only when tests/adapters/package-lock.json
# changed since the last install. Only `make test` needs them (not the demo).
deps-adapters: tests/adapters/node_modules/.weft-stamp
tests/adapters/node_modules/.weft-stamp: tests/adapters/package-lock.json
	@echo "==> npm ci (tests/adapters/)"
	cd tests/adapters && npm ci --no-audit --no-fund --loglevel=error
	touch $@

deps-cargo:
	@command -v cargo-nextest >/dev/null 2>&1 || { echo "==> installing cargo-nextest"; $(CARGO) install cargo-nextest --locked; }

## ---- building ---------------------------------------------------------------

# ui/dist must exist before anything compiles src-tauri (Tauri embeds it).
ui: deps-npm
	cd ui && npm run build --silent

build: deps-cargo
	$(CARGO) build -p weft -p weft-tests --bins

build-app: deps ui
	$(CARGO) build -p weft-desktop

# The Debian package: weft, weftd and the app on PATH, the menu entry and
# icons, manual pages, completions and the systemd user unit
# (packaging/deb/build.sh; docs/app.md, "Installing"). Install it with
# `sudo apt install $(CARGO_TARGET_DIR)/weft_*.deb`.
package: deps-apt ui
	$(CARGO) build --release -p weft -p weft-desktop --bins
	packaging/deb/build.sh $(CARGO_TARGET_DIR)/release $(CARGO_TARGET_DIR)

## ---- the demo ---------------------------------------------------------------

demo: deps build
	@echo
	@echo "==> validating the example workflows"
	$(WEFT) validate examples/*.fabro examples/*/*.fabro
	@echo
	@echo "==> running examples/release-gate.fabro in the daemon (commands and one human gate; no LLM)"
	@echo "    its commands write into $(DEMO_DIR); without a terminal the gate is auto-approved"
	@mkdir -p $(DEMO_DIR)
	@cd $(DEMO_DIR) && approve=$$([ -t 0 ] || echo --auto-approve) && \
	  $(WEFT) run $(CURDIR)/examples/release-gate.fabro $$approve --no-checkpoint --json > conclusion.json
	@run=$$(sed -n 's/.*"run_id":"\([^"]*\)".*/\1/p' $(DEMO_DIR)/conclusion.json); \
	  dir=$$(sed -n 's/.*"run_dir":"\([^"]*\)".*/\1/p' $(DEMO_DIR)/conclusion.json); \
	  echo; \
	  echo "Run $$run is recorded. Look at it with:"; \
	  echo "  $(WEFT) ps                      # every run"; \
	  echo "  $(WEFT) events $$run   # what happened, step by step"; \
	  echo "  $(WEFT) logs $$run     # each stage's output"; \
	  echo "  $(WEFT) dump $$run --out /tmp/weft-dump"; \
	  echo "  ls $$dir"; \
	  echo "The run executed in weftd, which keeps running: $(WEFT) daemon status / $(WEFT) daemon stop"
	@echo
	@echo "==> running examples/checkpointed-release.fabro in a scratch git repository, $(DEMO_DIR)/scratch-release"
	@echo "    (git checkpoints: the run works on its own branch, one commit per stage; your checkout is untouched)"
	@rm -rf $(DEMO_DIR)/scratch-release && mkdir -p $(DEMO_DIR)/scratch-release && \
	  cd $(DEMO_DIR)/scratch-release && printf '1.4.2\n' > VERSION && printf '## 1.4.2\n\n- first release\n' > CHANGELOG.md && \
	  git init -q && git add -A && git -c user.name=weft -c user.email=weft@localhost commit -qm "scratch: a release to bump"
	@$(WEFT) run $(CURDIR)/examples/checkpointed-release.fabro --work-dir $(DEMO_DIR)/scratch-release --json > $(DEMO_DIR)/release-conclusion.json
	@run=$$(sed -n 's/.*"run_id":"\([^"]*\)".*/\1/p' $(DEMO_DIR)/release-conclusion.json); \
	  echo; \
	  echo "Its changes, stage by stage and whole:"; \
	  echo "  $(WEFT) logs $$run bump --diff"; \
	  echo "  $(WEFT) logs $$run --diff"; \
	  echo "  git -C $(DEMO_DIR)/scratch-release log --oneline weft/run/$$run"; \
	  echo "  $(WEFT) rewind $$run --list    # its checkpoints, to rewind or fork from"
	@echo
	@home="$${WEFT_HOME:-$${XDG_DATA_HOME:-$$HOME/.local/share}/weft}"; \
	if [ -n "$${ANTHROPIC_API_KEY:-}$${OPENAI_API_KEY:-}$${GEMINI_API_KEY:-}" ] || \
	   grep -qs '^\[providers\.' "$$home/settings.toml"; then \
	  echo "==> running examples/summarize-repo.fabro in the daemon (a prompt node: calls your model)"; \
	  if $(WEFT) run $(CURDIR)/examples/summarize-repo.fabro --no-checkpoint --json > $(DEMO_DIR)/llm-conclusion.json; then \
	    run=$$(sed -n 's/.*"run_id":"\([^"]*\)".*/\1/p' $(DEMO_DIR)/llm-conclusion.json); \
	    echo "The model's answer, with its tokens and cost: $(WEFT) logs $$run summarize"; \
	  else \
	    echo "The LLM example did not succeed (a wrong key or an unreachable server?): $(WEFT) logs <run> shows why"; \
	  fi; \
	  echo; \
	  echo "==> running examples/fix-failing-test.fabro (an agent stage: your model reads, edits and tests code)"; \
	  echo "    in a scratch repository, $(DEMO_DIR)/scratch-slug, copied from examples/scratch-slug"; \
	  rm -rf $(DEMO_DIR)/scratch-slug && cp -r examples/scratch-slug $(DEMO_DIR)/scratch-slug && \
	  ( cd $(DEMO_DIR)/scratch-slug && git init -q && git add -A && \
	    git -c user.name=weft -c user.email=weft@localhost commit -qm "scratch: a failing test" ) >/dev/null 2>&1 || true; \
	  if $(WEFT) run $(CURDIR)/examples/fix-failing-test.fabro --work-dir $(DEMO_DIR)/scratch-slug --json > $(DEMO_DIR)/agent-conclusion.json; then \
	    run=$$(sed -n 's/.*"run_id":"\([^"]*\)".*/\1/p' $(DEMO_DIR)/agent-conclusion.json); \
	    echo "The agent fixed the test. Its transcript: $(WEFT) logs $$run fix"; \
	    echo "What it changed (on the run's branch; the scratch checkout is untouched): $(WEFT) logs $$run --diff"; \
	  else \
	    echo "The agent example did not succeed; $(WEFT) logs <run> fix shows its transcript"; \
	  fi; \
	else \
	  echo "==> skipping examples/summarize-repo.fabro and examples/fix-failing-test.fabro: no language model is configured"; \
	  echo "    To run it, set one of ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY,"; \
	  echo "    or point Weft at a local server (Ollama, vLLM, ...) in $$home/settings.toml:"; \
	  echo "        [providers.ollama]"; \
	  echo "        base_url = \"http://localhost:11434/v1\""; \
	  echo "        models = [\"llama3.1\"]"; \
	  echo "    then: make demo   (or: $(WEFT) run examples/summarize-repo.fabro --model llama3.1)"; \
	  echo "    Check the setup with: $(WEFT) model test"; \
	fi
	@if [ -n "$${DISPLAY:-}$${WAYLAND_DISPLAY:-}" ]; then \
	  $(MAKE) --no-print-directory build-app; \
	  echo "==> opening the Weft app"; \
	  ( $(APP) >/dev/null 2>&1 & ); \
	fi

## ---- testing ----------------------------------------------------------------

test: deps ui lint test-rust test-ui test-app test-package fuzz-build
	@# Tests run Weft in temp dirs only: a run whose work dir was inside this
	@# checkout would have left its git checkpoint branch here.
	@leaked=$$(git branch --list 'weft/*' 2>/dev/null); if [ -n "$$leaked" ]; then \
	  echo "tests left Weft run branches in this checkout (a test ran Weft inside the repository):"; \
	  echo "$$leaked"; exit 1; fi
	@echo "==> all tests passed"

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# The end-to-end tests in tests/ run the real binaries, so build them first.
# WEFT_REQUIRE_ADAPTERS=1: a test of a real ACP adapter fails, rather than
# skips, when the adapter is not installed.
test-rust: deps-cargo deps-adapters
	$(CARGO) build --workspace --bins
	WEFT_REQUIRE_ADAPTERS=1 $(CARGO) nextest run --workspace --no-fail-fast

test-ui: deps-npm
	cd ui && npm test --silent
	cd ui && npm run test:browser --silent

# The real app in a real WebKitGTK window under Xvfb, driven by WebDriver.
test-app: ui
	@# The e2e test runs weft and weftd from beside the app: build them together.
	$(CARGO) build --workspace --bins
	@# WebKit's accessibility bus writes under XDG_CACHE_HOME: keep it out of $$HOME.
	@# e2e.py rewrites the screenshots in docs/screenshots/ (embedded in docs/app.md).
	cache=$$(mktemp -d); trap 'rm -rf "$$cache"' EXIT; \
	XDG_CACHE_HOME=$$cache $(XVFB) python3 tests/app/smoke.py $(APP) $(CARGO_TARGET_DIR)/app-smoke.png; \
	XDG_CACHE_HOME=$$cache $(XVFB) python3 tests/app/deeplink.py $(APP); \
	XDG_CACHE_HOME=$$cache $(XVFB) python3 tests/app/e2e.py $(APP) docs/screenshots && \
	XDG_CACHE_HOME=$$cache $(XVFB) python3 tests/app/tray.py $(APP)

# The Debian package, built from the debug binaries the tests already built
# (`make package` builds release ones) and checked unpacked, never installed:
# metadata, every path, the unit's weftd, the app under Xvfb
# (tests/app/package.py).
test-package: ui
	$(CARGO) build --workspace --bins
	deb=$$(packaging/deb/build.sh --fast $(CARGO_TARGET_DIR)/debug $(CARGO_TARGET_DIR)/package-test | tail -n 1); \
	cache=$$(mktemp -d); trap 'rm -rf "$$cache"' EXIT; \
	XDG_CACHE_HOME=$$cache $(XVFB) python3 tests/app/package.py "$$deb"

# The files generated from the Rust side that the tests check
# (docs/app.md): the TypeScript wire types and the UI's recorded run
# history. Each is a filter on its crate's one integration-test binary.
regenerate: deps-cargo
	WEFT_UPDATE_WIRE=1 $(CARGO) test -p weft --test it wire_types
	$(CARGO) build -p weft --bins
	WEFT_UPDATE_FIXTURES=1 $(CARGO) nextest run -p weft-tests --test it ui_fixtures

# Fuzz targets are built, not run, in CI (running needs nightly + cargo-fuzz).
fuzz-build:
	$(CARGO) build --manifest-path fuzz/Cargo.toml --bins

bench:
	$(CARGO) bench -p weft --bench parse
	$(CARGO) bench -p weft --bench engine
	$(CARGO) bench -p weft --bench daemon
	$(CARGO) bench -p weft --bench app
	$(CARGO) bench -p weft --bench hostile

# The peers' rows of the engine bench (docs/performance.md): scud-cli, the
# like-for-like Rust Attractor runner, on the same 1,000-stage chain beside
# `weft run`, alternating. scud-cli is installed once into the target dir
# (about 10 minutes of compiling). Not part of `make test`.
SCUD := $(CARGO_TARGET_DIR)/peers/scud/bin/scud
.PHONY: bench-peers
bench-peers: deps-cargo
	@test -x $(SCUD) || CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/peers/build \
	  $(CARGO) install scud-cli --version 1.67.0 --locked --root $(CARGO_TARGET_DIR)/peers/scud
	$(CARGO) bench -p weft --bench engine -- --daemon --scud $(SCUD)

# The real app window on the app bench's large home (10,000 runs, 1,000,000
# events): start to first run row, opening the 300-node run, memory after a
# minute of browsing (docs/performance.md). Release build; prints Markdown
# tables and asserts no timing. Not part of `make test`.
.PHONY: bench-app-window
bench-app-window: ui
	@test -f $(CARGO_TARGET_DIR)/tmp/app-bench-home/bench-format.txt || \
	  $(CARGO) bench -p weft --bench app -- --reps 1
	$(CARGO) build --release -p weft-desktop --bin weft-desktop --example floor
	cache=$$(mktemp -d); trap 'rm -rf "$$cache"' EXIT; \
	XDG_CACHE_HOME=$$cache $(XVFB) python3 tests/app/perf.py \
	  $(CARGO_TARGET_DIR)/release/weft-desktop $(CARGO_TARGET_DIR)/tmp/app-bench-home \
	  --floor $(CARGO_TARGET_DIR)/release/examples/floor

clean:
	$(CARGO) clean
	rm -rf ui/dist ui/node_modules tests/adapters/node_modules
