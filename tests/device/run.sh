#!/bin/sh
# Every check that needs a real NVIDIA GPU, in one run (a few minutes on an
# H100), ending with one summary: what ran, what passed, and the figures the
# README and bench/README.md quote. On a machine without a GPU each check
# still runs and shows the fallback (one line, CPU timing on).
#   test_cuda_real      GPU timing with the real runtime: exact figures
#   test_cuda_kernels   kernel capture with the real libcupti; each kernel's blocks per SM
#                       against cudaOccupancyMaxActiveBlocksPerMultiprocessor
#   train_mlp_cuda      the CUDA demo: plain, GPUPROF_KERNELS=1, GPUPROF_GPU=kernels
#                       (each: its table, and its trace checked by tests/check_trace.py)
#   train_mlp_cuda_pftrace  the demo with kernel capture writing a Perfetto trace,
#                       decoded by tests/check_pftrace.py (Perfetto's own protos) and
#                       matched with the JSON run's slices by name and count
#   bench_gpu_real      what a range costs with GPU timing and kernel capture
#   nvml_vs_smi         the device over the run (SPEC 17) during the CUDA demo, each
#                       counter's mean against nvidia-smi --query-gpu read at the same time
#   gpm_classes         a copy kernel and an FMA loop, no work declared: GPM must class
#                       them memory-bound and compute-bound (H100 and later)
#   pm_classes          the same with CUPTI's PM sampling (GPUPROF_GPU_METRICS=1) and
#                       kernel capture beside it: classes, coverage, kernel records
#   pm_probe            ../shared/probes/pmsampling/gpu_check.sh (FACTS-pmsampling's
#                       open questions: clock domain, activity records, overflow)
#   bench_device        one NVML sampling pass, the driver's library (bench_device --real)
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
targets="train_mlp_cuda bench_gpu_real gpm_classes bench_device"
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

# The device over the run against nvidia-smi (the same NVML counters, read
# by another process every 100 ms during the same run): means agree.
nvml_vs_smi() {
  command -v nvidia-smi >/dev/null 2>&1 || { echo "no nvidia-smi: nothing to compare"; return 0; }
  nvidia-smi --query-gpu=index,utilization.gpu,clocks.sm,power.draw,temperature.gpu --format=csv,noheader,nounits -lms 100 > smi.csv 2>&1 &
  smi=$!
  GPUPROF_DEVICE_EVERY_MS=100 GPUPROF_SUMMARY=nvml.json "$b/train_mlp_cuda" > demo.out 2>&1; rc=$?
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  sed -n '/^Device over the run/,/^$/p' demo.out
  [ $rc = 0 ] || { cat demo.out; return 1; }
  python3 - nvml.json smi.csv <<'PY'
import json, sys
dev = json.load(open(sys.argv[1]))["device_over_time"]
assert dev, "no device_over_time in the summary"
idx = dev["device"]["index"]
rows = [l.split(",") for l in open(sys.argv[2]) if l.count(",") == 4]
rows = [[float(x) for x in r] for r in rows if r[0].strip() == str(idx) and "N/A" not in ",".join(r)]
assert len(rows) >= 5, "nvidia-smi gave %d rows" % len(rows)
ours = {c["name"]: c for c in dev["counters"]}
def mean(k): return sum(r[k] for r in rows) / len(rows)
tol = {"utilization": (1, 15.0, "points"), "SM clock": (2, 0.05, "rel"), "power": (3, 0.15, "rel"), "temperature": (4, 3.0, "C")}
bad = 0
for name, (k, t, how) in tol.items():
    if name not in ours: print("%-12s not sampled by gpuprof" % name); continue
    a, b = ours[name]["mean"], mean(k)
    ok = abs(a - b) <= (t * b if how == "rel" else t)
    bad += not ok
    print("%-12s gpuprof %8.1f  nvidia-smi %8.1f  %s" % (name, a, b, "ok" if ok else "DIFFERS"))
print("%d gpuprof samples, %d nvidia-smi rows" % (dev["samples"], len(rows)))
sys.exit(1 if bad else 0)
PY
}
check nvml_vs_smi "$run/nvml" nvml_vs_smi
# GPM's classes: the copy reads memory-bound, the FMA loop compute-bound.
gpm() {
  GPUPROF_DEVICE_EVERY_MS=100 GPUPROF_DEVICE_GPM=1 GPUPROF_SUMMARY=gpm_classes.json "$b/gpm_classes" > gpm.out 2>&1; rc=$?
  sed -n '/^Device over the run/,/^$/p;/^Verdict/,/^$/p' gpm.out
  [ $rc = 0 ] || { cat gpm.out; return 1; }
  grep -q 'no CUDA GPU here' gpm.out && return 0
  python3 - gpm_classes.json <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
dev = j["device_over_time"]
if not dev["device"]["gpm"]: print("no GPM on this GPU (before Hopper): nothing to class"); sys.exit(0)
ph = {p["range"]: p["counters"] for p in dev["by_phase"]}
cls = {r["name"]: (r.get("gpu") or {}).get("verdict") for r in j["ranges"]}
for r in ("copy", "fma"):
    c = ph.get(r, {})
    print("%-5s DRAM %5.1f%%  SM %5.1f%%  tensor %5.1f%%  FP32 %5.1f%%  class %s" % (r, c.get("DRAM bandwidth", -1), c.get("SM activity", -1),
          c.get("tensor activity", -1), c.get("FP32 activity", -1), cls.get(r)))
assert cls.get("copy") == "memory-bound" and cls.get("fma") == "compute-bound", cls
PY
}
check gpm_classes "$run/gpm" gpm
# GPU metrics (SPEC 21): the same kernels classed from CUPTI's PM sampling, with
# kernel capture on beside it (do kernel records keep coming while it samples?
# are the samples on the records' clock, so each range's coverage is whole?).
pm() {
  GPUPROF_DEVICE_EVERY_MS=0 GPUPROF_GPU_METRICS=1 GPUPROF_KERNELS=1 LD_LIBRARY_PATH="$cudalib" GPUPROF_SUMMARY=pm_classes.json "$b/gpm_classes" > pm.out 2>&1; rc=$?
  sed -n '/^GPU metrics/,/^$/p;/^Verdict/,/^$/p;/^gpuprof: /p' pm.out
  [ $rc = 0 ] || { cat pm.out; return 1; }
  grep -q 'no CUDA GPU here' pm.out && return 0
  python3 - pm_classes.json <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
gm = j["gpu_metrics"]
print("gpu_metrics: state %s reason %s chip %s samples %s interval %s ns (measured %s) decode CPU %s s" % (gm["state"], gm["reason"], gm.get("chip"),
      gm.get("samples"), gm.get("interval_ns"), gm.get("measured_interval_ns"), gm.get("decode_cpu_s")))
if gm["state"] != "on": print("PM sampling not available here: %s" % gm["reason"]); sys.exit(0)
cls = {r["name"]: ((r.get("gpu") or {}).get("verdict"), r.get("gpu_metrics") or {}) for r in j["ranges"]}
for r in ("copy", "fma"):
    v, m = cls.get(r, (None, {}))
    print("%-5s SMs %5.1f%%  issue %5.1f%%  tensor %5.1f%%  DRAM %5.1f%%  coverage %.2f  samples %s  class %s" % (r, m.get("sm_active_pct") or -1,
          m.get("sm_issue_pct") or -1, m.get("tensor_active_pct") or -1, m.get("dram_pct") or -1, m.get("coverage") or -1, m.get("samples"), v))
print("kernel records while sampling: %d kernels" % sum(k["count"] for k in j["kernels"]))
assert cls["copy"][0] == "memory-bound" and cls["fma"][0] == "compute-bound", cls
assert cls["copy"][1]["coverage"] > 0.9, "the samples do not cover the copy's GPU span: another clock?"
assert j["kernels"], "no kernel record came while PM sampling ran"
PY
}
check pm_classes "$run/pm" pm
# FACTS-pmsampling's probe: the call sequence alone, copy/FMA/HMMA phases, overflow, the clocks.
pmprobe() {
  cp -r "$root/../shared/probes/pmsampling" probe && CUDA=$(dirname "$cudalib") OUT=$PWD/probe_out bash probe/gpu_check.sh
}
if [ -f "$root/../shared/probes/pmsampling/gpu_check.sh" ]; then check pm_probe "$run/pmprobe" pmprobe
else say "SKIP  pm_probe (no ../shared/probes/pmsampling)"; skipped=$((skipped + 1)); fi
check bench_device "$run/bench_device" "$b/bench_device" --real

