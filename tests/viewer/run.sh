#!/bin/sh
# The viewer test: the traces a user gets, each opened in the Perfetto UI and
# in chrome://tracing's trace-viewer (check_viewers.py): the demo's, the
# simulated-GPU demo's (GPU stream tracks, flow arrows, counters), a
# flight-recorder dump (gpuprof_write_trace without a trace file; older
# events fell out), the trace of a run killed by SIGKILL mid-write, and the
# simulated-GPU demo with kernel capture (kernels, CUDA calls, launch arrows)
# and with its ranges timed by their kernels (GPUPROF_GPU=kernels: the ranges'
# track beside the kernels'),
# the demo as rank 1 of 2 under torchrun (the rank's process metadata), and
# the four ranks' traces of tests/ranks_sim merged by gpuprof-ranks; then
# Perfetto's format (.pftrace) of the demo, the simulated GPU, kernel capture,
# a flight-recorder dump, merged ranks and a killed run, in the Perfetto UI;
# and GPU work that overlaps on one stream (sim_demo --graphs: a graph's
# branches, programmatic dependent launches; with kernel capture, and with
# ranges timed by their kernels) in both formats, which the Perfetto UI must
# show alike (every slice, the same arrows), as it must kernel capture's;
# and train_evals's CPU samples (GPUPROF_SAMPLE=1) in a .pftrace: every one.
# Writes into a fresh temporary directory, removed when all pass.
#   usage: run.sh PYTHON BUILD_DIR SOURCE_DIR
py=$1; build=$2; src=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/gpuprof-viewers-XXXXXX") && cd "$dir" || exit 1
fail() { echo "viewers: $*; files kept in $dir"; exit 1; }
GPUPROF_TRACE=demo.trace.json GPUPROF_REPORT=off "$build/train_mlp" > demo.out 2>&1 || fail "the demo failed"
GPUPROF_REPORT=off "$build/tests/sim_demo" > sim.out 2>&1 || fail "sim_demo failed"
GPUPROF_TRACE_RING_MB=1 GPUPROF_REPORT=off "$build/tests/sim_demo" --flight flight.trace.json > flight.out 2>&1 || fail "sim_demo --flight failed"
GPUPROF_KERNELS=1 GPUPROF_CUPTI_PATH="$build/tests/libsimcupti.so" GPUPROF_TRACE=kernels.trace.json GPUPROF_REPORT=off "$build/tests/sim_demo" > kernels.out 2>&1 ||
  fail "sim_demo with kernel capture failed"
GPUPROF_GPU=kernels GPUPROF_CUPTI_PATH="$build/tests/libsimcupti.so" GPUPROF_TRACE=fromk.trace.json GPUPROF_REPORT=off "$build/tests/sim_demo" > fromk.out 2>&1 ||
  fail "sim_demo with GPUPROF_GPU=kernels failed"
grep -q 'ranges (from their kernels)' fromk.trace.json || fail "GPUPROF_GPU=kernels: no ranges track in the trace"
RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 GPUPROF_TRACE=rank.%r.trace.json GPUPROF_REPORT=off "$build/train_mlp" > rank.out 2>&1 || fail "the demo as rank 1 failed"
grep -q '"distributedInfo": {"rank": 1, "world_size": 2}' rank.1.trace.json || fail "the rank's trace has no distributedInfo"
GPUPROF_REPORT=off GPUPROF_TRACE=ranks.%r.trace.json "$build/tests/ranks_sim" --ranks 4 --slow 3 --steps 6 > ranks.out 2>&1 || fail "ranks_sim failed"
"$build/gpuprof-ranks" --trace ranks.0.trace.json ranks.1.trace.json ranks.2.trace.json ranks.3.trace.json -o merged.trace.json >> ranks.out 2>&1 ||
  fail "gpuprof-ranks could not merge the ranks' traces"
