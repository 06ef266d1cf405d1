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
# nvcc, the header in .cu files (SPEC 3), when the CUDA toolkit is installed
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ -x "$nvcc" ]; then
  cp "$root/tests/compile/use_all.c" use_all.cu && cp "$root/tests/compile/other_tu.c" other_tu.cu
  for disable in "" "-DGPUPROF_DISABLE"; do
    if "$nvcc" -std=c++17 -Xcompiler -Wall,-Wextra,-Werror $disable -I"$root" -c use_all.cu -o use.o >log 2>&1 &&
       "$nvcc" -std=c++17 -Xcompiler -Wall,-Wextra,-Werror $disable -I"$root" -c other_tu.cu -o other.o >>log 2>&1 &&
       "$nvcc" use.o other.o -o use_cu >>log 2>&1 && ./use_cu >/dev/null 2>>log; then
      passes=$((passes+1))
    else
      echo "FAIL: nvcc $disable"; sed 's/^/    /' log | head -15; fails=$((fails+1))
    fi
  done
else
  echo "note: no nvcc here, the .cu build is not checked"
fi
echo "compile_matrix: $passes passed, $fails failed"
[ $fails = 0 ]
