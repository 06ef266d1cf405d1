#!/bin/sh
# The MPI example (examples/train_ddp.c, built with GPUPROF_MPI) as a job: 4
# ranks started by mpiexec. With rank 3's data loading slow: each rank takes
# its rank from the MPI launcher's variables and writes its own summary;
# only rank 0 prints its table, and inside MPI_Finalize the cross-rank
# report naming rank 3 and "data", with the all-reduce as where it waits
# least, the clock offsets and their bound, and train_ddp.ranks.json;
# gpuprof-ranks on the summaries agrees (and skips the cross-rank JSON that
# its glob takes in); rank 0 merges the ranks' traces (t.ranks.json), times
# aligned by the measured offsets (gpuprof-ranks --trace uses them too). Balanced, with gpuprof_shutdown left to MPI_Finalize
# (the hook finishes the session): no straggler, every summary written. With
# one rank's profiling off: the job still ends (that rank joins the
# gather) and the report leaves it out, saying so.
# gpuprof started before MPI (tests/mpi_order.c): registered at the next
# step once MPI runs; with nothing between MPI_Init and MPI_Finalize, rank 0
# says why the ranks were not compared, and no MPI call comes after
# MPI_Finalize (Open MPI would abort the job).
# usage: test_ddp_mpi.sh MPIEXEC NUMPROC_FLAG TRAIN_DDP GPUPROF_RANKS PYTHON MPI_ORDER
set -u
mpiexec=$1; np=$2; ddp=$3; tool=$4; py=$5; order=$6
. "$(dirname "$0")/check.sh"
# Under AddressSanitizer (CI's second build): Open MPI leaves its own
# allocations at exit (none of gpuprof's: every other test and valgrind check
# those), so leak checking is off for the ranks.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"; export ASAN_OPTIONS
job() {     # job LOG ARGS...: 4 ranks, at most 100 s (a rank missing from a collective hangs)
    log=$1; shift
    timeout 100 "$mpiexec" "$np" 4 "$ddp" "$@" > "$log" 2>&1 < /dev/null
}

rm -f train_ddp.*.json t.*.json
GPUPROF_TRACE=t.%r.json job ddp.out --slow-rank 3; code "mpiexec -n 4 train_ddp --slow-rank 3" 0 $?
cat ddp.out
expect "rank 0's table names the rank and the world size" ddp.out 'rank 0 of 4 on'
expect "rank 0 says where the summaries are and that MPI_Finalize compares them" ddp.out \
    "gpuprof: rank 0 of 4 printed its table; every rank's summary is in 'train_ddp.%r.json' (%r the rank); MPI_Finalize compares them"
[ "$(grep -c '^== gpuprof [^:]' ddp.out)" = 1 ] && ok || bad "only rank 0 prints a table ($(grep -c '^== gpuprof [^:]' ddp.out))"
expect "the cross-rank report, gathered at MPI_Finalize" ddp.out "^== gpuprof: the job's 4 ranks, gathered at MPI_Finalize (GPUPROF_MPI) ==$"
expect "its heading" ddp.out "^4 ranks (world size 4), 56 counted steps"
expect "the straggler: rank 3, late in data, waiting least in allreduce" ddp.out \
    '^straggler: rank 3 -- "data" .* it waits least in "allreduce" .*; the other ranks wait ~.* per step for it (.*% of the .* step)'
