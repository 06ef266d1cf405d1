#!/bin/sh
# The header compiles without warnings (as errors) in every promised dialect,
# with and without GPUPROF_DISABLE and stb_sprintf, with each compile-out
# switch, and the result runs.
# Each cell of the matrix builds and runs in a folder of its own, as many at
# once as there are CPUs (GPUPROF_JOBS to choose); the failures are printed
# in the matrix's order at the end.
# usage: compile_matrix.sh REPO_ROOT WORK_DIR
root=$1; work=$2
mkdir -p "$work" && cd "$work" || exit 1
work=$(pwd)
rm -rf cells && mkdir cells
jobs=${GPUPROF_JOBS:-$(nproc 2>/dev/null || echo 2)}
ncell=0; running=0
# cell WHAT: the caller runs the cell's body in a subshell, in the folder
# cell_dir, writing its log to cell_dir/log; cell_done records the result.
cell() {
  ncell=$((ncell+1)); cell_dir=$work/cells/$(printf %03d $ncell); cell_what=$1
  mkdir -p "$cell_dir"
}
# after each started cell: wait for the batch when as many run as the CPUs
throttle() {
  running=$((running+1))
  if [ $running -ge "$jobs" ]; then wait; running=0; fi
}
# cell_result OK WHAT [FILES...]: the cell's verdict, with its logs on failure
cell_result() {
  if [ "$1" = 0 ]; then echo pass > result
  else
    shift; what=$1; shift
    { echo "FAIL: $what"; sed 's/^/    /' "$@" 2>/dev/null | head -15; } > result
  fi
}
# The strict warnings users build with too: a header must not add to theirs.
flags="-Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow -Wdouble-promotion -Wcast-qual -Wimplicit-fallthrough -Werror -O1 -I$root"
# stb_sprintf found on a plain -I path, where its warnings are not silenced as
# a system header's are (the header silences them itself).
plainstb=
if [ -f /usr/include/stb/stb_sprintf.h ]; then
  mkdir -p plain/stb && cp /usr/include/stb/stb_sprintf.h plain/stb/ && plainstb="-I$work/plain"
fi
for cc in gcc clang; do
  command -v $cc >/dev/null || { cell "missing compiler $cc"; echo "FAIL: missing compiler $cc" > "$cell_dir/result"; continue; }
  cxx=g++; [ $cc = clang ] && cxx=clang++
  for std in c99 c11 c++11 c++17; do
    for disable in "" "-DGPUPROF_DISABLE"; do
      for stb in system -DGPUPROF_NO_STB_SPRINTF $plainstb; do
        [ $stb = system ] && stb=
        case $std in c++*) comp="$cxx -x c++";; *) comp=$cc;; esac
        cell "$cc -std=$std $disable $stb"
        ( cd "$cell_dir" && $comp -std=$std $flags $disable $stb -c "$root/tests/compile/use_all.c" -o use.o 2>log &&
          $comp -std=$std $flags $disable $stb -c "$root/tests/compile/other_tu.c" -o other.o 2>>log &&
          $cxx use.o other.o -o use -lpthread -lm 2>>log && ./use >/dev/null 2>>log
          cell_result $? "$cell_what" log ) &
        throttle
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
          "GPUPROF_NO_DEVICE:GPUPROF_DEVICE_EVERY_MS=50:gpuprof__(dev_|dv_|nv_|nvr|nvml|prom_device|report_device|json_device)" \
          "GPUPROF_NO_HTML:GPUPROF_HTML=use.html:gpuprof__html_"; do
  def=${sw%%:*}; rest=${sw#*:}; setting=${rest%%:*}; syms=${rest#*:}
  for cc in gcc clang; do
    command -v $cc >/dev/null || continue
    cxx=g++; [ $cc = clang ] && cxx=clang++
    for std in gnu11 c++17; do
      case $std in c++*) comp="$cxx -x c++";; *) comp=$cc;; esac
      cell "$cc -std=$std -D$def"
      ( cd "$cell_dir" || exit 1
        left=; : > log
        for o in -O0 -O2; do
          $comp -std=$std $flags $o -D$def -c "$root/tests/compile/use_all.c" -o use$o.o 2>>log &&
            left="$left$(nm -C use$o.o | sed 's/^.* [a-zA-Z] //; s/(.*//' | grep -E "$syms" | head -3)"   # names, not C++'s parameter types
        done
        [ -z "$left" ] && [ -f use-O2.o ] &&
          $comp -std=$std $flags -D$def -c "$root/tests/compile/other_tu.c" -o other.o 2>>log &&
          $cxx use-O2.o other.o -o use -lpthread -lm 2>>log && env "$setting" ./use >/dev/null 2>run.log &&
          grep -q "^gpuprof: .*compiled out of this build ($def)" run.log
        rc=$?
        [ -n "$left" ] && echo "left in the object: $left" > left.log
        cell_result $rc "$cell_what" left.log log run.log ) &
      throttle
    done
  done
