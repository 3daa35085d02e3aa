#!/usr/bin/env bash
# The memo-peer demo. First one node: an encrypted store in a temporary home, memos added,
# listed, searched, moved to a second node through a passphrase archive. Then the virtual
# home lab (scripts/lab, needs root): a home server that advertises under provisioned
# consent, a laptop whose user is asked before anything touches the network, and a laptop
# that waits because nobody has said yes; the laptop pairs with the server by comparing a
# code, and a stranger's TLS client gets nothing. Then the two laptops pair with the server
# and each other, one sends the other a memo, and b shares a notebook with c as a member and
# with the server as a blind relay: both laptops edit a memo of it while apart and meet only
# through the server, which holds sealed revisions it cannot read; both end with both edits
# (one as a conflict copy) until a person resolves it. Then live sync (an edit on one laptop
# is on the other with nobody typing `sync`), the lab's switch dropping multicast DNS while
# the laptops keep syncing through the addresses they were reached at, a history restore,
# and a revoked laptop cut off.
set -euo pipefail

bin=${1:-.build/release/memo-peer}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
demo=$(mktemp -d /tmp/memo-peer-demo.XXXXXX)
lab=$(cd "$(dirname "$0")" && pwd)/lab
# The lab's directory and namespace prefix follow MEMO_PEER_LAB_DIR and MEMO_PEER_LAB_PREFIX when
# set (so the demo can run beside another lab); by default the lab lives in the demo's directory.
export MEMO_PEER_LAB_DIR=${MEMO_PEER_LAB_DIR:-$demo/lab}
trap '[[ $(id -u) -eq 0 ]] && "$lab" down >/dev/null 2>&1; rm -rf "$demo"' EXIT
export TZ=UTC

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

# Nobody joins a notebook without a person: a device a notebook is shared with holds an
# invitation until someone there accepts it. Shows the invitations of `host` and accepts each.
accept_invitations() {
  local host=$1 id
  run "$lab" exec "$host" "$bin" notebook invitations
  for id in $("$lab" exec "$host" "$bin" notebook invitations --json \
    | python3 -c 'import json, sys; print("\n".join(i["notebook"] for i in json.load(sys.stdin)["invitations"]))'); do
    run "$lab" exec "$host" "$bin" notebook accept "$id"
  done
}

step "A new node in a temporary home ($demo/laptop)"
export MEMO_PEER_HOME=$demo/laptop
run "$bin" init

step "Add memos (the body comes from stdin; the editor opens when it is a terminal)"
printf 'Milk, eggs, bread\n' | run "$bin" new --title "Groceries" --tag home
printf 'The router admin password is in the blue folder\n' | run "$bin" new --tag lab --private
printf 'Call the plumber about the kitchen leak\n' | run "$bin" new --tag home --tag todo

step "List, filter, show, search"
run "$bin" list
run "$bin" list --tag todo
first=$("$bin" list | tail -n 1 | cut -c1-6)
run "$bin" show "$first"
run "$bin" search PLUMBER

step "Nothing readable on disk: grep the data directory for a memo's text"
if grep -r -a -q "plumber" "$MEMO_PEER_HOME"; then echo "FOUND plaintext on disk" >&2; exit 1; fi
echo "grep -r plumber $MEMO_PEER_HOME/data: no match (title, body and tags are sealed with AES-256-GCM)"
ls -l "$MEMO_PEER_HOME/data" "$MEMO_PEER_HOME/keys"

step "A copied data directory without its device key is unreadable"
mkdir -p "$demo/thief" && cp -r "$MEMO_PEER_HOME/data" "$demo/thief/data"
MEMO_PEER_HOME=$demo/thief "$bin" list || echo "(exit status $?)"

step "Move memos to another node with a passphrase archive (never the device key)"
printf 'correct horse battery staple\n' | run "$bin" export --output "$demo/memos.mpa" --passphrase-fd 0
export MEMO_PEER_HOME=$demo/desktop
run "$bin" init
printf 'correct horse battery staple\n' | run "$bin" import "$demo/memos.mpa" --passphrase-fd 0
run "$bin" list

