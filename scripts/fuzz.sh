#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer binary (Tests/Fuzz, `swift build --sanitize=fuzzer` into
# .build-fuzz) and runs every target for a bounded time, one after the other (one fuzzing
# process at a time: the build machines are shared). Each target starts from its committed
# seed corpus (Tests/Fuzz/Corpus/TARGET) and grows a working corpus under .build-fuzz; a
# crash is written to .build-fuzz/crashes/TARGET/ and fails the run (copy it to
# Tests/Fuzz/Crashes/TARGET/ once fixed: FuzzRegressionTests runs it from then on).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 60; FUZZ_SECONDS in make)
#   FUZZ_TARGETS="sync-batch frame" scripts/fuzz.sh 600
#
# Every run appends one line per target to .build-fuzz/fuzz-log.tsv: date, target, seconds,
# executions, crashes.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
swift=${SWIFT:-swift}
build=.build-fuzz
MEMO_PEER_FUZZ=1 "$swift" build --sanitize=fuzzer --product memo-peer-fuzz --build-path "$build" >&2
binary=$(MEMO_PEER_FUZZ=1 "$swift" build --sanitize=fuzzer --product memo-peer-fuzz --build-path "$build" --show-bin-path)/memo-peer-fuzz
targets=${FUZZ_TARGETS:-$(ls Tests/Fuzz/Corpus)}
failed=()
printf '%-15s %12s %8s\n' target executions crashes
for target in $targets; do
  work="$build/corpus/$target"
  crashes="$build/crashes/$target"
  mkdir -p "$work" "$crashes"
  log="$build/$target.log"
  # SWIFT_BACKTRACE=enable=no: Swift's crash reporter would hide the crash from libFuzzer.
  status=0
  SWIFT_BACKTRACE=enable=no MEMO_PEER_FUZZ_TARGET="$target" "$binary" \
    -max_total_time="$seconds" -max_len=16384 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$crashes/" "$work" "Tests/Fuzz/Corpus/$target" >"$log" 2>&1 || status=$?
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  found=$(find "$crashes" -type f | wc -l)
  printf '%-15s %12s %8s\n' "$target" "${executions:-?}" "$found"
  printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$target" "$seconds" "${executions:-0}" "$found" \
    >>"$build/fuzz-log.tsv"
  if [ "$status" -ne 0 ] || [ "$found" -ne 0 ]; then
    failed+=("$target")
    tail -n 40 "$log" >&2
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz: crashes in ${failed[*]} (inputs under $build/crashes)" >&2
  exit 1
fi
echo "fuzz: every target ran ${seconds}s without a crash"