done
# GPUPROF_MPI (SPEC 10), where MPI is installed: the header with the MPI
# section and mpi.h under the same strict warnings, in C and C++ (the tests'
# implementation file, impl/impl.c; mpi_order.c includes mpi.h itself, whose
# C++ bindings are not clean under them), and the program run alone (an MPI
# singleton: world size 1, nothing to gather).
if command -v mpicc >/dev/null && command -v mpicxx >/dev/null; then
  mpiinc=$(mpicc -showme:compile 2>/dev/null || mpicc -compile_info | cut -d' ' -f2-)
  for cc in gcc clang; do
    command -v $cc >/dev/null || continue
    cxx=g++; [ $cc = clang ] && cxx=clang++
    for std in c99 c11 c++11 c++17; do
      case $std in c++*) comp="$cxx -x c++"; mpilink=$(mpicxx -showme:link 2>/dev/null || mpicxx -link_info | cut -d' ' -f2-);;
                   *) comp=$cc; mpilink=$(mpicc -showme:link 2>/dev/null || mpicc -link_info | cut -d' ' -f2-);; esac
      for disable in "" "-DGPUPROF_DISABLE"; do
        cell "GPUPROF_MPI $cc -std=$std $disable"
        ( cd "$cell_dir" && $comp -std=$std $flags $disable -DGPUPROF_MPI $mpiinc -I"$root/tests" -c "$root/tests/impl/impl.c" -o impl.o 2>log &&
          $comp -std=$std -O1 -I"$root" $disable -DGPUPROF_MPI $mpiinc -c "$root/tests/mpi_order.c" -o mpi.o 2>>log &&
          $cxx impl.o mpi.o -o mpi $mpilink -lpthread -lm 2>>log && ./mpi > mpi.log 2>&1 < /dev/null
          cell_result $? "$cell_what" log mpi.log ) &
        throttle
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
    cell "nvcc $opts"
    ( cd "$cell_dir" && "$nvcc" -std=c++17 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror $opts -I"$root" -c "$work/use_all.cu" -o use.o >log 2>&1 &&
      "$nvcc" -std=c++17 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror $opts -I"$root" -c "$work/other_tu.cu" -o other.o >>log 2>&1 &&
      "$nvcc" use.o other.o -o use_cu >>log 2>&1 && ./use_cu >/dev/null 2>>log
      cell_result $? "$cell_what" log ) &
    throttle
  done
  for cc in gcc clang; do
    cxx=g++; [ $cc = clang ] && cxx=clang++
    for std in c99 c11 c++11 c++17; do
      case $std in c++*) comp="$cxx -x c++";; *) comp=$cc;; esac
      cell "$cc -std=$std -DGPUPROF_CUDA"
      ( cd "$cell_dir" && $comp -std=$std $flags -DGPUPROF_CUDA -isystem "$cuda/include" -c "$root/tests/compile/use_all.c" -o use.o 2>log &&
        $comp -std=$std $flags -DGPUPROF_CUDA -DCUDA_FIRST -isystem "$cuda/include" -c "$root/tests/compile/other_tu.c" -o other.o 2>>log &&
        $cxx use.o other.o -o use -L"$cuda/lib64" -Wl,-rpath,"$cuda/lib64" -lcudart -ldl -lpthread -lm 2>>log && ./use >/dev/null 2>>log
        cell_result $? "$cell_what" log ) &
      throttle
    done
  done
  # GPUPROF_NO_GPU_METRICS (a CUDA build's feature): nothing of it in the object
  # at -O0 or -O2, and GPUPROF_GPU_METRICS=1 gets its one line.
  for std in gnu11 c++17; do
    case $std in c++*) comp="g++ -x c++";; *) comp=gcc;; esac
    cell "gcc -std=$std -DGPUPROF_CUDA -DGPUPROF_NO_GPU_METRICS"
    ( cd "$cell_dir" || exit 1
      left=; : > log
      for o in -O0 -O2; do
        $comp -std=$std $flags $o -DGPUPROF_CUDA -DGPUPROF_NO_GPU_METRICS -isystem "$cuda/include" -c "$root/tests/compile/use_all.c" -o use$o.o 2>>log &&
          left="$left$(nm -C use$o.o | sed 's/^.* [a-zA-Z] //; s/(.*//' | grep -E 'gpuprof__(gm_|pm_)' | head -3)"
      done
      [ -z "$left" ] && [ -f use-O2.o ] &&
        $comp -std=$std $flags -DGPUPROF_CUDA -DGPUPROF_NO_GPU_METRICS -DCUDA_FIRST -isystem "$cuda/include" -c "$root/tests/compile/other_tu.c" -o other.o 2>>log &&
        g++ use-O2.o other.o -o use -L"$cuda/lib64" -Wl,-rpath,"$cuda/lib64" -lcudart -ldl -lpthread -lm 2>>log &&
        GPUPROF_GPU_METRICS=1 ./use >/dev/null 2>run.log && grep -q "^gpuprof: .*compiled out of this build (GPUPROF_NO_GPU_METRICS)" run.log
      rc=$?
      [ -n "$left" ] && echo "left in the object: $left" > left.log
      cell_result $rc "$cell_what" left.log log run.log ) &
    throttle
  done
  # The wrappers with GPUPROF_DISABLE in C: they still allocate and free.
  cell "gcc -std=c99 -DGPUPROF_DISABLE with the CUDA wrappers"
  ( cd "$cell_dir" && gcc -std=c99 $flags -DGPUPROF_DISABLE -isystem "$cuda/include" -c "$root/tests/compile/use_all.c" -o use.o 2>log &&
    gcc -std=c99 $flags -DGPUPROF_DISABLE -DCUDA_FIRST -isystem "$cuda/include" -c "$root/tests/compile/other_tu.c" -o other.o 2>>log &&
    gcc use.o other.o -o use -L"$cuda/lib64" -Wl,-rpath,"$cuda/lib64" -lcudart -lpthread -lm 2>>log && ./use >/dev/null 2>>log
    cell_result $? "$cell_what" log ) &
  throttle
else
  echo "note: no nvcc here, the .cu build is not checked"
fi
wait
passes=0; fails=0
for d in cells/*; do
  if [ "$(cat "$d/result" 2>/dev/null)" = pass ]; then passes=$((passes+1))
  else fails=$((fails+1)); cat "$d/result" 2>/dev/null || echo "FAIL: cell $d left no result"; fi
done
echo "compile_matrix: $passes passed, $fails failed ($jobs at a time)"
[ $fails = 0 ]
