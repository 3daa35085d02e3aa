#!/usr/bin/env bash
# The memo-peer demo. For now it shows one node: an encrypted store in a temporary home,
# memos added, listed, searched, moved to a second node through a passphrase archive.
# Later issues extend it to the virtual home lab (several hosts, discovery, sync).
set -euo pipefail

bin=${1:-.build/release/memo-peer}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
demo=$(mktemp -d /tmp/memo-peer-demo.XXXXXX)
trap 'rm -rf "$demo"' EXIT
export TZ=UTC

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

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
printf 'correct horse battery staple\n' | run "$bin" import "$demo/memos.mpa" --passphrase-fd 0
run "$bin" list

step "Done: the demo home is removed on exit"
