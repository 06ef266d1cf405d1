#!/bin/sh
# gpuprof-ranks on a job whose truth is known (tests/ranks_sim.c): 4 ranks
# as torchrun starts them inside an sbatch script (RANK, LOCAL_RANK,
# WORLD_SIZE, and the script's SLURM_PROCID=0), an all-reduce
# inside "backward" that waits for the slowest rank. With rank 3's data
# loading slow (12 ms vs 5 ms a step) the report must name rank 3 and
# "data" as the straggler, the all-reduce as where it waits least, and the
# ranks it delays as slowest in "allreduce"; balanced, it must say there is
# none. --json gives the same; bad input gives one line and exit 2.
# usage: test_ranks_report.sh RANKS_SIM GPUPROF_RANKS PYTHON
set -u
sim=$1; tool=$2; py=$3
. "$(dirname "$0")/check.sh"
rm -f slow.*.json even.*.json
GPUPROF_SUMMARY=slow.%r.json "$sim" --ranks 4 --slow 3 > slow.log 2>&1; code "the job with a straggler runs" 0 $?
expect "rank 0 prints its table" slow.log "rank 0 of 4 on"
expect "and says where the other ranks' summaries are" slow.log "gpuprof: rank 0 of 4 printed its table; every rank's summary is in 'slow.%r.json' (%r the rank): gpuprof-ranks slow.\*.json compares them"
[ "$(grep -c '== gpuprof' slow.log)" = 1 ] && ok || bad "only rank 0 prints a table ($(grep -c '== gpuprof' slow.log) tables)"
expect "each rank's rank is torchrun's RANK, not the sbatch script's SLURM_PROCID=0" slow.2.json '"rank":2,.*"rank_source":"RANK"' 
"$tool" slow.0.json slow.1.json slow.2.json slow.3.json > slow.out; code "gpuprof-ranks reads the 4 summaries" 0 $?
# --html: the same report as one self-contained page, the straggler's bar red
"$tool" --html ranks.html slow.0.json slow.1.json slow.2.json slow.3.json > html.out; code "gpuprof-ranks --html" 0 $?
expect "--html: the straggler's range, rank by rank" ranks.html "<h2 id=by_rank>data per step, rank by rank (the straggler's range)</h2>"
expect "--html: rank 3's bar is the red one" ranks.html "fill='#c0392b'><title>rank 3: "
expect "--html: the report's straggler line" ranks.html "straggler: rank 3 -- &quot;data&quot;"
if grep -Eq '<script|(src|href)=' ranks.html; then bad "--html: the page has a script or a reference outside itself"; else ok; fi
cat slow.out
expect "the heading" slow.out "^4 ranks (world size 4), 16 counted steps"
expect "the straggler is rank 3, late in data" slow.out "^straggler: rank 3 -- \"data\" "
expect "it waits least in the all-reduce" slow.out "it waits least in \"allreduce\""
expect "the cost to the others" slow.out "the other ranks wait ~.* per step for it (.*% of the .* step)"
expect "allreduce is a communication range, rank 3 the fastest in it" slow.out "^allreduce  *comm .*  *3  *[0-9]*%"
expect "data: rank 3 the slowest" slow.out "^data  .*  3  *[0-2]  *[0-9]*%"
"$tool" --json slow.3.json slow.1.json slow.0.json slow.2.json > slow.json.out; code "--json" 0 $?
"$py" - slow.json.out <<'PY' && ok || bad "--json: the straggler and the fields SPEC 10 names"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ranks"] == 4 and d["world_size"] == 4 and d["steps"] == 16, d
s = d["straggler"]
assert s["rank"] == 3 and s["range"] == "data" and s["excess_ns"] > 4e6 and 0.2 < s["wait_cost_share"] < 0.8, s
r = {x["name"]: x for x in d["ranges"]}
assert r["allreduce"]["comm"] and r["allreduce"]["fastest_rank"] == 3, r["allreduce"]
assert not r["data"]["comm"] and r["data"]["slowest_rank"] == 3 and r["data"]["skew"] > 0.5, r["data"]
assert set(r["data"]) == {"name", "comm", "min_ns", "median_ns", "max_ns", "slowest_rank", "fastest_rank", "skew"}
print("--json: straggler rank %d in %s, +%.1f ms per step, %.0f%% of the step" % (s["rank"], s["range"], s["excess_ns"] / 1e6, 100 * s["wait_cost_share"]))
PY
GPUPROF_SUMMARY=even.%r.json "$sim" --ranks 4 > even.log 2>&1; code "the balanced job runs" 0 $?
"$tool" even.0.json even.1.json even.2.json even.3.json > even.out; code "gpuprof-ranks on the balanced job" 0 $?
cat even.out
expect "balanced: no straggler" even.out "^no straggler"
# each rank samples its own GPU (SPEC 17; the simulated NVML's four, by the
# local rank): rank 2's is under its power cap, and the report says so
if [ -n "${SIMNVML:-}" ]; then
  rm -f dev.*.json
  GPUPROF_NVML_PATH="$SIMNVML" GPUPROF_DEVICE_EVERY_MS=20 SIMNVML_DEVICES=4 SIMNVML_THROTTLE_DEVICE=2 GPUPROF_SUMMARY=dev.%r.json \
    "$sim" --ranks 4 --steps 30 > dev.log 2>&1; code "the job with a throttling GPU runs" 0 $?
  expect "rank 2 reads GPU 2 (its local rank)" dev.2.json '"device":{"index":2,.*"picked_by":"the local rank"'
  "$tool" dev.0.json dev.1.json dev.2.json dev.3.json > dev.out; code "gpuprof-ranks on it" 0 $?
  cat dev.out
  expect "each rank's GPU" dev.out "^  rank 0      1980 MHz   never"
  expect "rank 2's GPU held back" dev.out "^  rank 2      1755 MHz   power cap 100% of its samples"
  expect "the throttled GPU named" dev.out "^throttled GPU: rank 2 -- SM clock 1755 MHz vs median 1980 MHz, power cap 100% of its samples"
  "$tool" --json dev.0.json dev.1.json dev.2.json dev.3.json > dev.json.out; code "--json" 0 $?
  expect "--json: the throttled rank" dev.json.out '"throttled_rank":2'
  "$tool" slow.0.json slow.1.json slow.2.json slow.3.json | grep -q "GPU over the run" && bad "no device telemetry: no GPU lines" || ok