if [[ $(id -u) -ne 0 ]]; then
  step "The virtual home lab needs root: run \`make demo\` as root to see discovery"
  exit 0
fi

step "The virtual home lab: three hosts on a private link (network namespaces, own avahi-daemons)"
run "$lab" up 3
echo "a = home server, b = laptop, c = another laptop; no route out, link-local addresses only"

step "Home server a: consent provisioned by its administrator, then \`serve\`"
run "$lab" exec a "$bin" consent grant --provisioning --note "home server"
"$lab" exec a "$bin" serve --rotation 900 2>"$demo/serve-a.log" &
for _ in $(seq 1 50); do grep -q advertising "$demo/serve-a.log" && break; sleep 0.1; done
cat "$demo/serve-a.log"
run "$lab" exec a "$bin" status

step "Laptop b: the user runs \`browse\`; memo-peer asks first (the answer is typed for the demo)"
printf 'allow\n' | "$lab" exec b script -qec "$bin browse --timeout 3" /dev/null
echo
echo "What b recorded:"
"$lab" exec b "$bin" consent status --json | python3 -m json.tool 2>/dev/null \
  || "$lab" exec b "$bin" consent status --json

step "Laptop c, unattended (no terminal, no consent): nothing is sent, it says why"
"$lab" exec c "$bin" browse </dev/null || echo "(exit status $?)"

step "A plain mDNS client on c sees exactly what a publishes: a pseudonym, v=1 and a rotating tag"
run "$lab" exec c avahi-browse -rpt _memo-peer._tcp

# pair ACCEPTOR ACCEPTOR-NAME JOINER JOINER-NAME [ACCEPTOR-OPTIONS [JOINER-OPTIONS]]: the
# acceptor opens a pairing window, the joiner picks it; both screens are shown, both people
# type y after comparing the code. A side without --share is then asked which notebooks to
# share and presses Enter: none.
pair() {
  local acceptor=$1 acceptor_name=$2 joiner=$3 joiner_name=$4 logs=$demo/pair-$1-$3
  local acceptor_options=${5:-} joiner_options=${6:-}
  rm -f "$logs".in-a "$logs".in-j
  mkfifo "$logs".in-a "$logs".in-j
  "$lab" exec "$acceptor" script -qfec "$bin pair --accept --name $acceptor_name --window 60 $acceptor_options" /dev/null \
    <"$logs".in-a >"$logs".a.log 2>&1 &
  local pid_a=$!
  exec 7>"$logs".in-a
  for _ in $(seq 1 100); do grep -q "window open" "$logs".a.log && break; sleep 0.1; done
  "$lab" exec "$joiner" script -qfec "$bin pair $acceptor_name --name $joiner_name $joiner_options" /dev/null \
    <"$logs".in-j >"$logs".j.log 2>&1 &
  local pid_j=$!
  exec 8>"$logs".in-j
  for _ in $(seq 1 200); do
    grep -q "code:" "$logs".a.log && grep -q "code:" "$logs".j.log && break
    sleep 0.1
  done
  echo "--- $acceptor's screen:"; cat "$logs".a.log; echo
  echo "--- $joiner's screen:"; cat "$logs".j.log; echo
  echo "(both people see the same code and type y)"
  printf 'y\n\n' >&7
  printf 'y\n\n' >&8
  wait "$pid_a" "$pid_j" || true
  exec 7>&- 8>&-
  echo "--- $acceptor:"; grep -E "^(Paired|shared|no notebook)" "$logs".a.log || tail -n 1 "$logs".a.log
  echo "--- $joiner:"; grep -E "^(Paired|shared|no notebook)" "$logs".j.log || tail -n 1 "$logs".j.log
}

step "Pairing: a's administrator opens a window, b's user picks it, both compare the code"
echo "b keeps its household memos in a notebook of their own, which the home server will relay"
echo "without being able to read it (a newly paired device gets no notebook unless one is shared)"
run "$lab" exec b "$bin" notebook new household
pair a home-server b laptop-b "" "--share household --as relay"
run "$lab" exec b "$bin" trust list
run "$lab" exec b "$bin" ping home-server --count 3
run "$lab" exec b "$bin" browse --timeout 2
echo "(the share reaches the home server as an invitation; its administrator accepts it)"
run "$lab" exec b "$bin" sync --peer home-server
accept_invitations a

