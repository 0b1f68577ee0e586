#!/usr/bin/env bash
# Set up, build, and run the test suite: the C++ suite (CTest), then the
# Python package's (pytest).
#   scripts/test.sh               the suite; the Python tests run against the package
#                                 that `pip install .` builds (into build/venv), then a
#                                 smoke of the Python differential fuzzer and of it
#                                 under fault injection
#   scripts/test.sh --sanitize    the suite under AddressSanitizer and
#                                 UndefinedBehaviorSanitizer (clang); any report fails it (the
#                                 Python tests run on the sanitized build's extension); then
#                                 each fuzz target for a 20-second smoke (scripts/fuzz.sh)
#   scripts/test.sh --tsan        the tests that run threads (the runtime's, the cache's,
#                                 the C API's churn) under ThreadSanitizer; any report fails it
set -euo pipefail
cd "$(dirname "$0")/.."
# A test that hangs fails by name after this many seconds (the slowest, under
# ASan, take about 75), instead of holding the run until CI's own limit; a
# Python test that long prints every thread's stack, and the Python suite as
# a whole (4 minutes under ASan) is stopped after half an hour.
test_timeout=600
pytest=(-m pytest -q -p no:cacheprovider -o "faulthandler_timeout=$test_timeout")
scripts/setup.sh "${1:-}"
# Each run keeps its kernels in a disk tier of its own. A kernel that another
# build of the same source wrote (the plain stage's, read by the ASan stage)
# has given a wrong answer (RandomGraphs, 2026-11-26): cached kernels are not
# yet keyed by the build that made them (docs/not-built-yet.md).
export XDG_CACHE_HOME="$(mktemp -d)"
build=build
if [ "${1:-}" = "--sanitize" ]; then
  build=build-asan
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1
  export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
if [ "${1:-}" = "--tsan" ]; then
  # One test at a time: each runs threads of its own.
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp" \
    ctest --test-dir build-tsan --output-on-failure --timeout "$test_timeout"
  exit 0
fi
ctest --test-dir "$build" --output-on-failure --timeout "$test_timeout" -j "$(nproc)"

python=build/venv/bin/python
export SHAPEJIT_TOOL="$PWD/$build/shapejit"
if [ "${1:-}" = "--sanitize" ]; then
  # CPython is not instrumented: ASan's shared runtime (UBSan's comes with it)
  # loads first, and leaks are not checked (the interpreter keeps what it
  # allocates until exit). A request for terabytes returns null, as malloc
  # does without ASan: the tests of what NumPy says then (MemoryError) run.
  (cd tests/python && LD_PRELOAD="$(clang-16 -print-file-name=libclang_rt.asan-x86_64.so)" \
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1:allocator_may_return_null=1 \
    PYTHONPATH="$PWD/../../$build/python" timeout 1800 "../../$python" "${pytest[@]}")
  scripts/fuzz.sh 20
else
  "$python" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps --config-settings=build-dir=build/wheel .
  (cd tests/python && timeout 1800 "../../$python" "${pytest[@]}")
  # The Python front end's differential fuzzer (docs/testing.md): a smoke of
  # about a minute, from a fixed seed, so that a run of CI is reproducible;
  # the long runs that find new differences take a fresh seed.
  (cd tests/python && timeout 600 "../../$python" fuzz/fuzz_numpy.py --seconds 120 --programs 4500 --seed 7 --no-save)
  # Fault injection: each stage of a call made to fail in turn, and every
  # realistic program, fuzz regression and fresh fuzz program still NumPy's.
  (cd tests/python && timeout 1200 "../../$python" fuzz/fault_run.py --programs 200 --seed 11)
fi
