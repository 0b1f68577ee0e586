#!/usr/bin/env bash
# The CUDA backend's checks on a GPU machine, from the bundle that
# scripts/gpu-bundle.sh packed (.gpu/bundle.tar.xz), in the repository root:
#   1. cuda_kernels_bench alone on the GPU (the 10-op chain against the
#      device-to-device copy, dynamic over static kernels, NVRTC and load);
#   2. cuda_models_bench, when bundled, beside PyTorch's eager and
#      torch.compile (bench/peers/gpu_transformer_peers.py);
#   3. the Cuda* tests, a compute-sanitizer memcheck of the edge-shape tests,
#      and the rest of the C++ suite in shards, side by side.
# Logs go to $OUT (the device tool's) or /tmp/gpu-out; the summary to stdout.
#
#   scripts/gpu-check.sh [--only tests|bench|models] [--no-suite]
# (--no-suite: of the tests, the Cuda* ones and the memcheck alone)
set -uo pipefail
only="" suite=1
while [ $# -gt 0 ]; do
  case "$1" in
    --only) only=$2; shift ;;
    --no-suite) suite=0 ;;
  esac
  shift
done
root=$PWD
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out"
start=$(date +%s)
stamp() { echo "[$(($(date +%s) - start)) s] $*"; }

tar -C .gpu -xf .gpu/bundle.tar.xz || { echo "no bundle: run scripts/gpu-bundle.sh first"; exit 1; }
b=$root/.gpu/bundle
# The tests name the source tree and the CLI by this machine's paths
# (SHAPEJIT_SOURCE_DIR, SHAPEJIT_TOOL): make them point here.
if [ "$(pwd -P)" != /work/main ]; then mkdir -p /work && ln -sfn "$root" /work/main; fi
mkdir -p build && cp "$b/bin/shapejit" build/
# The mock driver (its tests run here too, compiling kernels with this
# machine's c++), where the tests look for it.
[ -f "$b/bin/libshapejit_mock_cuda.so" ] && cp "$b/bin/libshapejit_mock_cuda.so" build/
# NVRTC and cuBLAS of this machine's toolkit, the toolkit's own first.
find_lib() {
  find /usr/local/cuda/lib64 /usr/local/cuda/targets /usr/local /opt /usr/lib -name "$1" 2>/dev/null | head -1 | xargs -r dirname
}
nvrtc=$(find_lib 'libnvrtc.so.13')
cublas=$(find_lib 'libcublas.so.13')
export LD_LIBRARY_PATH="$b/lib:$nvrtc:$cublas:${LD_LIBRARY_PATH:-}"
if ldd "$b/bin/shapejit_tests" | grep -q 'not found'; then export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$b/extra"; fi
export PATH="$b/redis:$PATH"
export XDG_CACHE_HOME=$root/build/test-cache
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
  echo "cpus $(nproc), kernel $(uname -r), nvrtc in $nvrtc, cublas in $cublas"
  ldd "$b/bin/shapejit_tests" | grep -E 'not found|nvrtc|stdc'
  command -v compute-sanitizer python3
} >"$out/device.txt" 2>&1
cat "$out/device.txt"

if [ -z "$only" ] || [ "$only" = bench ]; then
  stamp "cuda_kernels_bench"
  timeout 240 "$b/bin/cuda_kernels_bench" --benchmark_counters_tabular=true >"$out/kernels_bench.txt" 2>&1
  echo "exit $?" >>"$out/kernels_bench.txt"
  cat "$out/kernels_bench.txt"
fi

if { [ -z "$only" ] || [ "$only" = models ]; } && [ -x "$b/bin/cuda_models_bench" ]; then
  stamp "models: shapejit, torch eager, torch.compile"
  PYTHONUNBUFFERED=1 timeout 280 python3 bench/peers/gpu_transformer_peers.py --shapejit "$b/bin/cuda_models_bench" ${GPU_MODELS_ARGS:-} \
    --json "$out/models.json" >"$out/models.txt" 2>&1
  echo "exit $?" >>"$out/models.txt"
  cat "$out/models.txt"
fi

if [ -z "$only" ] || [ "$only" = tests ]; then
  stamp "tests"
  timeout 300 "$b/bin/shapejit_tests" --gtest_filter='Cuda*:Mock*' >"$out/cuda_tests.txt" 2>&1 &
  cuda=$!
  edge='Cuda.PointwiseOnEdgeShapes:Cuda.NonContiguousInputs:Cuda.ReductionsShortLongAndSplitRows:Cuda.ErrorsAreTheReferencesAndEmptyAxesToo'
  edge="$edge:CudaCompact.AStridedInputIsReadByItsStrides:CudaCompact.MaskedSelectBroadcastsEitherOperand"
  timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 "$b/bin/shapejit_tests" --gtest_filter="$edge" >"$out/memcheck.txt" 2>&1 &
  memcheck=$!
  shards=$(($(nproc) > 4 ? $(nproc) - 3 : 2))
  [ "$suite" = 1 ] || shards=0
  pids=()
  for i in $(seq 0 $((shards - 1))); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout 300 "$b/bin/shapejit_tests" --gtest_filter='-Cuda*:Mock*' >"/tmp/shard$i.txt" 2>&1 &
    pids+=($!)
  done
  status=0
  for p in "${pids[@]}"; do wait "$p" || status=1; done
  [ "$suite" = 1 ] && cat /tmp/shard*.txt >"$out/suite.txt"
  wait "$cuda"; echo "exit $?" >>"$out/cuda_tests.txt"
  wait "$memcheck"; echo "exit $?" >>"$out/memcheck.txt"
  stamp "done"
  echo "== the rest of the suite, $shards shards: exit $status"
  grep -E '^\[  (PASSED|FAILED|SKIPPED) \]|tests? ran' "$out/suite.txt" | sort | uniq -c | sort -rn | head -40
  echo "== Cuda*"
  grep -E '^\[ *(OK|FAILED|SKIPPED|PASSED) *\]|Failure|error|exit' "$out/cuda_tests.txt" | head -60
  echo "== memcheck"
  tail -15 "$out/memcheck.txt"
fi
stamp "end"