step "Laptop c's user acts: \`browse\` asks first; then c pairs with the home server and with b"
printf 'allow\n' | "$lab" exec c script -qec "$bin browse --timeout 2" /dev/null
echo
echo "What c recorded:"
"$lab" exec c "$bin" consent status --json | python3 -m json.tool 2>/dev/null \
  || "$lab" exec c "$bin" consent status --json
pair a home-server c laptop-c
pair b laptop-b c laptop-c "--share household"
run "$lab" exec c "$bin" trust list

step "c runs \`serve\` too (its user granted consent); b sends c a memo, c accepts it from its inbox"
"$lab" exec c "$bin" serve 2>"$demo/serve-c.log" &
serve_c=$!
for _ in $(seq 1 50); do grep -q advertising "$demo/serve-c.log" && break; sleep 0.1; done
cat "$demo/serve-c.log"
note=$(printf 'The parcel is at the neighbours\n' | "$lab" exec b "$bin" new --json \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["memo"]["id"])')
run "$lab" exec b "$bin" send "$note" --to laptop-c --wait 20
run "$lab" exec c "$bin" inbox
entry=$("$lab" exec c "$bin" inbox --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["entries"][0]["id"])')
run "$lab" exec c "$bin" inbox accept "$entry"

step "b writes in the shared notebook; when b and c meet, c is invited, accepts, and gets its key and memos"
memo=$(printf 'milk\neggs\n' | "$lab" exec b "$bin" new --notebook household --title "Shopping list" --json \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["memo"]["id"])')
run "$lab" exec b "$bin" sync --peer laptop-c
accept_invitations c
run "$lab" exec b "$bin" sync --peer laptop-c
run "$lab" exec c "$bin" notebook list
echo "(c lets the home server relay the notebook too, so the laptops need not be on together)"
run "$lab" exec c "$bin" notebook share household --with home-server --as relay

step "Both laptops edit the same memo while apart"
printf 'milk\neggs\nbread\n' | run "$lab" exec b "$bin" edit "$memo" --stdin
printf 'milk\neggs\ncoffee\n' | run "$lab" exec c "$bin" edit "$memo" --stdin

step "They meet only through the home server, which carries the notebook sealed: only changes move"
run "$lab" exec b "$bin" sync --peer home-server
run "$lab" exec c "$bin" sync --peer home-server --json
echo
run "$lab" exec b "$bin" sync --peer home-server
run "$lab" exec b "$bin" peers

step "Converged: both laptops hold both edits (one as a conflict copy); the home server holds only sealed revisions"
for host in a b c; do
  echo "--- $host:"
  "$lab" exec "$host" "$bin" list
done
run "$lab" exec c "$bin" conflicts
copy=$("$lab" exec c "$bin" list --json \
  | python3 -c 'import json, sys; print([m["id"] for m in json.load(sys.stdin)["memos"] if m.get("conflict_of")][0])')
run "$lab" exec c "$bin" show "$copy" --plain
run "$lab" exec c "$bin" show "$memo" --plain
run "$lab" exec a "$bin" show "$memo" || echo "(exit status $?)"
if grep -r -a -q -e coffee -e bread "$MEMO_PEER_LAB_DIR/a/home"; then echo "FOUND plaintext on the relay" >&2; exit 1; fi
echo "grep -r -e coffee -e bread in the home server's whole home: no match (it never had the key)"

step "c's user keeps both versions; the resolution travels through the home server"
run "$lab" exec c "$bin" conflicts resolve "$copy" --keep both
run "$lab" exec c "$bin" sync --peer home-server
run "$lab" exec b "$bin" sync --peer home-server
for host in b c; do
  echo "--- $host:"
  "$lab" exec "$host" "$bin" list --notebook household
done

