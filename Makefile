# memo-peer: every target a newcomer or CI needs. `make demo` and `make test` work on a
# fresh Debian machine as root: each installs its own dependencies first.
SWIFT ?= swift
PREFIX ?= /usr/local
RELEASE_BIN := .build/release/memo-peer
# Release builds link the Swift runtime statically (a third less start-up time for every
# command) with lld (GNU ld warns about mktemp inside the static Foundation).
RELEASE_FLAGS := -c release --static-swift-stdlib -Xswiftc -use-ld=lld

.PHONY: deps build build-tests test check model lab package lint format demo bench fuzz install deb \
  deb-check clean
# One target at a time even under `make -j`: SwiftPM builds in parallel itself, and the test
# tiers are timed one after the other.
.NOTPARALLEL:

deps:
	@scripts/deps.sh

build: deps
	$(SWIFT) build $(RELEASE_FLAGS) --product memo-peer

# The web page's script is checked by Debian's eslint 6 with the committed .eslintrc.json
# alone (`--no-eslintrc`: no config of the user's or of a parent folder), and any finding,
# warnings too, fails. NODE_PATH: Debian's eslint keeps its modules in /usr/share/nodejs,
# which only Debian's own node searches by itself. `-f unix`: the default formatter needs
# node-chalk, which is only recommended.
ESLINT := NODE_PATH=/usr/share/nodejs eslint --no-eslintrc -c .eslintrc.json -f unix --max-warnings 0

lint: deps
	$(SWIFT) format lint --strict --recursive --parallel Package.swift Sources Tests bench
	$(ESLINT) Sources/MemoWeb/Assets/*.js
	python3 scripts/check-protocol-anchors.py
	scripts/check-foundation-imports.sh

format:
	$(SWIFT) format --in-place --recursive --parallel Package.swift Sources Tests bench

# The test tiers (DESIGN.md, "Test tiers"):
#   make check    for every change: lint, the debug build with the tests, then every fast
#                 test in parallel and the model tests at small run counts; prints the
#                 time its tests took (under 3 minutes on the 2-core build machines)
#   make model    the model tests (Tests/*/*ModelTests) at full run counts
#   make lab      the virtual home lab (Tests/LabTests), one test at a time; needs root
#   make package  the Debian package (DebianPackageTests: what deb-check checks)
#   make test     all four, one after the other: the README's test command; .ci/run runs
#                 them as timed steps
# Each tier builds the tests first (a no-op when they are built) and prints "TIER: tests N s".
# XCTest only (--disable-swift-testing): the package has no Swift Testing tests, and its
# empty run would print the last line. Under CI=true a test that cannot get the lab, root
# or a tool it needs fails rather than skips.
TEST := $(SWIFT) test --skip-build --disable-swift-testing
LAB_TESTS := ^LabTests\.
PACKAGE_TESTS := ^MemoCLITests\.DebianPackageTests
MODEL_TESTS := ^(MemoStoreTests\.(SyncModelTests|NotebookModelTests|SyncHostileModelTests|MemberAbuseModelTests)|MemoProtocolTests\.MembershipModelTests|MemoNodeTests\.LiveSyncModelTests)

test: check model lab package demo

build-tests: deps
	$(SWIFT) build --build-tests

# Every test outside the lab and the package, in parallel (one process per test); the model
# tests at the small run counts they define (MEMO_PEER_MODEL_RUNS is read by the tests only).
# One worker more than the cores: the slowest tests mostly wait (a browser, a session's idle
# lifetime, another user's slow connections), and with one worker per core the cores were
# busy 54% of the time (197 CPU-seconds in 182 s here; 135 s with a worker more).
CHECK_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
check: lint build-tests
	scripts/timed.sh "check: tests" env MEMO_PEER_MODEL_RUNS=small \
	  $(TEST) --parallel --num-workers $(CHECK_WORKERS) --skip '$(LAB_TESTS)' --skip '$(PACKAGE_TESTS)'

# The model tests side by side, at full run counts whatever the environment says.
model: build-tests
	scripts/timed.sh "model: tests" env -u MEMO_PEER_MODEL_RUNS $(TEST) --parallel --filter '$(MODEL_TESTS)'

# One at a time: the lab tests share one lab (MEMO_PEER_LAB_TEST_DIR and _PREFIX name it).
lab: build-tests
	scripts/timed.sh "lab: tests" $(TEST) --filter '$(LAB_TESTS)'

package: build-tests
	scripts/timed.sh "package: tests" $(TEST) --filter '$(PACKAGE_TESTS)'

# Every fuzz target (Tests/Fuzz) for FUZZ_SECONDS each, one after the other; a crash fails.
FUZZ_SECONDS ?= 60
fuzz: deps
	SWIFT=$(SWIFT) scripts/fuzz.sh $(FUZZ_SECONDS)

demo: build
	scripts/demo.sh $(RELEASE_BIN)

bench: deps
	$(SWIFT) build $(RELEASE_FLAGS) --product memo-peer
	$(SWIFT) build $(RELEASE_FLAGS) --product memo-peer-bench
	.build/release/memo-peer-bench --memo-peer $(CURDIR)/$(RELEASE_BIN) --lab $(CURDIR)/scripts/lab

install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(RELEASE_BIN) $(DESTDIR)$(PREFIX)/bin/memo-peer
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/bash-completion/completions \
	  $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	$(RELEASE_BIN) help --man | gzip -9n > $(DESTDIR)$(PREFIX)/share/man/man1/memo-peer.1.gz
	$(RELEASE_BIN) completions bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/memo-peer
	$(RELEASE_BIN) completions zsh > $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_memo-peer
	$(RELEASE_BIN) completions fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/memo-peer.fish
	install -D -m 0644 Services/memo-peer.service $(DESTDIR)$(PREFIX)/lib/systemd/system/memo-peer.service
	install -D -m 0644 Services/memo-peer-user.service $(DESTDIR)$(PREFIX)/lib/systemd/user/memo-peer.service
	install -D -m 0644 Services/sysusers.d/memo-peer.conf $(DESTDIR)$(PREFIX)/lib/sysusers.d/memo-peer.conf
	install -D -m 0644 Services/tmpfiles.d/memo-peer.conf $(DESTDIR)$(PREFIX)/lib/tmpfiles.d/memo-peer.conf
	install -D -m 0644 Services/README.md $(DESTDIR)$(PREFIX)/share/doc/memo-peer/README.md

# The Debian package, dist/memo-peer_<version>_amd64.deb: stripped, reproducible, Depends
# from dpkg-shlibdeps (scripts/deb.sh).
deb: deps
	SWIFT=$(SWIFT) scripts/deb.sh dist

# The package checks of `make package` (DebianPackageTests) without the test suite, leaving
# the package in dist/: two builds in two folders are byte-identical, lintian finds no
# error, and it installs, verifies and purges cleanly in a throwaway root (needs root).
deb-check: deps
	SWIFT=$(SWIFT) scripts/deb-repro.sh dist
	lintian --fail-on error --tag-display-limit 0 dist/memo-peer_*_*.deb
	scripts/deb-test.sh dist/memo-peer_*_*.deb

clean:
	rm -rf .build .build-deb .build-fuzz dist
