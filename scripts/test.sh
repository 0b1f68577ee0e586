#!/usr/bin/env bash
# Set up, build, and run the test suite.
#   scripts/test.sh               the suite
#   scripts/test.sh --sanitize    the suite under AddressSanitizer and
#                                 UndefinedBehaviorSanitizer; any report fails it
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh "${1:-}"
build=build
if [ "${1:-}" = "--sanitize" ]; then
  build=build-asan
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