# wait_for SECONDS HOST CONDITION: evaluates the shell CONDITION every 0.1 s until it holds,
# then says how long that took on HOST; fails the demo after SECONDS.
wait_for() {
  local seconds=$1 host=$2 condition=$3 start=$EPOCHREALTIME
  for _ in $(seq 1 $((seconds * 10))); do
    if eval "$condition" >/dev/null 2>&1; then
      awk -v host="$host" -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "(on %s after %.2f s)\n", host, b - a }'
      return 0
    fi
    sleep 0.1
  done
  echo "not on $host within $seconds s" >&2
  exit 1
}
# The shopping list's text on HOST, and its revision there.
list_on() { "$lab" exec "$1" "$bin" show "$memo" --plain; }
revision_on() {
  "$lab" exec "$1" "$bin" show "$memo" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["memo"]["revision"])'
}

step "Live sync: b and c keep a link open (background-sync consent); an edit on b is on c, nobody types sync"
run "$lab" exec b "$bin" consent grant --scope background-sync
run "$lab" exec c "$bin" consent grant --scope background-sync
"$lab" exec b "$bin" serve 2>"$demo/serve-b.log" &
serve_b=$!
for _ in $(seq 1 100); do "$lab" exec b "$bin" status 2>/dev/null | grep -q 'connected' && break; sleep 0.1; done
run "$lab" exec b "$bin" status
before=$(revision_on b)
printf 'milk\neggs\nbread\ncoffee\ntea\n' | run "$lab" exec b "$bin" edit "$memo" --stdin
wait_for 10 c 'list_on c | grep -q tea'

step "The home's switch starts dropping multicast DNS (IGMP snooping, Wi-Fi client isolation, a VLAN)"
run "$lab" multicast off
echo "(both laptops reboot: their avahi-daemons and memo-peer daemons start again)"
kill "$serve_b" "$serve_c"
wait "$serve_b" "$serve_c" 2>/dev/null || true
"$lab" restart-avahi b && "$lab" restart-avahi c
"$lab" exec b "$bin" serve 2>"$demo/serve-b.log" &
serve_b=$!
"$lab" exec c "$bin" serve 2>"$demo/serve-c.log" &
serve_c=$!
sleep 3
echo "c's avahi sees no other memo-peer device now:"
run "$lab" exec c avahi-browse -t -p --ignore-local _memo-peer._tcp
echo "(nothing)"
echo "Yet they reach each other where they were reached before:"
for _ in $(seq 1 150); do "$lab" exec c "$bin" status 2>/dev/null | grep -q 'connected' && break; sleep 0.1; done
run "$lab" exec c "$bin" peers
printf 'milk\neggs\nbread\ncoffee\ntea\nbiscuits\n' | run "$lab" exec c "$bin" edit "$memo" --stdin
wait_for 10 b 'list_on b | grep -q biscuits'
run "$lab" exec b "$bin" doctor || true

step "History: every revision is kept; b brings back the list as it was before tea and biscuits"
run "$lab" exec b "$bin" history "$memo"
run "$lab" exec b "$bin" restore "$memo" --revision "$before"
restored=$(revision_on b)
wait_for 10 c '[[ $(revision_on c) == "$restored" ]]'
run "$lab" exec c "$bin" show "$memo" --plain

step "b's user revokes laptop c (lost): signed, c is cut off at once, its next sync refused"
run "$lab" exec b "$bin" trust revoke laptop-c
run "$lab" exec c "$bin" sync --peer laptop-b --timeout 5 || echo "(exit status $?)"
run "$lab" exec b "$bin" peers
echo "(the switch forwards multicast DNS again)"
"$lab" multicast on

step "A stranger is not trusted: a real TLS client (openssl s_client, with no key of a trusted device) gets an alert"
port=$("$lab" exec a "$bin" status --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["serve"]["port"])')
(sleep 1) | "$lab" exec c openssl s_client -connect "169.254.77.11:$port" -alpn memo-peer/1 -brief 2>&1 | tail -n 1 || true

step "The home server's administrator revokes consent: a withdraws its advertisement"
run "$lab" exec a "$bin" consent revoke
sleep 1
run "$lab" exec a "$bin" status
run "$lab" exec b "$bin" browse --timeout 2 || true

step "Done: the lab and the demo home are removed on exit"
