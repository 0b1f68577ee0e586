#!/usr/bin/env bash
# Installs the build into a fresh prefix, then builds and runs the C and C++
# examples (examples/c_and_cpp) against the installed tree only:
#   - with CMake: find_package(shapejit) -> shapejit::shapejit, a C program
#     (#include <shapejit/shapejit.h>) and a C++ one (#include <shapejit/jit.h>);
#   - with pkg-config: the C program, `cc main.c $(pkg-config --cflags --libs shapejit)`.
# Also checks that no installed header includes another by a tree path
# (every include of ours is <shapejit/...>).
#   install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/shapejit/shapejit.h include/shapejit/jit.h lib/libshapejit.a lib/cmake/shapejit/shapejit-config.cmake \
         lib/pkgconfig/shapejit.pc; do
  test -f "$prefix/$f" || { echo "install: $f is missing"; exit 1; }
done
if grep -rnE '#include "(core|guards|cache|backends|jit)/' "$prefix/include"; then
  echo "install: the headers above include by tree paths, not <shapejit/...>"; exit 1
fi
if [ -e "$prefix/include/jit" ] || [ -e "$prefix/include/core" ]; then
  echo "install: tree folders at the top of include/"; exit 1
fi

cmake -S "$src/examples/c_and_cpp" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/hello_c"
"$work/build/hello_cpp"

# pkg-config, for builds without CMake: the C program.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
# shellcheck disable=SC2046
"${CC:-cc}" -o "$work/hello_pc" "$src/examples/c_and_cpp/hello.c" $(pkg-config --cflags --libs shapejit)
"$work/hello_pc"
