#!/bin/sh
# The header compiles without warnings (as errors) in every promised dialect,
# with and without GPUPROF_DISABLE and stb_sprintf, and the result runs.
# usage: compile_matrix.sh REPO_ROOT WORK_DIR
root=$1; work=$2
mkdir -p "$work" && cd "$work" || exit 1
fails=0; passes=0
flags="-Wall -Wextra -Wpedantic -Werror -O1 -I$root"
for cc in gcc clang; do
  command -v $cc >/dev/null || { echo "missing compiler $cc"; fails=$((fails+1)); continue; }
  cxx=g++; [ $cc = clang ] && cxx=clang++
  for std in c99 c11 c++11 c++17; do
    for disable in "" "-DGPUPROF_DISABLE"; do
      for stb in "" "-DGPUPROF_NO_STB_SPRINTF"; do
        case $std in c++*) comp="$cxx -x c++";; *) comp=$cc;; esac
        what="$cc -std=$std $disable $stb"
        if $comp -std=$std $flags $disable $stb -c "$root/tests/compile/use_all.c" -o use.o 2>log &&
           $comp -std=$std $flags $disable $stb -c "$root/tests/compile/other_tu.c" -o other.o 2>>log &&
           $cxx use.o other.o -o use -lpthread -lm 2>>log && ./use >/dev/null 2>>log; then
          passes=$((passes+1))
        else
          echo "FAIL: $what"; sed 's/^/    /' log | head -15; fails=$((fails+1))
        fi
      done
    done
  done
done
echo "compile_matrix: $passes passed, $fails failed"
[ $fails = 0 ]
