#!/bin/bash
# Run by scripts/deb-test.sh inside the throwaway root: install, check, purge, check.
set -euo pipefail
fail() { echo "deb-test: FAIL: $*"; exit 1; }
export DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin
dpkg -i /tmp/package.deb >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; fail "dpkg -i"; }
echo "deb-test: installed $(dpkg-query -W -f='${Package} ${Version}' memo-peer)"
version=$(memo-peer --version)
echo "deb-test: memo-peer --version: $version"
[[ $version == "memo-peer "* ]] || fail "memo-peer --version"
getent passwd memo-peer >/dev/null || fail "postinst did not create the memo-peer user"
[[ $(stat -c '%a %U' /var/lib/memo-peer) == "700 memo-peer" ]] || fail "/var/lib/memo-peer is not 0700 memo-peer"

found=$(systemd-analyze verify --man=no /lib/systemd/system/memo-peer.service 2>&1) || fail "systemd-analyze: $found"
[[ -z $found ]] || fail "systemd-analyze (system unit): $found"
mkdir -p /tmp/xdg && chmod 0700 /tmp/xdg
found=$(XDG_RUNTIME_DIR=/tmp/xdg systemd-analyze verify --man=no --user /usr/lib/systemd/user/memo-peer.service 2>&1) \
  || fail "systemd-analyze --user: $found"
[[ -z $found ]] || fail "systemd-analyze (user unit): $found"
echo "deb-test: systemd-analyze verify: both installed units clean"

zcat /usr/share/man/man1/memo-peer.1.gz | groff -man -ww -z 2>/tmp/groff.log || fail "groff"
[[ ! -s /tmp/groff.log ]] || fail "the installed man page: $(cat /tmp/groff.log)"
words=$(bash -c 'source /usr/share/bash-completion/bash_completion; _completion_loader memo-peer
  COMP_WORDS=(memo-peer sh); COMP_CWORD=1; COMP_LINE="memo-peer sh"; COMP_POINT=12
  _memo_peer memo-peer sh memo-peer; echo "${COMPREPLY[*]}"')
[[ $words == show ]] || fail "the installed bash completion offers '$words' for 'sh'"
echo "deb-test: the installed man page and bash completion work"

# Nothing was started by the package's scripts: this PID namespace holds only this test.
for pid in /proc/[0-9]*; do
  name=$(cat "$pid/comm" 2>/dev/null || true)
  if [[ $name == avahi-daemon || $name == memo-peer || $name == systemd ]]; then fail "$name runs after the install"; fi
done

dpkg -L memo-peer | sort >/tmp/files
dpkg --purge memo-peer >>/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; fail "dpkg --purge"; }
state=$(dpkg-query -W -f='${Status}' memo-peer 2>/dev/null || true)
[[ -z $state || $state == "unknown ok not-installed" ]] || fail "dpkg still knows memo-peer: $state"
while read -r path; do
  [[ -d $path ]] && continue  # shared folders such as /usr/bin (and /lib, a link to usr/lib)
  if [[ -e $path || -L $path ]]; then fail "$path is left after purge"; fi
done </tmp/files
[[ ! -e /var/lib/memo-peer ]] || fail "/var/lib/memo-peer is left after purge"
echo "deb-test: purged; none of the package's $(wc -l </tmp/files) paths is left"
