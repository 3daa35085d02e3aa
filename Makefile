# memo-peer: every target a newcomer or CI needs. `make demo` and `make test` work on a
# fresh Debian machine as root: each installs its own dependencies first.
SWIFT ?= swift
PREFIX ?= /usr/local
RELEASE_BIN := .build/release/memo-peer

.PHONY: deps build test lint format demo bench install clean

deps:
	@scripts/deps.sh

build: deps
	$(SWIFT) build -c release --product memo-peer

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
	$(SWIFT) build -c release --product memo-peer --product memo-peer-bench
	.build/release/memo-peer-bench --memo-peer $(RELEASE_BIN)

install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(RELEASE_BIN) $(DESTDIR)$(PREFIX)/bin/memo-peer

clean:
	rm -rf .build
