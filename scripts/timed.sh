#!/usr/bin/env bash
# Runs a command, then prints "LABEL: N s", its wall-clock time, and exits with its status:
# how the test tiers of the Makefile report their test time.
# Usage: scripts/timed.sh LABEL COMMAND [ARGUMENT...]
set -uo pipefail
label=$1
shift
start=$(date +%s)
"$@"
status=$?
if ((status == 0)); then
  echo "$label $(($(date +%s) - start)) s"
else
  echo "$label $(($(date +%s) - start)) s, FAILED (exit status $status)"
fi
exit "$status"
