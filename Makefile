# memo-peer: every target a newcomer or CI needs. `make demo` and `make test` work on a
# fresh Debian machine as root: each installs its own dependencies first.
SWIFT ?= swift
PREFIX ?= /usr/local
RELEASE_BIN := .build/release/memo-peer
# Release builds link the Swift runtime statically (a third less start-up time for every
# command) with lld (GNU ld warns about mktemp inside the static Foundation).
RELEASE_FLAGS := -c release --static-swift-stdlib -Xswiftc -use-ld=lld

.PHONY: deps build test lint format demo bench fuzz install deb deb-check clean

deps:
	@scripts/deps.sh

build: deps
	$(SWIFT) build $(RELEASE_FLAGS) --product memo-peer

lint: deps
	$(SWIFT) format lint --strict --recursive --parallel Package.swift Sources Tests bench

format:
	$(SWIFT) format --in-place --recursive --parallel Package.swift Sources Tests bench

# XCTest only (--disable-swift-testing), so the closing line is the real count.
test: deps lint
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --disable-swift-testing

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
	scripts/deb.sh dist

# What CI checks of the package (also run by DebianPackageTests in `make test`): two builds
# in two folders are byte-identical, lintian finds no error, and it installs, verifies and
# purges cleanly in a throwaway root (needs root).
deb-check: deps
	scripts/deb-repro.sh dist
	lintian --fail-on error --tag-display-limit 0 dist/memo-peer_*_*.deb
	scripts/deb-test.sh dist/memo-peer_*_*.deb

clean:
	rm -rf .build .build-deb .build-fuzz dist
