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
debs=()
for folder in "${folders[@]}"; do
  deb=$("$scratch/$folder/scripts/deb.sh" "$scratch/$folder/dist")
  sum=$(sha256sum "$deb" | cut -d' ' -f1)
  echo "deb-repro: $sum  built in $scratch/$folder"
  sums+=("$sum")
  debs+=("$deb")
  if [[ $folder == first/* ]]; then
    mkdir -p "$out"
    cp "$deb" "$out/"
  fi
done

# Which files of the two packages differ and, for an ELF file, every section holding a
# differing byte with how many (the first 200,000 differences): the build ID always differs
# when anything does, so the first byte alone names nothing. Both packages are kept in
# OUTPUT-DIR/repro-diff/ for a closer look (the scratch folder goes at exit).
explain() {
  local index file name type address offset size rest
  mkdir -p "$out/repro-diff"
  for index in 0 1; do
    dpkg-deb -R "${debs[$index]}" "$scratch/unpacked-$index"
    cp "${debs[$index]}" "$out/repro-diff/build-$index.deb"
  done
  (cd "$scratch/unpacked-0" && find . -type f | sort) | while read -r file; do
    cmp -s "$scratch/unpacked-0/$file" "$scratch/unpacked-1/$file" && continue
    echo "deb-repro: differs: $file" >&2
    readelf -h "$scratch/unpacked-0/$file" >/dev/null 2>&1 || continue
    # cmp exits 1 when the files differ: under pipefail that is not a failure here.
    { readelf -S -W "$scratch/unpacked-0/$file" | sed -n 's/^ *\[ *[0-9]*\] //p' |
        while read -r name type address offset size rest; do
          [[ $type == NOBITS || ! $offset =~ ^[0-9a-f]+$ || ! $size =~ ^[0-9a-f]+$ ]] && continue
          echo "S $name $((16#$offset)) $((16#$size))"
        done
      (cmp -l "$scratch/unpacked-0/$file" "$scratch/unpacked-1/$file" 2>/dev/null || true) |
        head -n 200000 | awk '{ print "D", $1 - 1 }'
    } | awk '
      $1 == "S" { name[n] = $2; start[n] = $3; size[n] = $4; n++ }
      $1 == "D" { for (i = 0; i < n; i++) if ($2 >= start[i] && $2 < start[i] + size[i]) {
          count[i]++; if (!(i in first)) first[i] = $2 - start[i] } }
      END { for (i = 0; i < n; i++) if (i in count)
          printf "deb-repro:   %s: %d bytes differ, the first at +%d\n", name[i], count[i], first[i] }' >&2
  done
}

if [[ ${sums[0]} != "${sums[1]}" ]]; then
  echo "deb-repro: FAIL: the two builds differ" >&2
  explain || true
  exit 1
fi
echo "deb-repro: identical: ${sums[0]}"
echo "$out/$(basename "$deb")"
