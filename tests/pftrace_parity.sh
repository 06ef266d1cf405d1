#!/bin/sh
# The Perfetto trace against the JSON trace of the same run, read by
# Perfetto's own decoder (check_pftrace.py): the simulated-GPU demo (GPU
# ranges, flows), with kernel capture (kernels, CUDA calls, launch flows),
# with its ranges timed by their kernels, a flight-recorder dump, GPU work
# that overlaps on one stream (sim_demo --graphs: lanes, a graph launch's
# arrow to each of its kernels) with kernel capture and with ranges timed
# by their kernels; the CUDA demo's shapes with copies (cudaMemcpy,
# cudaMemcpyAsync) and synchronizations (sim_demo --mlp: every copy's arrow
# from its call, none from a synchronization); and the
# merged Perfetto trace of two ranks against the ranks' own traces.
# sim_demo's clock is simulated: two runs are the same run.
# Writes into a fresh temporary directory, removed when all pass.
#   usage: pftrace_parity.sh PYTHON BUILD_DIR SOURCE_DIR
py=$1; build=$2; src=$3
check="$py $src/tests/check_pftrace.py"
dir=$(mktemp -d "${TMPDIR:-/tmp}/gpuprof-pftrace-XXXXXX") && cd "$dir" || exit 1
fail() { echo "pftrace_parity: $*; files kept in $dir"; exit 1; }
export GPUPROF_REPORT=off
for f in json pftrace; do
  GPUPROF_TRACE=sim.$f "$build/tests/sim_demo" > sim.$f.out 2>&1 || fail "sim_demo ($f) failed"
  GPUPROF_KERNELS=1 GPUPROF_CUPTI_PATH="$build/tests/libsimcupti.so" GPUPROF_TRACE=kernels.$f "$build/tests/sim_demo" > kernels.$f.out 2>&1 ||
    fail "sim_demo with kernel capture ($f) failed"
  GPUPROF_GPU=kernels GPUPROF_CUPTI_PATH="$build/tests/libsimcupti.so" GPUPROF_TRACE=fromk.$f "$build/tests/sim_demo" > fromk.$f.out 2>&1 ||
    fail "sim_demo with GPUPROF_GPU=kernels ($f) failed"
  GPUPROF_TRACE_RING_MB=1 "$build/tests/sim_demo" --flight flight.$f > flight.$f.out 2>&1 || fail "sim_demo --flight ($f) failed"
  GPUPROF_KERNELS=1 GPUPROF_CUPTI_PATH="$build/tests/libsimcupti.so" GPUPROF_TRACE=graphs.$f "$build/tests/sim_demo" --graphs > graphs.$f.out 2>&1 ||
    fail "sim_demo --graphs with kernel capture ($f) failed"
  GPUPROF_GPU=kernels GPUPROF_CUPTI_PATH="$build/tests/libsimcupti.so" GPUPROF_TRACE=graphsk.$f "$build/tests/sim_demo" --graphs > graphsk.$f.out 2>&1 ||
    fail "sim_demo --graphs with GPUPROF_GPU=kernels ($f) failed"
  GPUPROF_KERNELS=1 GPUPROF_CUPTI_PATH="$build/tests/libsimcupti.so" GPUPROF_TRACE=mlp.$f "$build/tests/sim_demo" --mlp > mlp.$f.out 2>&1 ||
    fail "sim_demo --mlp with kernel capture ($f) failed"
done
for t in sim kernels fromk flight graphs graphsk mlp; do
  $check $t.pftrace $t.json || fail "$t: the Perfetto and the JSON trace differ"
done
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r GPUPROF_KERNELS=1 GPUPROF_CUPTI_PATH="$build/tests/libsimcupti.so" GPUPROF_TRACE=rank.%r.pftrace \
    "$build/tests/sim_demo" > rank$r.out 2>&1 || fail "sim_demo as rank $r failed"
done
"$build/gpuprof-ranks" --trace rank.0.pftrace rank.1.pftrace -o ranks.pftrace > merge.out 2>&1 || fail "gpuprof-ranks could not merge: $(cat merge.out)"
$check ranks.pftrace --ranks rank.0.pftrace rank.1.pftrace || fail "the merged Perfetto trace differs from its ranks' traces"
cd / && rm -rf "$dir"
