#!/usr/bin/env bash
# Each layer sees only its own folders and the layers below it (the
# include trees under BUILD/layers): an include that runs the wrong way
# must not compile. For each layer, a header of its own layer compiles (the
# control) and a header of a layer above it is not found.
#   layers_test.sh CXX BUILD_DIR
set -euo pipefail
cxx=$1 layers=$2/layers
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# check LAYER "LOWER LAYERS" OWN_HEADER FORBIDDEN_HEADER
check() {
  local layer=$1 below=$2 own=$3 forbidden=$4 flags=()
  for l in $layer $below; do flags+=(-I "$layers/shapejit_$l"); done
  printf '#include "%s"\n' "$own" > "$work/own.cpp"
  printf '#include "%s"\n' "$forbidden" > "$work/bad.cpp"
  if ! "$cxx" -std=gnu++20 -E -o /dev/null "${flags[@]}" "$work/own.cpp" 2> "$work/own.log"; then
    echo "layers: $layer cannot include its own $own:"; cat "$work/own.log"; exit 1
  fi
  if "$cxx" -std=gnu++20 -E -o /dev/null "${flags[@]}" "$work/bad.cpp" 2> "$work/bad.log"; then
    echo "layers: $layer can include $forbidden, a layer above it"; exit 1
  fi
  grep -qE "No such file|file not found" "$work/bad.log" || { echo "layers: $layer including $forbidden failed for another reason:"; cat "$work/bad.log"; exit 1; }
  echo "ok: $layer sees $own, not $forbidden"
}
# core: support -> sym -> ir
check sym "support" core/sym/shape_env.h core/ir/graph.h
check ir "sym support" core/ir/specialize.h guards/guard_set.h
check ir "sym support" core/ir/specialize.h jit/trace/tracer.h
# guards, cache, backends: on core (backends also on cache), not on each other or jit
check guards "ir sym support" guards/guard_tree.h backends/backend.h
check guards "ir sym support" guards/guard_tree.h cache/kernel_cache.h
check guards "ir sym support" guards/guard_tree.h jit/policy/config.h
check cache "support" cache/kernel_cache.h backends/backend.h
check cache "support" cache/kernel_cache.h guards/guard_set.h
check backends "cache ir sym support" backends/fallback.h guards/guard_set.h
check backends "cache ir sym support" backends/reference/kernels.h jit/trace/tracer.h
# the backends' own floors: the interface (with the reference interpreter),
# the loop IR and the block pool; the CPU device on those three; LLVM's code
# generator on the CPU device; CUDA on the three, not on the CPU device
check backends "cache ir sym support" backends/backend.h backends/loops/loop_ir.h
check backends "cache ir sym support" backends/fallback.h backends/cpu/kernel.h
check loops "ir sym support" backends/loops/lower.h backends/backend.h
check loops "ir sym support" backends/loops/lower.h jit/policy/recompile_policy.h
check pool "support" backends/pool/block_pool.h backends/cpu/arena.h
check cpu "backends loops pool cache ir sym support" backends/cpu/kernel.h backends/llvm/codegen.h
check cpu "backends loops pool cache ir sym support" backends/cpu/gemm.h backends/cuda/values.h
check cpu "backends loops pool cache ir sym support" backends/cpu/step.h jit/runtime/call_site.h
if [[ -d $layers/shapejit_llvm ]]; then
  check llvm "cpu backends loops pool cache ir sym support" backends/llvm/steps.h backends/cuda/values.h
  check llvm "cpu backends loops pool cache ir sym support" backends/llvm/codegen.h jit/runtime/jit.h
fi
if [[ -d $layers/shapejit_cuda ]]; then
  check cuda "backends loops pool cache ir sym support" backends/cuda/values.h backends/cpu/kernel.h
  check cuda "backends loops pool cache ir sym support" backends/cuda/values.h backends/llvm/steps.h
fi
# jit: trace -> policy -> runtime -> capi, on all of the above
check trace "ir sym support" jit/trace/trace_file.h jit/policy/config.h
check trace "ir sym support" jit/trace/tracer.h guards/guard_set.h
check policy "trace guards ir sym support" jit/policy/backoff_policy.h backends/backend.h
check policy "trace guards ir sym support" jit/policy/config.h jit/runtime/jit.h
check runtime "policy llvm cuda cpu backends loops pool trace guards cache ir sym support" jit/runtime/jit.h jit/capi/shapejit.h