expect "the clock offsets and their bound" ddp.out "^clocks: the ranks' offsets to rank 0 by ping-pong (the fastest of 20+ round trips): at most .* (rank [123]), each known within +-.*; \(none beyond its bound\|[1-3] ranks* beyond the bound\)"
expect "the JSON's path" ddp.out "^the same as JSON: train_ddp.ranks.json"
expect "the rank comes from the MPI launcher" train_ddp.2.json '"rank_source":"OMPI_COMM_WORLD_RANK"\|"rank_source":"PMI_RANK"'
"$py" - train_ddp.ranks.json <<'PY' && ok || bad "train_ddp.ranks.json: SPEC 10's fields, the straggler, 4 clock offsets with bounds"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "gpuprof-ranks" and d["ranks"] == 4 and d["world_size"] == 4 and d["steps"] == 56, d
s = d["straggler"]
assert s["rank"] == 3 and s["range"] == "data" and s["wait_range"] == "allreduce" and s["excess_ns"] > 3e6 and 0.2 < s["wait_cost_share"] < 0.9, s
r = {x["name"]: x for x in d["ranges"]}
assert r["allreduce"]["comm"] and r["allreduce"]["fastest_rank"] == 3 and r["data"]["slowest_rank"] == 3, r
c = d["clock_sync"]
assert c["method"] == "ping-pong" and [o["rank"] for o in c["offsets"]] == [0, 1, 2, 3], c
assert c["offsets"][0] == {"rank": 0, "offset_ns": 0, "bound_ns": 0, "applied": False}, c["offsets"][0]
# one host: the true offset is 0, so each estimate must be within its own bound, plus what the ranks'
# timelines differ by on one clock: each process anchors its timeline and calibrates the TSC rate on
# its own (4 ranks busy on 2 cores: 2.65 us seen after 0.6 s, against a bound of 431 ns); 20 us is
# still far below any wrong offset (a sign, a unit, another clock: milliseconds and up)
for o in c["offsets"][1:]:
    assert 0 < o["bound_ns"] < 50e6 and abs(o["offset_ns"]) <= o["bound_ns"] + 20000, o
    assert o["applied"] == (abs(o["offset_ns"]) > o["bound_ns"]), o
assert d["not_recorded"] == [], d["not_recorded"]
print("ranks.json: straggler rank %d in %s; clock offsets %s" % (s["rank"], s["range"], ", ".join("r%d %+d ns (+-%d)" % (o["rank"], o["offset_ns"], o["bound_ns"]) for o in c["offsets"][1:])))
PY
expect "rank 0 merged the ranks' traces" ddp.out "^merged trace: t.ranks.json (4 ranks, [0-9]* events, a process per rank, on one timeline)$"
"$py" - t.ranks.json t.0.json t.1.json t.2.json t.3.json <<'PY' && ok || bad "t.ranks.json: a process per rank (pid rank+1), every event, the all-reduces causal across ranks"
import json, sys
d = json.load(open(sys.argv[1]))
ins = [json.load(open(p)) for p in sys.argv[2:]]
assert sorted(set(e["pid"] for e in d)) == [1, 2, 3, 4], "pid = rank + 1, never 0"
assert len(d) == sum(len(t) for t in ins), (len(d), [len(t) for t in ins])
assert all(e["ts"] >= 0 for e in d if "ts" in e)
# No rank leaves an all-reduce before every rank has entered it: on a true
# timeline each step's earliest end comes after its latest start. (The ends
# themselves scatter by milliseconds on an oversubscribed machine: a rank
# waits to be scheduled after the collective; starts and ends never lie.)
spans = {}
for e in d:
    if e.get("name") == "allreduce" and e.get("ph") == "X":
        spans.setdefault(e["pid"], []).append((e["ts"], e["ts"] + e["dur"]))
