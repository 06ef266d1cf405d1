#!/bin/sh
# Every check that needs a real NVIDIA GPU, in one run (a few minutes on an
# H100), ending with one summary: what ran, what passed, and the figures the
# README and bench/README.md quote. On a machine without a GPU each check
# still runs and shows the fallback (one line, CPU timing on).
#   test_cuda_real      GPU timing with the real runtime: exact figures
#   test_cuda_kernels   kernel capture with the real libcupti
#   train_mlp_cuda      the CUDA demo: plain, GPUPROF_KERNELS=1, GPUPROF_GPU=kernels
#                       (each: its table, and its trace checked by tests/check_trace.py)
#   train_mlp_cuda_pftrace  the demo with kernel capture writing a Perfetto trace,
#                       decoded by tests/check_pftrace.py (Perfetto's own protos) and
#                       matched with the JSON run's slices by name and count
#   bench_gpu_real      what a range costs with GPU timing and kernel capture
# usage: sh tests/device/run.sh [BUILD_DIR]      (default: build-device)
# Needs cmake, the CUDA toolkit (nvcc on PATH or in /usr/local/cuda/bin) and
# python3; the two tests also need cJSON (libcjson-dev), and are reported as
# not built without it. Logs: BUILD_DIR/device/*.log (and $OUT/device-logs.tar.gz when OUT is set).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
b=${1:-$root/build-device}
case $b in /*) ;; *) b=$PWD/$b ;; esac
run=$b/device
[ -x /usr/local/cuda/bin/nvcc ] && PATH=/usr/local/cuda/bin:$PATH && export PATH
cudalib=$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")")/lib64
mkdir -p "$run" || exit 1
summary=$run/summary.txt
: > "$summary"
passed=0; failed=0; skipped=0
say() { echo "$*" | tee -a "$summary"; }
t0=$(date +%s)

# check NAME DIR COMMAND...: runs COMMAND in DIR (made afresh), its output in $run/NAME.log
check() {
  name=$1; dir=$2; shift 2
  rm -rf "$dir"; mkdir -p "$dir"
  if (cd "$dir" && "$@") > "$run/$name.log" 2>&1; then say "PASS  $name"; passed=$((passed + 1))
  else say "FAIL  $name (exit $?; log: $run/$name.log)"; tail -n 15 "$run/$name.log" | sed 's/^/        /'; failed=$((failed + 1)); fi
}

say "== gpuprof device checks: $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n)"
if command -v nvidia-smi >/dev/null 2>&1; then
  say "   $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n 1) (name, driver, memory)"
else say "   no nvidia-smi: no NVIDIA driver here; every check shows the no-GPU fallback"; fi
say "   nvcc: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo 'not found')"

cmake -S "$root" -B "$b" -DCMAKE_BUILD_TYPE=Release > "$run/configure.log" 2>&1 || { say "FAIL  configure (log: $run/configure.log)"; exit 1; }
targets="train_mlp_cuda bench_gpu_real"
grep -q 'the tests need cJSON' "$run/configure.log" || targets="$targets test_cuda_real test_cuda_kernels"
if ! cmake --build "$b" -j --target $targets > "$run/build.log" 2>&1; then
  say "FAIL  build of $targets (log: $run/build.log)"; tail -n 20 "$run/build.log"; exit 1
fi
say "   built: $targets ($(($(date +%s) - t0)) s)"

for t in test_cuda_real test_cuda_kernels; do
  if [ -x "$b/tests/$t" ]; then check $t "$run/$t" env LD_LIBRARY_PATH="$cudalib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$b/tests/$t"
  else say "SKIP  $t (not built: cJSON missing, apt-get install libcjson-dev)"; skipped=$((skipped + 1)); fi
done

# The demo, three ways (demo VAR=VALUE...: with those set); with a GPU its
# table has GPU columns and its trace is checked.
demo() {
  [ $# -gt 0 ] && export "$@"
  "$b/train_mlp_cuda" > demo.out 2>&1; rc=$?
  cat demo.out
  [ $rc = 0 ] || return 1
  if grep -q 'no CUDA GPU here' demo.out; then return 0; fi
  grep -q 'GPU Total' demo.out && python3 "$root/tests/check_trace.py" train_mlp_cuda.trace.json --expect-name forward --expect-name optimizer
}
check train_mlp_cuda "$run/demo" demo
check train_mlp_cuda_kernels "$run/demo_kernels" demo GPUPROF_KERNELS=1 LD_LIBRARY_PATH="$cudalib"
check train_mlp_cuda_gpu_kernels "$run/demo_gpu_kernels" demo GPUPROF_GPU=kernels LD_LIBRARY_PATH="$cudalib"
# The Perfetto trace of a run with kernel capture: decoded independently,
# and holding the same slices (by name, per thread) as the JSON run above.
# Needs the perfetto and protobuf Python packages (tests/viewer/setup.sh).
pftrace() {
  GPUPROF_KERNELS=1 LD_LIBRARY_PATH="$cudalib" GPUPROF_TRACE=train_mlp_cuda.pftrace "$b/train_mlp_cuda" > demo.out 2>&1 || { cat demo.out; return 1; }
  grep -E '^   trace:|gpuprof: ' demo.out
  grep -q 'no CUDA GPU here' demo.out && return 0
  python3 "$root/tests/check_pftrace.py" train_mlp_cuda.pftrace "$run/demo_kernels/train_mlp_cuda.trace.json" --names
}
if python3 -c 'import perfetto.protos.perfetto.trace.perfetto_trace_pb2' 2>/dev/null; then
  check train_mlp_cuda_pftrace "$run/demo_pftrace" pftrace
else say "SKIP  train_mlp_cuda_pftrace (no perfetto/protobuf for python3: sh tests/viewer/setup.sh)"; skipped=$((skipped + 1)); fi
check bench_gpu_real "$run/bench" env LD_LIBRARY_PATH="$cudalib" "$b/bench_gpu_real"

say ""
say "== figures"
for d in demo demo_kernels demo_gpu_kernels; do
  say "-- train_mlp_cuda ($d)"
  grep -E '^== gpuprof|^   (steps|trace|GPU|verdict|memory):|^Kernels|no CUDA GPU here|gpuprof: ' "$run/$d/demo.out" 2>/dev/null | head -n 12 | tee -a "$summary"
done
say "-- train_mlp_cuda (Perfetto trace)"
grep -E 'slices|FAIL|^   trace:|gpuprof: ' "$run/train_mlp_cuda_pftrace.log" 2>/dev/null | head -n 8 | tee -a "$summary"
say "-- bench_gpu_real"
sed -n '/^bench_gpu_real/,$p' "$run/bench_gpu_real.log" | head -n 20 | tee -a "$summary"

say ""
say "== $passed passed, $failed failed, $skipped skipped, in $(($(date +%s) - t0)) s"
# $OUT (the device tool's folder) takes at most 8 files: the logs go as one archive
if [ -n "${OUT:-}" ]; then cp "$summary" "$OUT/" && tar -czf "$OUT/device-logs.tar.gz" -C "$run" $(cd "$run" && ls *.log) 2>/dev/null; fi
[ $failed = 0 ]
