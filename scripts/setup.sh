#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks, then configures and builds.
#   scripts/setup.sh [--sanitize]   (build/ or, with --sanitize, build-asan/)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build python3 libtbb-dev nlohmann-json3-dev
          libgtest-dev libgmock-dev libbenchmark-dev libdlpack-dev
          llvm-16-dev lld libopenblas-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build=build
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
if [ "${1:-}" = "--sanitize" ]; then
  build=build-asan
  flags=(-DCMAKE_BUILD_TYPE=Debug -DSHAPEJIT_SANITIZE=address,undefined -DSHAPEJIT_BUILD_BENCH=OFF)
fi
cmake -S . -B "$build" -G Ninja "${flags[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)"