fi
# the merged trace: a process per rank, on one timeline (the all-reduce ends together)
rm -f t.*.json merged.json
GPUPROF_REPORT=off GPUPROF_TRACE=t.%r.json "$sim" --ranks 4 --slow 3 --steps 6 > traces.log 2>&1; code "the job writes each rank's trace" 0 $?
"$tool" --trace t.2.json t.0.json t.3.json t.1.json -o merged.json > merge.out; code "--trace ... -o merges" 0 $?
cat merge.out
expect "merge: what it wrote" merge.out "^merged.json: 4 ranks, [0-9]* events, one process per rank"
"$py" - merged.json t.0.json t.1.json t.2.json t.3.json <<'PY' && ok || bad "the merged trace: one process per rank, pid rank+1, names, all events, one timeline (causal all-reduces)"
import json, sys
d = json.load(open(sys.argv[1]))
ins = [json.load(open(p)) for p in sys.argv[2:]]
assert sorted(set(e["pid"] for e in d)) == [1, 2, 3, 4], "pid = rank + 1, never 0"
names = sorted(e["args"]["name"] for e in d if e.get("name") == "process_name")
assert len(names) == 4 and all(n.startswith("rank %d \u00b7 " % r) for r, n in enumerate(names)), names
assert len(d) == sum(len(t) for t in ins), (len(d), [len(t) for t in ins])
# No rank leaves the barrier before every rank has reached it: on a true
# timeline each step's earliest end comes after its latest start (the ends
# scatter on a loaded machine, as each rank waits to be scheduled; starts
# and ends never contradict each other).
spans = {}
for e in d:
    if e.get("name") == "allreduce" and e.get("ph") == "X":
        spans.setdefault(e["pid"], []).append((e["ts"], e["ts"] + e["dur"]))
