#!/usr/bin/env bash
# Packs what a lent GPU machine needs to run the CUDA backend's tests and
# benchmarks into .gpu/bundle.tar.xz (ignored; the device tool carries it):
# the test binary, the benchmarks, the CLI and the mock driver, stripped, with the libraries
# of this machine's Debian that the GPU machine's CUDA image lacks (LLVM,
# TBB, OpenBLAS, hiredis, Google Benchmark, ...) and a redis-server for the
# remote tier's tests. Not glibc and not NVRTC: that machine's are used.
# libstdc++ goes in extra/, used there only if the image's is older.
#
#   scripts/gpu-bundle.sh          # builds build/ first (scripts/setup.sh)
# then, on the GPU machine: scripts/gpu-check.sh (see there).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/build.ninja ] || scripts/setup.sh
cmake --build build -j "$(nproc)"
out=.gpu/bundle
rm -rf .gpu && mkdir -p "$out"/{bin,lib,extra,redis}
bins=()
for b in shapejit_tests cuda_kernels_bench cuda_models_bench shapejit libshapejit_mock_cuda.so; do
  if [ -f "build/$b" ]; then
    strip -o "$out/bin/$b" "build/$b"
    bins+=("build/$b")
  fi
done
system='libc.so|libm.so|libpthread|libdl.so|librt.so|ld-linux|libnvrtc|linux-vdso'
for lib in $(ldd "${bins[@]}" | awk '/=>/ {print $3}' | sort -u | grep -Ev "$system"); do
  case "$lib" in
    *libstdc++*|*libgcc_s*) cp -L "$lib" "$out/extra/" ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
redis=$(command -v redis-server)
cp -L "$redis" "$out/redis/redis-server.bin"
for lib in $(ldd "$redis" | awk '/=>/ {print $3}' | grep -Ev "$system|libstdc|libgcc_s"); do cp -L "$lib" "$out/redis/"; done
cat >"$out/redis/redis-server" <<'EOF'
#!/bin/sh
here=$(dirname "$0")
LD_LIBRARY_PATH="$here" exec "$here/redis-server.bin" "$@"
EOF
chmod +x "$out/redis/redis-server"
tar -C .gpu -I 'xz -T0 -6' -cf .gpu/bundle.tar.xz bundle
rm -rf "$out"
ls -la .gpu/bundle.tar.xz
