#!/usr/bin/env bash
# The main job: set up and build, turn the first requests of an Azure LLM
# inference trace into a trace of a decoder-only transformer's calls, replay
# it under every shipped policy (bench/policies) in lockstep, and print the
# table; the cumulative-time plot goes to build/replay-<workload>-<n>.svg.
#
#   scripts/run.sh [--workload conv|code] [--requests N] [more replay options]
#
# Defaults: the conversation trace, 500 requests.
set -euo pipefail
cd "$(dirname "$0")/.."
workload=conv
requests=500
replay_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --workload) workload="$2"; shift 2 ;;
    --requests) requests="$2"; shift 2 ;;
    *) replay_args+=("$1"); shift ;;
  esac
done
case "$workload" in
  conv|code) ;;
  *) echo "run.sh: --workload takes conv or code" >&2; exit 2 ;;
esac
scripts/setup.sh
mkdir -p build/traces
trace="build/traces/decoder-${workload}-${requests}.jsonl"
python3 bench/workloads/decoder.py --csv "bench/workloads/azure-llm-2023/AzureLLMInferenceTrace_${workload}.csv" \
  --requests "$requests" --out "$trace"
policies=()
for p in default jax dynamo tvm bucketed; do policies+=(--config "bench/policies/$p.json"); done
build/shapejit replay "$trace" "${policies[@]}" --plot "build/replay-${workload}-${requests}.svg" "${replay_args[@]+"${replay_args[@]}"}"
