#!/usr/bin/env bash
# The main job: set up, build, and replay the bundled trace under the
# default config, printing the report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build/shapejit replay bench/traces/small_decoder.jsonl --config bench/policies/default.json "$@"