say ""
say "== figures"
for d in demo demo_kernels demo_gpu_kernels; do
  say "-- train_mlp_cuda ($d)"
  grep -E '^== gpuprof|^   (steps|trace|GPU|verdict|memory):|^Kernels|no CUDA GPU here|gpuprof: ' "$run/$d/demo.out" 2>/dev/null | head -n 12 | tee -a "$summary"
done
say "-- train_mlp_cuda (Perfetto trace)"
grep -E 'slices|FAIL|^   trace:|gpuprof: ' "$run/train_mlp_cuda_pftrace.log" 2>/dev/null | head -n 8 | tee -a "$summary"
say "-- launch figures against cudaOccupancyMaxActiveBlocksPerMultiprocessor (test_cuda_kernels)"
grep -E 'blocks_per_sm|FAIL' "$run/test_cuda_kernels.log" 2>/dev/null | head -n 6 | tee -a "$summary"
say "-- the device over the run against nvidia-smi"
grep -E 'gpuprof|nvidia-smi|DIFFERS|ok$' "$run/nvml_vs_smi.log" 2>/dev/null | head -n 8 | tee -a "$summary"
say "-- GPM's classes"
grep -E '^(copy|fma) |no GPM' "$run/gpm_classes.log" 2>/dev/null | head -n 4 | tee -a "$summary"
say "-- GPU metrics' classes (PM sampling)"
grep -E '^(copy|fma) |^gpu_metrics:|^kernel records|not available' "$run/pm_classes.log" 2>/dev/null | head -n 5 | tee -a "$summary"
say "-- FACTS-pmsampling's probe"
grep -E '^(STATS|RANGE|ACTIVITY|ERROR|WARNING)' "$run/pm_probe.log" 2>/dev/null | head -n 12 | tee -a "$summary"
say "-- bench_device --real"
grep -E 'pass|device:' "$run/bench_device.log" 2>/dev/null | head -n 6 | tee -a "$summary"
say "-- bench_gpu_real"
sed -n '/^bench_gpu_real/,$p' "$run/bench_gpu_real.log" | head -n 20 | tee -a "$summary"

say ""
say "== $passed passed, $failed failed, $skipped skipped, in $(($(date +%s) - t0)) s"
# $OUT (the device tool's folder) takes at most 8 files: the logs go as one archive
if [ -n "${OUT:-}" ]; then cp "$summary" "$OUT/" && tar -czf "$OUT/device-logs.tar.gz" -C "$run" $(cd "$run" && ls *.log) 2>/dev/null; fi
[ $failed = 0 ]
