# memo-peer: every target a newcomer or CI needs. `make demo` and `make test` work on a
# fresh Debian machine as root: each installs its own dependencies first.
SWIFT ?= swift
PREFIX ?= /usr/local
RELEASE_BIN := .build/release/memo-peer
# Release builds link the Swift runtime statically (a third less start-up time for every
# command) with lld (GNU ld warns about mktemp inside the static Foundation).
RELEASE_FLAGS := -c release --static-swift-stdlib -Xswiftc -use-ld=lld

.PHONY: deps build test lint format demo bench install clean

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

demo: build
	scripts/demo.sh $(RELEASE_BIN)

bench: deps
	$(SWIFT) build $(RELEASE_FLAGS) --product memo-peer
	$(SWIFT) build $(RELEASE_FLAGS) --product memo-peer-bench
	.build/release/memo-peer-bench --memo-peer $(CURDIR)/$(RELEASE_BIN) --lab $(CURDIR)/scripts/lab

install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(RELEASE_BIN) $(DESTDIR)$(PREFIX)/bin/memo-peer
	install -D -m 0644 Services/memo-peer.service $(DESTDIR)$(PREFIX)/lib/systemd/system/memo-peer.service
	install -D -m 0644 Services/memo-peer-user.service $(DESTDIR)$(PREFIX)/lib/systemd/user/memo-peer.service
	install -D -m 0644 Services/sysusers.d/memo-peer.conf $(DESTDIR)$(PREFIX)/lib/sysusers.d/memo-peer.conf
	install -D -m 0644 Services/tmpfiles.d/memo-peer.conf $(DESTDIR)$(PREFIX)/lib/tmpfiles.d/memo-peer.conf
	install -D -m 0644 Services/README.md $(DESTDIR)$(PREFIX)/share/doc/memo-peer/README.md

clean:
	rm -rf .build
