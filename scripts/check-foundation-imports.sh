#!/bin/sh
# The program links FoundationEssentials only: full Foundation brings
# FoundationInternationalization and ICU's data, which doubled the binary (43 to 93 MB
# unstripped) and added 4 MiB to the peak RSS of every command the one time a core file
# imported it. Only the test support module (never in the binary) may import it.
found=$(grep -rln --include='*.swift' '^import Foundation$' Sources | grep -v '^Sources/MemoTestSupport/')
if [ -n "$found" ]; then
  echo "these files import Foundation; import FoundationEssentials (and Dispatch) instead:" >&2
  echo "$found" >&2
  exit 1
fi
echo "no program module imports Foundation"
