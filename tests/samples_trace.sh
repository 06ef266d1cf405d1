#!/bin/sh
# CPU samples in the Perfetto trace (SPEC 16): test_samples run with a
# .pftrace; Perfetto's own decoder (check_pftrace.py --samples) must find
# every sample the summary kept, each with its interned call stack, the
# same count per leaf function.
#   usage: samples_trace.sh PYTHON TEST_SAMPLES SOURCE_DIR
py=$1; bin=$2; src=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/gpuprof-samples-XXXXXX") && cd "$dir" || exit 1
CHECK_WORKDIR="$dir" GPUPROF_TRACE=samples.pftrace "$bin" > run.out 2>&1 || { cat run.out; echo "samples_trace: test_samples failed; files kept in $dir"; exit 1; }
"$py" "$src/tests/check_pftrace.py" samples.pftrace --samples samples.summary.json || { echo "samples_trace: files kept in $dir"; exit 1; }
"$py" "$src/tests/check_pftrace.py" samples.pftrace > check.out || { cat check.out; echo "samples_trace: the trace is not whole; files kept in $dir"; exit 1; }
cd / && rm -rf "$dir"
