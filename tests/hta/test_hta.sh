#!/bin/sh
# The ranks' traces in HolisticTraceAnalysis (SPEC 10, 13): two ranks of the
# simulated-GPU demo with kernel capture (RANK/WORLD_SIZE as torchrun sets
# them), `gpuprof-ranks --trace ... --hta DIR` writing them as HTA reads a
# trace (an object with "distributedInfo" and "traceEvents"; gpuprof streams
# the array form a killed run leaves readable), then HTA's TraceAnalysis
# loads both ranks and its temporal breakdown runs: its GPU busy share must
# agree with gpuprof's own (verdict.gpu_busy_share); it reads gpuprof's steps
# (ProfilerStep#N slices) as its iterations, each with the loop's kernels, and
# sees every kernel launched before its last iteration (which it leaves out).
# usage: test_hta.sh HTA_PYTHON SIM_DEMO LIBSIMCUPTI GPUPROF_RANKS
set -u
py=$1; demo=$2; cupti=$3; tool=$4
. "$(dirname "$0")/../check.sh"
rm -rf t.*.json s.*.json hta_traces       # gpuprof-ranks --hta makes the directory
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 GPUPROF_KERNELS=1 GPUPROF_CUPTI_PATH=$cupti GPUPROF_REPORT=off GPUPROF_TRACE=t.%r.json GPUPROF_SUMMARY=s.%r.json \
    "$demo" > demo.$r.out 2>&1
  code "rank $r of the simulated-GPU demo, kernel capture on" 0 $?
done
"$tool" --trace t.0.json t.1.json --hta hta_traces > hta.out 2>&1; code "gpuprof-ranks --trace ... --hta" 0 $?
cat hta.out
expect "rank 0's trace for HTA" hta.out "^hta_traces/rank0.json: rank 0's trace for HolisticTraceAnalysis ([0-9]* events)$"
expect "rank 1's trace for HTA" hta.out "^hta_traces/rank1.json: rank 1's trace for HolisticTraceAnalysis ([0-9]* events)$"
"$py" - hta_traces s.0.json s.1.json t.0.json <<'PY' && ok || bad "HTA loads both ranks; its temporal breakdown agrees with gpuprof's GPU busy share and sees every kernel of the iterations it keeps; its iterations are gpuprof's steps"
import json, logging, sys
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
b = a.get_temporal_breakdown(visualize=False)
assert sorted(b["rank"].tolist()) == [0, 1], b
# The trace's steps are ProfilerStep#N slices (Kineto's convention): HTA reads them as iterations and,
# as it does with Kineto's traces, leaves out the work launched after the last one began.
events = [json.loads(l.strip().rstrip(",")) for l in open(sys.argv[4]) if l.startswith('{"ph":"X"')]
steps = sorted(e["ts"] for e in events if e["name"].startswith("ProfilerStep#"))
launched = {e["args"]["correlation"]: e["ts"] for e in events if e.get("cat") == "cuda_runtime"}
kernels = [e for e in events if e.get("cat") == "kernel"]
kept = sum(1 for e in kernels if launched.get(e["args"]["correlation"], 0) < steps[-1])
assert len(kernels) - kept < len(kernels) / 100, (len(kernels), kept)
for r, path in ((0, sys.argv[2]), (1, sys.argv[3])):
    ours = json.load(open(path))["verdict"]["gpu_busy_share"]
    row = b[b["rank"] == r].iloc[0]
    theirs = 1 - row["idle_time_pctg"] / 100
    assert abs(theirs - ours) < 0.02, "rank %d: HTA busy %.3f, gpuprof %.3f" % (r, theirs, ours)
    df = a.t.get_trace(r)
    sym = a.t.symbol_table.get_sym_table()
    k = df[df["stream"].ne(-1) & df["cat"].map(lambda c: sym[c] == "kernel")]
    assert len(k) == kept, "rank %d: HTA sees %d kernels, the trace has %d launched before its last step began" % (r, len(k), kept)
    per = k.groupby("iteration").size()
    assert per.nunique() == 1 and per.iloc[0] * len(per) == kept, "rank %d: kernels per iteration differ: %s" % (r, per.value_counts())
    print("rank %d: HTA temporal breakdown: GPU busy %.1f%% (gpuprof: %.1f%%), idle %.0f us of %.0f us; %d kernels, %d per iteration" %
          (r, 100 * theirs, 100 * ours, row["idle_time(us)"], row["kernel_time(us)"], len(k), per.iloc[0]))
it = a.get_profiler_steps()
# ProfilerStep#N is gpuprof's step N (the report's, the summary's): the first GPUPROF_STEP ends none
assert list(it) == list(range(1, len(steps))), (it[:3], it[-3:], len(steps))
print("HTA's iterations: %d (ProfilerStep#1 to #%d; the last, #%d, left out as HTA does)" % (len(it), it[-1], len(steps)))
PY
check_done test_hta