n = min(len(v) for v in spans.values())
assert n >= 50, n
slack = [min(spans[p][k][1] for p in spans) - max(spans[p][k][0] for p in spans) for k in range(n)]
assert min(slack) > -50, "an all-reduce ended on one rank %.0f us before another rank entered it: the ranks' clocks are not aligned" % -min(slack)
print("t.ranks.json: 4 processes, %d events; in each of %d all-reduces every rank entered before the first left (by %.1f us at least)" % (len(d), n, min(slack)))
PY
"$tool" train_ddp.ranks.json --trace t.*.json -o merged.json > merge.out 2> merge.err; code "gpuprof-ranks --trace t.*.json (the merged one among them)" 0 $?
expect "gpuprof-ranks uses the measured offsets" merge.out "^merged.json: 4 ranks, .* and the clock offsets measured at MPI_Finalize (train_ddp.ranks.json)"
expect "and skips the merged trace" merge.err "t.ranks.json is a merged trace already: skipped"
"$tool" train_ddp.*.json > ranks.out 2> ranks.err; code "gpuprof-ranks train_ddp.*.json" 0 $?
cat ranks.out
expect "gpuprof-ranks agrees: rank 3, data" ranks.out '^straggler: rank 3 -- "data" .* it waits least in "allreduce"'
expect "gpuprof-ranks skips rank 0's cross-rank JSON, saying so" ranks.err "train_ddp.ranks.json is a cross-rank report already .*: skipped"

# the same job writing Perfetto traces: rank 0 merges them into a Perfetto trace
rm -f train_ddp.*.json p.*.pftrace
GPUPROF_TRACE=p.%r.pftrace job pf.out --slow-rank 3; code "mpiexec -n 4 train_ddp --slow-rank 3, Perfetto traces" 0 $?
expect "rank 0 merged the ranks' Perfetto traces" pf.out "^merged trace: p.ranks.pftrace (4 ranks, [0-9]* events, a process per rank, on one timeline)$"
"$py" - p.ranks.pftrace <<'PY' && ok || bad "the merged Perfetto trace: whole packets, a process per rank"
import sys
raw = open(sys.argv[1], 'rb').read()
i, n = 0, 0
while i < len(raw):
    assert raw[i] == 0x0A, 'not a packet frame at byte %d' % i
    j, ln, s = i + 1, 0, 0
    while raw[j] & 0x80:
        ln |= (raw[j] & 0x7F) << s; s += 7; j += 1
    ln |= raw[j] << s
    i, n = j + 1 + ln, n + 1
assert i == len(raw), 'the last packet is cut'
for r in range(4):
    assert ('rank %d \u00b7 ' % r).encode() in raw, 'no process for rank %d' % r
print('p.ranks.pftrace: %d packets, a process per rank' % n)
PY

rm -f train_ddp.*.json t.*.json p.*.pftrace
GPUPROF_TRACE=t.%r.json GPUPROF_MERGE_TRACES=0 job even.out --no-shutdown; code "balanced, gpuprof_shutdown left to MPI_Finalize" 0 $?
[ -f t.3.json ] && [ ! -f t.ranks.json ] && ! grep -q "^merged trace" even.out && ok || bad "GPUPROF_MERGE_TRACES=0: the ranks' traces, none merged"
sed -n '/^== gpuprof: the job/,$p' even.out
# 4 ranks on 2 cores: a rank the machine slowed once (a 12% slower "data" under ASan, beside another
# VM's load) is no imbalance of the job's; a second run must then agree
if ! grep -q "^no straggler" even.out; then
  echo "balanced: a straggler in the first run (a loaded machine?); a second run must show none"
  rm -f train_ddp.*.json t.*.json
  GPUPROF_TRACE=t.%r.json GPUPROF_MERGE_TRACES=0 job even.out --no-shutdown
  sed -n '/^== gpuprof: the job/,$p' even.out
fi
expect "balanced: no straggler" even.out "^no straggler"
[ -f train_ddp.0.json ] && [ -f train_ddp.1.json ] && [ -f train_ddp.2.json ] && [ -f train_ddp.3.json ] && ok || bad "the hook finished every rank's session: 4 summaries ($(ls train_ddp.*.json))"
expect "balanced: rank 0's table too" even.out "rank 0 of 4 on"

