#!/usr/bin/env bash
# Runs each fuzz target (tests/fuzz/*_fuzzer.cpp, libFuzzer, ASan and UBSan,
# built in the sanitizer tree build-asan/ by scripts/setup.sh --sanitize) for
# SECONDS (default 60) from its committed seeds (tests/fuzz/corpus/TARGET;
# what a run finds goes to build-asan/corpus/TARGET, so the tree stays as
# committed). `scripts/test.sh --sanitize` runs each for a short smoke.
#   scripts/fuzz.sh [SECONDS] [TARGET...]    e.g. scripts/fuzz.sh 600 graph_runner
# Any crash, leak, sanitizer report or timeout fails the run and leaves the
# input that caused it in build-asan/artifacts/. Prints each target's
# executions per second and final coverage.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in tests/fuzz/*_fuzzer.cpp; do targets+=("$(basename "$f" _fuzzer.cpp)"); done
fi
build=build-asan
[ -f "$build/graph_reader_fuzzer" ] || scripts/setup.sh --sanitize
cmake --build "$build" -j "$(nproc)" --target "${targets[@]/%/_fuzzer}"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1:detect_stack_use_after_return=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
mkdir -p "$build/artifacts"
status=0
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  mkdir -p "$corpus"
  log="$build/$t.log"
  echo "fuzz: $t for ${seconds}s"
  if ! "$build/${t}_fuzzer" "$corpus" "tests/fuzz/corpus/$t" -max_total_time="$seconds" -timeout=20 \
      -rss_limit_mb=4096 -max_len=4096 -print_final_stats=1 -artifact_prefix="$build/artifacts/${t}-" >"$log" 2>&1; then
    echo "fuzz: $t FAILED (log: $log)"
    grep -E 'ERROR|SUMMARY|graph runner|reader|==[0-9]+==' "$log" | head -20 || true
    status=1
    continue
  fi
  done_line=$(grep -E '^#[0-9]+\s+DONE' "$log" | tail -1)
  execs=$(grep -E 'stat::average_exec_per_sec' "$log" | awk '{print $2}')
  echo "fuzz: $t ok: ${done_line:-?} (${execs:-?} execs/s)"
done
exit $status
