#!/usr/bin/env bash
# Installs a memo-peer .deb with dpkg into a throwaway root, checks it there, purges it and
# checks that nothing of it is left. The throwaway root is an overlay of this machine's
# root file system with a tmpfs on top, in a private mount namespace: every change (the
# package, the dpkg database, the memo-peer user) goes to the tmpfs and vanishes with it.
# A PID namespace of its own lets the check see every process the install could start.
# Nothing is started: the package's scripts start nothing, and a policy-rc.d in the
# throwaway root refuses any start. Needs root. Usage: scripts/deb-test.sh PACKAGE.deb
set -euo pipefail
deb=$(realpath "$1")
[[ $(id -u) -eq 0 ]] || { echo "deb-test: needs root (unshare, mount, chroot)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
inside=$(dirname "$(realpath "$0")")/deb-test-inside.sh

unshare --mount --propagation private --pid --fork -- bash -s "$deb" "$work" "$inside" <<'INNER'
set -euo pipefail
deb=$1
work=$2
inside=$3
mkdir -p "$work/lower" "$work/layer" "$work/root"
mount --bind / "$work/lower"          # the root file system alone, without /proc, /tmp, ...
mount -t tmpfs -o mode=0755 throwaway "$work/layer"
mkdir -p "$work/layer/upper" "$work/layer/work"
mount -t overlay overlay -o "lowerdir=$work/lower,upperdir=$work/layer/upper,workdir=$work/layer/work" "$work/root"
root=$work/root
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount -t tmpfs tmpfs "$root/tmp"
mount -t tmpfs tmpfs "$root/run"
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
cp "$deb" "$root/tmp/package.deb"
cp "$inside" "$root/tmp/inside.sh"
chroot "$root" /bin/bash /tmp/inside.sh

# What the install and purge changed, as seen from the overlay's upper layer. Allowed:
# dpkg's own records and logs, and the system user in the account files (Debian keeps
# system users after a purge).
cd "$work/layer/upper"
# The user the package made is here, not on the host: the changes did land in the layer.
grep -q '^memo-peer:' ./etc/passwd || { echo "deb-test: FAIL: no change reached the throwaway layer"; exit 1; }
left=$(find . \( -path ./tmp -o -path ./run -o -path ./proc -o -path ./dev -o -path ./var/lib/dpkg \
  -o -path ./var/log -o -path ./var/cache \) -prune -o ! -type d -print | sort \
  | grep -v -E '^\./etc/(passwd|group|shadow|gshadow|subuid|subgid)-?$|^\./etc/\.pwd\.lock$|^\./usr/sbin/policy-rc\.d$' \
  || true)
if [[ -n $left ]]; then
  echo "deb-test: FAIL: left after purge:"
  echo "$left"
  exit 1
fi
echo "deb-test: nothing left outside dpkg's records and the account files"
INNER
echo "deb-test: ok"
