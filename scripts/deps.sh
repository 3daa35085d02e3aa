#!/usr/bin/env bash
# Installs the Debian packages memo-peer needs, only when one is missing. Idempotent, and
# silent when everything is already there.
set -euo pipefail

packages=(
  libssl-dev             # OpenSSL: AES-256-GCM, scrypt, TLS 1.3, Ed25519 signatures
  libsodium-dev          # libsodium: sealed boxes of notebook keys to a device's key (the .deb needs libsodium23)
  openssl                # `openssl speed`, the benchmark's baseline
  time                   # GNU time: the bench measures a command's own peak RSS with `time -f %M`
  libsqlite3-dev         # the memo store
  libyaml-dev            # libyaml: Markdown front matter for `import --markdown` (the .deb needs libyaml-0-2)
  libavahi-compat-libdnssd-dev  # dns_sd.h over Avahi
  libavahi-client-dev    # avahi-client: `doctor` asks the daemon for its version over D-Bus
  libdbus-1-dev          # libdbus: browse and resolve speak avahi-daemon's D-Bus API directly
  pkg-config             # how SwiftPM finds the libraries above
  util-linux             # unshare/mount for the full-disk test and the lab
  bsdutils               # `script`: a pseudo-terminal for the consent-prompt lab test
  iproute2               # `ip netns`: the virtual home lab
  dbus                   # each lab host's own system bus
  avahi-daemon           # each lab host's mDNS daemon (never started in the root namespace)
  avahi-utils            # avahi-browse: the lab's independent client
  systemd                # systemd-analyze verify for the units in Services/
  keyutils               # keyctl: new keyring sessions stand for a reboot in the protection tests
  tmux                   # a real terminal for the privacy-screen tests (capture-pane)
  tcpdump                # the canary audit captures the lab's traffic
  nftables               # `scripts/lab multicast off`: the lab's switch filters mDNS, as many homes do
  syncthing              # bench/syncthing/baseline.sh: the file-sync baseline (lab hosts only)
  groff                  # the man page test: `groff -man -ww -z` must find no warning
  bash-completion        # the bash completion test drives the real completion framework
  zsh                    # the zsh completion script is checked with `zsh -n`
  fish                   # the fish completions are asked for with `fish -c 'complete -C …'`
  libsystemd-dev         # sd_notify: READY/STATUS/WATCHDOG/RELOADING/STOPPING for Type=notify units
  dpkg-dev               # `make deb`: dpkg-shlibdeps computes Depends from the linked libraries
  gcc                    # `make deb` links scripts/lazy-depends.c; the bench's C baseline
  lintian                # `make package` and `make deb-check`: no lintian error allowed
  python3-dbusmock       # the desktop-notification test: a fake org.freedesktop.Notifications
  xvfb                   # xvfb-run: an X server for the clipboard test
  xclip                  # the X11 clipboard tool `show --copy` uses (and the test reads back with)
  pandoc                 # the Markdown export test: every exported file must parse
  libmicrohttpd-dev      # GNU libmicrohttpd: the HTTP server of `memo-peer web` (loopback only)
  chromium               # the web page's browser tests (headless)
  chromium-driver        # WebDriver for chromium, driven by selenium
  python3-selenium       # the browser test (Tests/browser/web_page_test.py), run by WebBrowserTests
  fonts-dejavu-core      # legible text in the screenshots the browser tests write
  curl                   # the web server's security tests (raw requests, wrong Host, big bodies)
  eslint                 # `make lint` checks the web page's script (Sources/MemoWeb/Assets/*.js)
)
names=()
for entry in "${packages[@]}"; do names+=("${entry%% *}"); done

missing=()
for name in "${names[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$name" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$name")
done

if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "memo-peer needs these Debian packages: ${missing[*]}" >&2
    echo "run as root: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Package scripts must not start avahi-daemon (or anything) in the root namespace, whose
  # network is shared: a policy-rc.d that refuses every start, only for this install.
  guard=""
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    guard=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' >"$guard"
    chmod 755 "$guard"
  fi
  avahi_before=$(avahi-daemon --check 2>/dev/null && echo running || echo stopped)
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  [[ -n $guard ]] && rm -f "$guard"
  if [[ $avahi_before == stopped ]] && avahi-daemon --check 2>/dev/null; then
    avahi-daemon --kill || true  # started by a package script despite the guard: undo it
  fi
fi

if ! command -v swift >/dev/null 2>&1; then
  echo "memo-peer needs the Swift 6.3 toolchain on PATH (expected at /opt/swift/usr/bin)" >&2
  exit 1
fi
