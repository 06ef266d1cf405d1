#!/bin/sh
# The header compiles without warnings (as errors) in every promised dialect,
# with and without GPUPROF_DISABLE and stb_sprintf, with each compile-out
# switch, and the result runs.
# usage: compile_matrix.sh REPO_ROOT WORK_DIR
root=$1; work=$2
mkdir -p "$work" && cd "$work" || exit 1
fails=0; passes=0
# The strict warnings users build with too: a header must not add to theirs.
flags="-Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow -Wdouble-promotion -Wcast-qual -Wimplicit-fallthrough -Werror -O1 -I$root"
# stb_sprintf found on a plain -I path, where its warnings are not silenced as
# a system header's are (the header silences them itself).
plainstb=
if [ -f /usr/include/stb/stb_sprintf.h ]; then
  mkdir -p plain/stb && cp /usr/include/stb/stb_sprintf.h plain/stb/ && plainstb="-I$work/plain"
fi
for cc in gcc clang; do
  command -v $cc >/dev/null || { echo "missing compiler $cc"; fails=$((fails+1)); continue; }
  cxx=g++; [ $cc = clang ] && cxx=clang++
  for std in c99 c11 c++11 c++17; do
    for disable in "" "-DGPUPROF_DISABLE"; do
      for stb in system -DGPUPROF_NO_STB_SPRINTF $plainstb; do
        [ $stb = system ] && stb=
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
# The compile-out switches: each builds under the same strict warnings (gnu11,
# where every optional feature is there to leave out, and c++17), the
# program runs, the feature's setting gets its one line, and nothing of the
# feature is in the object at -O0 or -O2 (no symbol of its sections).
#   SWITCH:SETTING=VALUE:SYMBOLS (a grep -E pattern)
for sw in "GPUPROF_NO_SAMPLES:GPUPROF_SAMPLE=1:gpuprof__(smp|smpf|sym_|pf_stack|pf_samples|self_read|summary_sample)" \
          "GPUPROF_NO_METRICS:GPUPROF_METRICS=use.prom:gpuprof__(prom_|metrics_)" \
          "GPUPROF_NO_DEVICE:GPUPROF_DEVICE_EVERY_MS=50:gpuprof__(dev_|dv_|nv_|nvr|nvml|prom_device|report_device|json_device)"; do
  def=${sw%%:*}; rest=${sw#*:}; setting=${rest%%:*}; syms=${rest#*:}
  for cc in gcc clang; do
    command -v $cc >/dev/null || continue
    cxx=g++; [ $cc = clang ] && cxx=clang++
    for std in gnu11 c++17; do
      case $std in c++*) comp="$cxx -x c++";; *) comp=$cc;; esac
      what="$cc -std=$std -D$def"
      left=; : > log
      for o in -O0 -O2; do
        $comp -std=$std $flags $o -D$def -c "$root/tests/compile/use_all.c" -o use$o.o 2>>log &&
          left="$left$(nm -C use$o.o | sed 's/^.* [a-zA-Z] //; s/(.*//' | grep -E "$syms" | head -3)"   # names, not C++'s parameter types
      done
      if [ -z "$left" ] && $comp -std=$std $flags -D$def -c "$root/tests/compile/use_all.c" -o use.o 2>log &&
         $comp -std=$std $flags -D$def -c "$root/tests/compile/other_tu.c" -o other.o 2>>log &&
         $cxx use.o other.o -o use -lpthread -lm 2>>log && env "$setting" ./use >/dev/null 2>run.log &&
         grep -q "^gpuprof: .*compiled out of this build ($def)" run.log; then
        passes=$((passes+1))
      else
        echo "FAIL: $what"; [ -n "$left" ] && echo "    left in the object: $left"
        sed 's/^/    /' log run.log 2>/dev/null | head -15; fails=$((fails+1))
      fi
    done
  done
