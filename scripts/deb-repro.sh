#!/usr/bin/env bash
# Builds the .deb twice, from two copies of this tree in two differently named folders, and
# prints both SHA-256 sums; exits 1 when they differ. The copies hold the tracked and the
# new (not ignored) files, so uncommitted work is checked too. Usage:
# scripts/deb-repro.sh [OUTPUT-DIR]   (the first package is left in OUTPUT-DIR, default dist/)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-dist}")
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || stat -c %Y Package.swift)}
export SOURCE_DATE_EPOCH
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
folders=(first/memo-peer second/elsewhere-with-a-longer-name)
# Both copies first, from one snapshot, so an edit made while the first one builds cannot
# make the two differ.
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf "$scratch/sources.tar"
for folder in "${folders[@]}"; do
  mkdir -p "$scratch/$folder"
  tar -xf "$scratch/sources.tar" -C "$scratch/$folder"
done
sums=()
for folder in "${folders[@]}"; do
  deb=$("$scratch/$folder/scripts/deb.sh" "$scratch/$folder/dist")
  sum=$(sha256sum "$deb" | cut -d' ' -f1)
  echo "deb-repro: $sum  built in $scratch/$folder"
  sums+=("$sum")
  if [[ $folder == first/* ]]; then
    mkdir -p "$out"
    cp "$deb" "$out/"
  fi
done
if [[ ${sums[0]} != "${sums[1]}" ]]; then
  echo "deb-repro: FAIL: the two builds differ" >&2
  exit 1
fi
echo "deb-repro: identical: ${sums[0]}"
echo "$out/$(basename "$deb")"
