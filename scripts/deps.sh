#!/usr/bin/env bash
# Installs the Debian packages memo-peer needs, only when one is missing. Idempotent, and
# silent when everything is already there.
set -euo pipefail

packages=(
  libssl-dev             # OpenSSL: AES-256-GCM, scrypt, TLS 1.3
  openssl                # `openssl speed`, the benchmark's baseline
  libsqlite3-dev         # the memo store
  libavahi-compat-libdnssd-dev  # dns_sd.h over Avahi
  pkg-config             # how SwiftPM finds the libraries above
  util-linux             # unshare/mount for the full-disk test
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
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v swift >/dev/null 2>&1; then
  echo "memo-peer needs the Swift 6.3 toolchain on PATH (expected at /opt/swift/usr/bin)" >&2
  exit 1
fi
