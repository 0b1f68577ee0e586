#!/usr/bin/env bash
# Installs the build into a fresh prefix, then configures, builds and runs
# a consumer project (tests/install/consumer) against the installed tree
# only: find_package(shapejit) must give shapejit::shapejit with its
# headers, libraries and dependencies.
#   install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/shapejit/jit/capi/shapejit.h"
test -f "$work/prefix/lib/cmake/shapejit/shapejit-config.cmake"
cmake -S "$src/tests/install/consumer" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer"