n = min(len(v) for v in spans.values())
slack = [min(spans[p][k][1] for p in spans) - max(spans[p][k][0] for p in spans) for k in range(n)]
assert len(spans) == 4 and n >= 6 and min(slack) > -200, "an all-reduce ended on one rank %.0f us before another rank entered it: the timelines are not aligned" % -min(slack)
print("merged: 4 processes, %d events; in each all-reduce every rank entered before the first left (by %.0f us at least)" % (len(d), min(slack)))
PY
# --hta DIR makes DIR (and the folders above it) when it does not exist yet
rm -rf hta_new; : > hta_file
"$tool" --trace t.0.json t.1.json t.2.json t.3.json --hta hta_new/job1 > hta.out 2>&1; code "--hta into a directory not made yet" 0 $?
expect "--hta: rank 3's file" hta.out "^hta_new/job1/rank3.json: rank 3's trace for HolisticTraceAnalysis ([0-9]* events)$"
"$py" -c 'import json, sys; d = json.load(open("hta_new/job1/rank2.json")); sys.exit(d["distributedInfo"]["rank"] != 2 or not d["traceEvents"])' && ok || bad "--hta: rank 2's file is JSON with its rank and its events"
"$tool" --trace t.0.json --hta hta_file/x > hta_bad.out 2>&1; code "--hta where a file stands in the way" 2 $?
expect "--hta: a file in the way is named" hta_bad.out "^gpuprof-ranks: cannot make the directory hta_file/x: "
"$tool" --trace t.0.json t.0.json -o bad.json > dup.out 2>&1; code "the same rank's trace twice" 2 $?
expect "the same trace twice: named" dup.out "are both rank 0"
echo '[' > norank.json
"$tool" --trace norank.json -o bad.json > norank.out 2>&1; code "a trace without a rank" 2 $?
expect "a trace without a rank: says how to write one" norank.out "is not the trace of a rank"
"$tool" slow.0.json > one.out 2>&1; code "one summary" 2 $?
expect "one summary: says what to give" one.out "one summary is not several ranks"
"$tool" slow.0.json slow.0.json > two.out 2>&1; code "the same rank twice" 2 $?
expect "the same rank twice: named" two.out "are both rank 0"
"$tool" slow.0.json slow.1.json > part.out 2>/dev/null; code "two of four ranks still report" 0 $?
"$tool" slow.0.json slow.1.json 2>&1 >/dev/null | grep -q "the world size is 4 but there are figures of 2 ranks" && ok || bad "missing ranks are warned about"
# NCCL on the GPU (torchrun + NCCL with kernel capture): the CPU does not
# wait in the all-reduce (it is queued), the GPU does -- in NCCL's kernels.
# Four ranks' summaries written as gpuprof writes them (the fields the tool
# reads): rank 2's data loading is slow, and its NCCL kernel is the
# shortest. The straggler line must name rank 2, "data", and the kernel on
# the GPU; --json the same.
"$py" - <<'PY' || bad "writing the NCCL job's summaries"
import json
for r in range(4):
    data = 9e6 if r == 2 else 4e6
    nccl = 0.3e6 if r == 2 else 5.3e6            # per step: the others wait ~5 ms for rank 2
    def rng(name, ns):
        return {"name": name, "count": 20, "self_ns": ns * 20, "p50_ns": ns, "gpu": None}
    d = {"schema": "gpuprof-summary", "schema_version": 5,
         "run": {"rank": r, "world_size": 4},
         "steps": {"counted": 20, "time": {"p50_ns": 15e6}},
         "ranges": [rng("data", data), rng("forward", 2e6 + 1e3 * r), rng("backward", 3e6 - 1e3 * r)],
         "kernels": [{"name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "count": 20, "sum_ns": nccl * 20, "p50_ns": nccl},
                     {"name": "sgemm_128x128x8_nn", "count": 40, "sum_ns": 4e7, "p50_ns": 1e6}]}
    json.dump(d, open("nccl.%d.json" % r, "w"))
PY
"$tool" nccl.0.json nccl.1.json nccl.2.json nccl.3.json > nccl.out; code "gpuprof-ranks on the NCCL job" 0 $?
cat nccl.out
expect "NCCL's kernel is a communication row of the GPU table (the name column as wide as it)" nccl.out "^ncclDevKernel_AllReduce_Sum_f32_RING_LL comm .*  2  *0%$"
grep -q "^sgemm" nccl.out && bad "a compute kernel became a row" || ok
expect "the straggler: rank 2, late in data, waiting least in NCCL's kernel on the GPU" nccl.out \
    '^straggler: rank 2 -- "data" 9.00 ms per step vs median 4.00 ms (+125%); it waits least in "ncclDevKernel_AllReduce_Sum_f32_RING_LL" on the GPU (300.0 us vs median 5.30 ms); the other ranks wait ~5.00 ms per step for it (33% of the 15.00 ms step)$'
"$tool" --json nccl.0.json nccl.1.json nccl.2.json nccl.3.json > nccl.json.out; code "--json on the NCCL job" 0 $?
"$py" - nccl.json.out <<'PY' && ok || bad "--json: the NCCL kernel in gpu_ranges, the straggler waiting there"
import json, sys
d = json.load(open(sys.argv[1]))
s = d["straggler"]
assert s["rank"] == 2 and s["range"] == "data" and s["wait_range"] == "ncclDevKernel_AllReduce_Sum_f32_RING_LL", s
g = {x["name"]: x for x in d["gpu_ranges"]}
assert set(g) == {"ncclDevKernel_AllReduce_Sum_f32_RING_LL"} and g["ncclDevKernel_AllReduce_Sum_f32_RING_LL"]["comm"], g
assert all(x["name"] != "ncclDevKernel_AllReduce_Sum_f32_RING_LL" for x in d["ranges"]), d["ranges"]
PY
check_done test_ranks_report