grep -q '"fell_out":[1-9]' flight.trace.json || fail "no event fell out of the flight recorder: the dump does not test a window"
CHECK_WORKDIR="$dir" "$build/tests/test_trace" --die > killed.out 2>&1
[ -s killed.trace.json ] || fail "the killed run left no trace"
tail -c 2 killed.trace.json | grep -q ']' && fail "the killed run's trace is complete: the kill came too late"
# the same in Perfetto's format (.pftrace): the Perfetto UI shows every slice as the file has it
GPUPROF_TRACE=demo.pftrace GPUPROF_REPORT=off "$build/train_mlp" > demo.pf.out 2>&1 || fail "the demo (.pftrace) failed"
GPUPROF_TRACE=sim.pftrace GPUPROF_REPORT=off "$build/tests/sim_demo" > sim.pf.out 2>&1 || fail "sim_demo (.pftrace) failed"
GPUPROF_TRACE_RING_MB=1 GPUPROF_REPORT=off "$build/tests/sim_demo" --flight flight.pftrace > flight.pf.out 2>&1 || fail "sim_demo --flight (.pftrace) failed"
GPUPROF_KERNELS=1 GPUPROF_CUPTI_PATH="$build/tests/libsimcupti.so" GPUPROF_TRACE=kernels.pftrace GPUPROF_REPORT=off "$build/tests/sim_demo" > kernels.pf.out 2>&1 ||
  fail "sim_demo with kernel capture (.pftrace) failed"
GPUPROF_REPORT=off GPUPROF_TRACE=ranks.%r.pftrace "$build/tests/ranks_sim" --ranks 4 --slow 3 --steps 6 > ranks.pf.out 2>&1 || fail "ranks_sim (.pftrace) failed"
"$build/gpuprof-ranks" --trace ranks.0.pftrace ranks.1.pftrace ranks.2.pftrace ranks.3.pftrace -o merged.pftrace >> ranks.pf.out 2>&1 ||
  fail "gpuprof-ranks could not merge the ranks' Perfetto traces"
for f in trace.json pftrace; do
  GPUPROF_KERNELS=1 GPUPROF_CUPTI_PATH="$build/tests/libsimcupti.so" GPUPROF_TRACE=graphs.$f GPUPROF_REPORT=off "$build/tests/sim_demo" --graphs > graphs.$f.out 2>&1 ||
    fail "sim_demo --graphs with kernel capture ($f) failed"
  GPUPROF_GPU=kernels GPUPROF_CUPTI_PATH="$build/tests/libsimcupti.so" GPUPROF_TRACE=graphsk.$f GPUPROF_REPORT=off "$build/tests/sim_demo" --graphs > graphsk.$f.out 2>&1 ||
    fail "sim_demo --graphs with GPUPROF_GPU=kernels ($f) failed"
  # copies (cudaMemcpy, cudaMemcpyAsync) and synchronizations in every step: both formats draw the same arrows
  GPUPROF_KERNELS=1 GPUPROF_CUPTI_PATH="$build/tests/libsimcupti.so" GPUPROF_TRACE=mlp.$f GPUPROF_REPORT=off "$build/tests/sim_demo" --mlp > mlp.$f.out 2>&1 ||
    fail "sim_demo --mlp with kernel capture ($f) failed"
done
grep -q 'stream 7 (2): kernels' graphs.trace.json || fail "sim_demo --graphs: no second lane of the kernels' stream in the trace"
GPUPROF_SAMPLE=1 GPUPROF_TRACE=samples.pftrace GPUPROF_REPORT=off "$build/train_evals" > samples.pf.out 2>&1 || fail "train_evals with CPU samples (.pftrace) failed"
CHECK_WORKDIR="$dir" "$build/tests/test_pftrace" --die > killed.pf.out 2>&1
[ -s killed.pftrace ] || fail "the killed run left no Perfetto trace"
"$py" "$src/tests/viewer/check_viewers.py" --shots shots --same kernels.trace.json kernels.pftrace \
  --same graphs.trace.json graphs.pftrace --same graphsk.trace.json graphsk.pftrace --same mlp.trace.json mlp.pftrace \
  graphs.trace.json graphs.pftrace graphsk.trace.json graphsk.pftrace demo.trace.json sim_demo.trace.json flight.trace.json killed.trace.json kernels.trace.json fromk.trace.json rank.1.trace.json merged.trace.json \
  demo.pftrace sim.pftrace flight.pftrace kernels.pftrace merged.pftrace killed.pftrace samples.pftrace mlp.trace.json mlp.pftrace || fail "a viewer disagrees"
cd / && rm -rf "$dir"
