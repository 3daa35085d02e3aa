#!/usr/bin/env bash
# Builds dist/memo-peer_<version>_amd64.deb with dpkg-deb, reproducibly: the same commit
# built in any folder gives the same bytes (SOURCE_DATE_EPOCH from the commit, source paths
# mapped to /usr/src/memo-peer, a stripped binary, fixed modes and times, dpkg-deb's sorted
# tar). Depends come from the linked libraries (dpkg-shlibdeps). Nothing is installed or
# started here. Usage: scripts/deb.sh [OUTPUT-DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
out=${1:-$src/dist}
swift=${SWIFT:-swift}

version=$(sed -n 's/.*static let version = "\(.*\)".*/\1/p' Sources/MemoCLI/MemoPeerCLI.swift)
[[ -n $version ]] || { echo "deb: no version in Sources/MemoCLI/MemoPeerCLI.swift" >&2; exit 1; }
arch=$(dpkg --print-architecture)
if [[ -z ${SOURCE_DATE_EPOCH:-} ]]; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || stat -c %Y Package.swift)
fi
export SOURCE_DATE_EPOCH TZ=UTC LC_ALL=C.UTF-8
umask 022

# The release build of `make build` (static Swift runtime, lld), from a clean copy of the
# tree in one fixed folder, with every source path rewritten as well. The fixed folder: the
# Swift compiler puts a hash of each module's compile into the object (.swift_modhash), and
# that hash follows the folder the sources are in, which no prefix map rewrites; two
# checkouts at two paths made two binaries. The copy holds the tracked and the new (not
# ignored) files, as scripts/deb-repro.sh's do; one build at a time takes the folder.
map=/usr/src/memo-peer
fixed=${TMPDIR:-/tmp}/memo-peer-deb-build
exec 9>"$fixed.lock"
flock 9
rm -rf "$fixed"
mkdir -p "$fixed/memo-peer"
# The copy and its build (about a gigabyte) go when this script ends, however it ends.
trap 'rm -rf "$fixed"' EXIT
if [[ $(git rev-parse --show-toplevel 2>/dev/null) == "$src" ]]; then
  git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -
else
  # Not a checkout (deb-repro's copies): everything but build output.
  tar --sort=name --exclude=./.git --exclude=./.build --exclude=./.build-deb --exclude=./dist -cf - .
fi | tar -xf - -C "$fixed/memo-peer"
build=$fixed/memo-peer/.build-deb
(cd "$fixed/memo-peer" && "$swift" build -c release --static-swift-stdlib -Xswiftc -use-ld=lld \
  --build-path "$build" -Xswiftc -file-prefix-map -Xswiftc "$fixed/memo-peer=$map" \
  -Xswiftc -debug-prefix-map -Xswiftc "$fixed/memo-peer=$map" -Xcc "-ffile-prefix-map=$fixed/memo-peer=$map" \
  -Xcc -D_FORTIFY_SOURCE=2 -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now -Xlinker --build-id=sha1 \
  --product memo-peer >&2)
binary=$build/release/memo-peer

stage=$(mktemp -d)
trap 'rm -rf "$stage" "$fixed"' EXIT
root=$stage/root
install -d "$root/DEBIAN" "$root/usr/bin" "$root/lib/systemd/system" "$root/usr/lib/systemd/user" \
  "$root/usr/lib/sysusers.d" "$root/usr/lib/tmpfiles.d" "$root/usr/share/man/man1" \
  "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
  "$root/usr/share/fish/vendor_completions.d" "$root/usr/share/doc/memo-peer"

# The binary, stripped of symbols and debug sections (--gc-sections already dropped dead
# code at link time), and of .swift_modhash: hashes of the compiled modules for debuggers,
# which depend on the compiler's command line and so on the build folder. The linker's
# build ID hashed those too; it is replaced by the SHA-1 of the stripped file (with the ID
# zeroed), so the same sources give the same ID.
install -m 0755 "$binary" "$root/usr/bin/memo-peer"
# The toolchain's llvm-objcopy: GNU strip drops the GNU_RELRO segment of lld's output.
objcopy=$(dirname "$(command -v "$swift")")/llvm-objcopy
[[ -x $objcopy ]] || objcopy=llvm-objcopy
"$objcopy" --strip-all --remove-section=.comment --remove-section=.swift_modhash "$root/usr/bin/memo-peer"
note() { printf '\x04\x00\x00\x00\x14\x00\x00\x00\x03\x00\x00\x00GNU\x00'; printf "$(sed 's/../\\x&/g' <<<"$1")"; }
note 0000000000000000000000000000000000000000 >"$stage/build-id"
"$objcopy" --update-section ".note.gnu.build-id=$stage/build-id" "$root/usr/bin/memo-peer"
note "$(sha1sum "$root/usr/bin/memo-peer" | cut -c1-40)" >"$stage/build-id"
"$objcopy" --update-section ".note.gnu.build-id=$stage/build-id" "$root/usr/bin/memo-peer"
before=$(stat -c %s "$binary")
after=$(stat -c %s "$root/usr/bin/memo-peer")
echo "deb: memo-peer binary $before bytes before strip, $after after" >&2
if strings -a "$root/usr/bin/memo-peer" | grep -qF "$src"; then
  echo "deb: the binary still holds the build folder $src" >&2
  exit 1