rm -f train_ddp.*.json
job off.out --off-rank 1 --slow-rank 3; code "rank 1 with GPUPROF_OFF=1: the job still ends" 0 $?
sed -n '/^== gpuprof: the job/,$p' off.out
expect "the ranks that recorded" off.out "^3 ranks (world size 4)"
expect "the one that did not, said so" off.out "^1 rank recorded nothing (GPUPROF_OFF, or no range) and is left out"
expect "still the straggler" off.out '^straggler: rank 3 -- "data"'
grep -q '"not_recorded":\[1\]' train_ddp.ranks.json && ok || bad "ranks.json: rank 1 not recorded"

timeout 100 "$mpiexec" "$np" 2 "$order" > order.out 2>&1 < /dev/null; code "gpuprof started before MPI_Init" 0 $?
expect "registered at a step once MPI ran: the ranks compared at MPI_Finalize" order.out "^== gpuprof: the job's 2 ranks, gathered at MPI_Finalize (GPUPROF_MPI) ==$"
expect "the ranges of both ranks" order.out "^work  "
timeout 100 "$mpiexec" "$np" 2 "$order" --no-step > nostep.out 2>&1 < /dev/null; code "nothing of gpuprof's between MPI_Init and MPI_Finalize: the job still ends well" 0 $?
expect "rank 0 says why the ranks were not compared" nostep.out "^gpuprof: MPI was finalized before gpuprof saw it initialized, so the ranks were not compared (call gpuprof_init() or GPUPROF_STEP() after MPI_Init; gpuprof-ranks compares the summaries)$"
expect "and prints its table at exit" nostep.out "rank 0 of 2 on"
grep -q "after MPI_FINALIZE\|after finalizing" nostep.out && bad "an MPI call after MPI_Finalize" || ok
# A rank that never calls gpuprof never registers: no collective is made, so
# nobody hangs; rank 0 waits GPUPROF_MPI_TIMEOUT for it and says so, and when
# rank 0 is the one, the other gives up after three times that.
GPUPROF_MPI_TIMEOUT=1 timeout 60 "$mpiexec" "$np" 2 "$order" --only 0 > only0.out 2>&1 < /dev/null; code "only rank 0 uses gpuprof: the job ends" 0 $?
expect "rank 0 says rank 1 did not join" only0.out "^gpuprof: 1 rank did not join the comparison (rank 1): no gpuprof call after MPI_Init, or it reached MPI_Finalize more than 1 s after rank 0 (GPUPROF_MPI_TIMEOUT)$"
GPUPROF_MPI_TIMEOUT=1 timeout 60 "$mpiexec" "$np" 2 "$order" --only 1 > only1.out 2>&1 < /dev/null; code "rank 0 never uses gpuprof: the job ends" 0 $?
expect "rank 1 gives up on rank 0 after 3x the timeout" only1.out "^gpuprof: rank 1 waited 3 s at MPI_Finalize for rank 0 to compare the ranks, in vain (rank 0 made no gpuprof call after MPI_Init?); gpuprof-ranks compares the summaries$"
# Ranks in different directories (as on hosts without a shared file system):
# rank 0 cannot read rank 1's trace, says so and how to merge them, and
# still writes the report and its JSON.
rm -rf wd0 wd1; mkdir wd0 wd1
GPUPROF_TRACE=t.%r.json GPUPROF_SUMMARY=s.%r.json timeout 100 "$mpiexec" "$np" 1 -wdir wd0 "$order" : "$np" 1 -wdir wd1 "$order" > wdir.out 2>&1 < /dev/null
code "ranks in two directories" 0 $?
expect "rank 0 cannot read rank 1's trace: says so, and how to merge them" wdir.out "^no merged trace: rank 0 cannot read t.1.json: No such file or directory (another host's file? merge them where they all are: gpuprof-ranks s.ranks.json --trace TRACES... -o merged.json)$"
[ -f wd0/s.ranks.json ] && [ -f wd1/t.1.json ] && [ ! -f wd0/t.ranks.json ] && ok || bad "the cross-rank JSON on rank 0's side, rank 1's trace on its own, no merged trace"
check_done test_ddp_mpi
