#!/bin/sh
# Installs gpuprof (the header, the CMake package, bin/gpuprof-compare) into a
# prefix and builds a consumer with find_package(gpuprof).
# usage: cmake_package.sh REPO_ROOT WORK_DIR CMAKE
root=$1; work=$2; cmake=$3
rm -rf "$work" && mkdir -p "$work" || exit 1
"$cmake" -S "$root" -B "$work/build" -DGPUPROF_BUILD_TESTS=OFF -DGPUPROF_BUILD_EXAMPLES=OFF -DGPUPROF_BUILD_BENCH=OFF >"$work/log" 2>&1 &&
"$cmake" --build "$work/build" >>"$work/log" 2>&1 &&
"$cmake" --install "$work/build" --prefix "$work/prefix" >>"$work/log" 2>&1 &&
"$cmake" -S "$root/tests/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >>"$work/log" 2>&1 &&
"$cmake" --build "$work/consumer" >>"$work/log" 2>&1 &&
"$work/consumer/consumer" | grep -q "consumer step" &&
"$work/prefix/bin/gpuprof-compare" --help | grep -q "Welch" || { cat "$work/log"; echo "cmake_package: 0 passed, 1 failed"; exit 1; }
echo "cmake_package: 1 passed, 0 failed"