fi

# Units, pointing at /usr/bin; sysusers and tmpfiles entries.
units() { sed -e 's|/usr/local/bin/memo-peer|/usr/bin/memo-peer|g' \
  -e 's|/usr/local/share/doc/memo-peer|/usr/share/doc/memo-peer|g' "$1"; }
units Services/memo-peer.service >"$root/lib/systemd/system/memo-peer.service"
units Services/memo-peer-user.service >"$root/usr/lib/systemd/user/memo-peer.service"
install -m 0644 Services/sysusers.d/memo-peer.conf "$root/usr/lib/sysusers.d/memo-peer.conf"
install -m 0644 Services/tmpfiles.d/memo-peer.conf "$root/usr/lib/tmpfiles.d/memo-peer.conf"

# The man page and completions, written by the binary from its command table.
"$binary" help --man | gzip -9n >"$root/usr/share/man/man1/memo-peer.1.gz"
"$binary" completions bash >"$root/usr/share/bash-completion/completions/memo-peer"
"$binary" completions zsh >"$root/usr/share/zsh/vendor-completions/_memo-peer"
"$binary" completions fish >"$root/usr/share/fish/vendor_completions.d/memo-peer.fish"

# Documentation: compressed above 4 KiB, as dh_compress does.
doc=$root/usr/share/doc/memo-peer
install -m 0644 README.md "$doc/README.md"
install -m 0644 Services/README.md "$doc/README.service.md"
for file in CLI.md PRIVACY.md FORMATS.md PROTOCOL.md; do install -m 0644 "docs/$file" "$doc/$file"; done
install -m 0644 CHANGELOG.md "$doc/CHANGELOG.md"
for file in "$doc"/*.md; do
  if (($(stat -c %s "$file") > 4096)); then gzip -9n "$file"; fi
done
# The copyright file, machine-readable (DEP-5): Apache-2.0 (LICENSE in the source), whose
# text Debian ships in /usr/share/common-licenses, so the file points there.
cat >"$doc/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: memo-peer
Upstream-Contact: the memo-peer maintainers
Comment: memo-peer's own code includes no third-party code. The binary links
 statically, from the Swift toolchain, the Swift runtime and standard library,
 libdispatch and FoundationEssentials (swift-foundation, with its
 _FoundationCShims and _FoundationCollections), all under the Apache License
 2.0 with the Swift Runtime Library Exception (SPDX: Apache-2.0 WITH
 Swift-exception). It links neither full Foundation nor ICU
 (swift-foundation-icu). Every other library it uses, libstdc++ included, is
 Debian's and linked dynamically (see Depends).

Files: *
Copyright: 2026 the memo-peer authors
License: Apache-2.0

License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License"); you may not
 use this file except in compliance with the License. You may obtain a copy of
 the License at
 .
 https://www.apache.org/licenses/LICENSE-2.0
 .
 Unless required by applicable law or agreed to in writing, software
 distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
 WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
 License for the specific language governing permissions and limitations under
 the License.
 .
 On Debian systems, the complete text of the Apache License, Version 2.0 can be
 found in "/usr/share/common-licenses/Apache-2.0".
EOF
date_r=$(date -R -u -d "@$SOURCE_DATE_EPOCH")
# Debian Policy 5.6.2 wants the maintainer's name and an RFC 822 address. The project has
# no mail address, so the name is the project's maintainers and the domain is in .invalid,
# which RFC 2606 and RFC 6761 reserve for names that never resolve: it says that no mail
# reaches anyone there (.example is for examples in documentation). lintian's
# bogus-mail-host asks only for a well-formed domain of two labels or more, so it passes.
maintainer="memo-peer maintainers <maintainers@memo-peer.invalid>"
printf 'memo-peer (%s) unstable; urgency=medium\n\n  * Release %s; see CHANGELOG.md.gz.\n\n -- %s  %s\n' \
  "$version" "$version" "$maintainer" "$date_r" | gzip -9n >"$doc/changelog.gz"

# Maintainer scripts: account and state directory only. Nothing is enabled or started
# (the daemon advertises only once an administrator records consent).
cat >"$root/DEBIAN/postinst" <<'EOF'
#!/bin/sh
# memo-peer: the memo-peer system user and /var/lib/memo-peer, when systemd's tools exist.
# Nothing is enabled or started: see /usr/share/doc/memo-peer/README.service.md.
set -e
if [ "$1" = "configure" ]; then
	if command -v systemd-sysusers >/dev/null 2>&1; then
		systemd-sysusers /usr/lib/sysusers.d/memo-peer.conf
	fi
	if command -v systemd-tmpfiles >/dev/null 2>&1; then
		systemd-tmpfiles --create /usr/lib/tmpfiles.d/memo-peer.conf
	fi
	if [ -d /run/systemd/system ]; then
		systemctl --system daemon-reload >/dev/null || true
	fi
fi
exit 0
EOF
cat >"$root/DEBIAN/postrm" <<'EOF'
#!/bin/sh
# memo-peer: purge removes the daemon's state (/var/lib/memo-peer, its memos and keys).
# The memo-peer system user stays, as Debian does for system users.
set -e
if [ "$1" = "purge" ]; then
	rm -rf /var/lib/memo-peer
fi
if [ -d /run/systemd/system ]; then
	systemctl --system daemon-reload >/dev/null || true
fi
exit 0
EOF
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/postrm"

# Depends from the libraries the binary links (dpkg-shlibdeps reads debian/control), and
# from those it loads only in the commands that use them (Sources/CLazyLibraries: libdbus,
# Avahi's dns_sd and avahi-client, libsystemd, libmicrohttpd), which have no NEEDED entry:
# scripts/lazy-depends.c is linked against them and takes the address of every function
# memo-peer resolves in them, so dpkg-shlibdeps gives their packages at the versions those
# functions need. The probe is built here and read, never installed.
mkdir -p "$stage/debian"
printf 'Source: memo-peer\n\nPackage: memo-peer\nArchitecture: any\n' >"$stage/debian/control"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
cc -o "$stage/lazy-depends" scripts/lazy-depends.c -ISources/CLazyLibraries -I/usr/include/dbus-1.0 \
  -I"/usr/lib/$multiarch/dbus-1.0/include" -Wl,--no-as-needed \
  -ldbus-1 -ldns_sd -lavahi-client -lavahi-common -lsystemd -lmicrohttpd
depends=$(cd "$stage" && dpkg-shlibdeps -O -e root/usr/bin/memo-peer -e lazy-depends 2>/dev/null |
  sed -n 's/^shlibs:Depends=//p')
[[ -n $depends ]] || { echo "deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
# Every library memo-peer may load is in Depends (the probe and the stubs must not drift).
packages=" $(sed 's/ ([^)]*)//g; s/,/ /g' <<<"$depends") "
for soname in $(grep -ho '"lib[^"]*\.so\.[0-9]*"' Sources/CLazyLibraries/lazy_*.c | tr -d '"'); do
  package=$(dpkg -S "$multiarch/$soname" 2>/dev/null | head -1 | cut -d: -f1)
  [[ -n $package && $packages == *" $package "* ]] ||
    { echo "deb: $soname (${package:-no package}) is loaded at run time but not in Depends: $depends" >&2; exit 1; }
done
# Installed-Size as dpkg-gencontrol counts it: each file's size in KiB rounded up, 1 for
# any other entry. Not `du`: the blocks ext4 has allocated to a file just written (delayed
# allocation) vary from build to build, and made two builds of one tree differ.
size=$(cd "$root" && find . -path ./DEBIAN -prune -o -mindepth 1 -printf '%y %s\n' |
  awk '$1 == "f" { kib += int(($2 + 1023) / 1024); next } { kib += 1 } END { print kib + 0 }')
cat >"$root/DEBIAN/control" <<EOF
Package: memo-peer
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size
Depends: $depends
Recommends: avahi-daemon
Suggests: wl-clipboard | xclip
Section: utils
Priority: optional
Description: private memos shared only between your own machines on the LAN
 memo-peer keeps short text memos encrypted on each machine (AES-256-GCM under
 a device-only key) and shares them only with your own paired devices on the
 local network: found through the system's Avahi daemon, proven by pinned
 device keys over TLS 1.3, with nobody in the middle. Nothing touches the
 network until a person consents.
EOF

# Same owner, modes and times for every file, whatever the umask or clock of the build.
find "$root" -type d -exec chmod 0755 {} +
find "$root" -type f ! -path "$root/usr/bin/*" ! -path "$root/DEBIAN/post*" -exec chmod 0644 {} +
(cd "$root" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) \
  >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums"
find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

mkdir -p "$out"
deb="$out/memo-peer_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >&2
echo "$deb"