done
# GPUPROF_MPI (SPEC 10), where MPI is installed: the header with the MPI
# section and mpi.h under the same strict warnings, in C and C++, and the
# program run alone (an MPI singleton: world size 1, nothing to gather).
if command -v mpicc >/dev/null && command -v mpicxx >/dev/null; then
  mpiinc=$(mpicc -showme:compile 2>/dev/null || mpicc -compile_info | cut -d' ' -f2-)
  for cc in gcc clang; do
    command -v $cc >/dev/null || continue
    cxx=g++; [ $cc = clang ] && cxx=clang++
    for std in c99 c11 c++11 c++17; do
      case $std in c++*) comp="$cxx -x c++"; mpilink=$(mpicxx -showme:link 2>/dev/null || mpicxx -link_info | cut -d' ' -f2-);;
                   *) comp=$cc; mpilink=$(mpicc -showme:link 2>/dev/null || mpicc -link_info | cut -d' ' -f2-);; esac
      for disable in "" "-DGPUPROF_DISABLE"; do
        what="GPUPROF_MPI $cc -std=$std $disable"
        if $comp -std=$std $flags $disable $mpiinc -c "$root/tests/mpi_order.c" -o mpi.o 2>log &&
           $cxx mpi.o -o mpi $mpilink -lpthread -lm 2>>log && ./mpi > mpi.log 2>&1 < /dev/null; then
          passes=$((passes+1))
        else
          echo "FAIL: $what"; sed 's/^/    /' log mpi.log | head -15; fails=$((fails+1))
        fi
      done
    done
  done
fi
# The CUDA backend (SPEC 3), when the toolkit is installed: the header in .cu
# files under nvcc (with per-thread default streams too), and GPUPROF_CUDA in
# C and C++ files built by gcc and clang, linked against the real libcudart.
# Where there is no GPU the programs run on the CPU-only fallback.
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ -x "$nvcc" ]; then
  cuda=$(dirname "$(dirname "$nvcc")")
  cp "$root/tests/compile/use_all.c" use_all.cu && cp "$root/tests/compile/other_tu.c" other_tu.cu
  for opts in "" "-DGPUPROF_DISABLE" "--default-stream per-thread" "-DGPUPROF_NO_NVTX"; do
    if "$nvcc" -std=c++17 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror $opts -I"$root" -c use_all.cu -o use.o >log 2>&1 &&
       "$nvcc" -std=c++17 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror $opts -I"$root" -c other_tu.cu -o other.o >>log 2>&1 &&
       "$nvcc" use.o other.o -o use_cu >>log 2>&1 && ./use_cu >/dev/null 2>>log; then
      passes=$((passes+1))
    else
      echo "FAIL: nvcc $opts"; sed 's/^/    /' log | head -15; fails=$((fails+1))
    fi
  done
  for cc in gcc clang; do
    cxx=g++; [ $cc = clang ] && cxx=clang++
    for std in c99 c11 c++11 c++17; do
      case $std in c++*) comp="$cxx -x c++";; *) comp=$cc;; esac
      if $comp -std=$std $flags -DGPUPROF_CUDA -isystem "$cuda/include" -c "$root/tests/compile/use_all.c" -o use.o 2>log &&
         $comp -std=$std $flags -DGPUPROF_CUDA -DCUDA_FIRST -isystem "$cuda/include" -c "$root/tests/compile/other_tu.c" -o other.o 2>>log &&
         $cxx use.o other.o -o use -L"$cuda/lib64" -Wl,-rpath,"$cuda/lib64" -lcudart -ldl -lpthread -lm 2>>log && ./use >/dev/null 2>>log; then
        passes=$((passes+1))
      else
        echo "FAIL: $cc -std=$std -DGPUPROF_CUDA"; sed 's/^/    /' log | head -15; fails=$((fails+1))
      fi
    done
  done
  # The wrappers with GPUPROF_DISABLE in C: they still allocate and free.
  if gcc -std=c99 $flags -DGPUPROF_DISABLE -isystem "$cuda/include" -c "$root/tests/compile/use_all.c" -o use.o 2>log &&
     gcc -std=c99 $flags -DGPUPROF_DISABLE -DCUDA_FIRST -isystem "$cuda/include" -c "$root/tests/compile/other_tu.c" -o other.o 2>>log &&
     gcc use.o other.o -o use -L"$cuda/lib64" -Wl,-rpath,"$cuda/lib64" -lcudart -lpthread -lm 2>>log && ./use >/dev/null 2>>log; then
    passes=$((passes+1))
  else
    echo "FAIL: gcc -std=c99 -DGPUPROF_DISABLE with the CUDA wrappers"; sed 's/^/    /' log | head -15; fails=$((fails+1))
  fi
else
  echo "note: no nvcc here, the .cu build is not checked"
fi
echo "compile_matrix: $passes passed, $fails failed"
[ $fails = 0 ]
