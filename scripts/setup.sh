#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks, then configures and builds.
#   scripts/setup.sh [--sanitize | --tsan | --deps-only [PACKAGE...]]
#     build/; with --sanitize, build-asan/ (clang 16, ASan and UBSan, with the
#     fuzz targets, whose coverage instrumentation the library gets); with --tsan,
#     build-tsan/ (ThreadSanitizer: the library and its thread tests only);
#     with --deps-only, the packages (and the extra ones named) and nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build python3 python3-venv python3-dev libtbb-dev nlohmann-json3-dev
          libgtest-dev libgmock-dev libbenchmark-dev libdlpack-dev
          llvm-16-dev lld libopenblas-dev pkg-config libxxhash-dev libhiredis-dev libssl-dev redis-server libboost-context-dev)
[ "${1:-}" = "--deps-only" ] && packages+=("${@:2}")
[ "${1:-}" = "--sanitize" ] && packages+=(clang-16 libclang-rt-16-dev)
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

[ "${1:-}" = "--deps-only" ] && exit 0

# The Python package's tools (nanobind, scikit-build-core, NumPy, pytest), pinned,
# in a venv of Debian's Python; installed again only when the pins change.
venv=build/venv
if [ ! -x "$venv/bin/python" ]; then
  mkdir -p build
  /usr/bin/python3 -m venv "$venv"
fi
if ! cmp -s python/requirements-dev.txt "$venv/requirements-dev.txt"; then
  echo "setup: installing the Python tools into $venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r python/requirements-dev.txt
  cp python/requirements-dev.txt "$venv/requirements-dev.txt"
fi

build=build
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHAPEJIT_PYTHON=ON "-DPython_EXECUTABLE=$PWD/$venv/bin/python")
targets=(all)
case "${1:-}" in
  --sanitize)
    build=build-asan
    flags=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16
           -DSHAPEJIT_SANITIZE=address,undefined -DSHAPEJIT_FUZZ=ON -DSHAPEJIT_BUILD_BENCH=OFF
           -DSHAPEJIT_PYTHON=ON "-DPython_EXECUTABLE=$PWD/$venv/bin/python") ;;
  --tsan)
    build=build-tsan
    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHAPEJIT_SANITIZE=thread -DSHAPEJIT_BUILD_BENCH=OFF)
    targets=(shapejit_tests) ;;
esac
cmake -S . -B "$build" -G Ninja "${flags[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"

# The extension imports under the venv's NumPy, which its headers must be
# (a system NumPy's headers shadowing them would fail here, saying so).
if [ "$build" = build ]; then
  PYTHONPATH="$PWD/build/python" "$venv/bin/python" -m pytest -q -p no:cacheprovider --noconftest tests/python/test_build.py
fi
