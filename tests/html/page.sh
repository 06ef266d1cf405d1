#!/bin/sh
# The page (SPEC 22, GPUPROF_HTML): written where asked and nowhere else,
# self-contained, the same figures as the summary written from the same
# snapshot -- opened in headless Chromium (check_page.py) where a Python with
# playwright is given: the CPU demo with CPU samples, the simulated-GPU demo
# with kernel capture, GPU metrics on the simulated PM sampler, the device on
# the simulated NVML at its power cap; a run of 20 000
# steps within 2 MB; a run killed after its checkpoints leaves a page that
# opens. Writes into a fresh temporary directory, removed when all pass.
#   usage: page.sh BUILD_DIR SOURCE_DIR [BROWSER_PYTHON]
build=$1; src=$2; bpy=${3:-}
dir=$(mktemp -d "${TMPDIR:-/tmp}/gpuprof-page-XXXXXX") && cd "$dir" || exit 1
fail() { echo "page: $*; files kept in $dir"; exit 1; }
export GPUPROF_REPORT=off
check() {          # check PAGE SUMMARY [--expect PART ...]: in the browser where there is one
  [ -s "$1" ] || fail "no page at $1"
  grep -q '</html>' "$1" || fail "$1 is not whole"
  if grep -Eq '(src|href)=|https?://|<script' "$1"; then fail "$1 refers to something outside itself, or has a script"; fi
  [ -z "$bpy" ] && return 0
  "$bpy" "$src/tests/html/check_page.py" "$@" || fail "$1 in the browser"
}
# 1. No page unless asked.
"$build/train_evals" > plain.out 2>&1 || fail "train_evals failed"
[ -z "$(ls ./*.html 2>/dev/null)" ] || fail "a page was written without GPUPROF_HTML: $(ls ./*.html)"
# 2. The CPU demo with CPU samples: the verdict, the step over the run, the ranges, the icicles.
GPUPROF_HTML=demo.html GPUPROF_SUMMARY=demo.json GPUPROF_SAMPLE=1 "$build/train_evals" > demo.out 2>&1 || fail "train_evals with a page failed"
check demo.html demo.json --expect verdict --expect over_time --expect ranges --expect samples --shot demo.png
# 2a. A stalled step captured (GPUPROF_CAPTURE_SLOW): marked on the step over the run. 2.5 as in
#     the guide: the stall is about 7 steps long on an idle machine, but the running median it is
#     judged against can be that of a busier start (a run under ctest -j4: 17 ms, then 9.5 ms).
GPUPROF_HTML=cap.html GPUPROF_SUMMARY=cap.json GPUPROF_CAPTURE_SLOW=2.5 GPUPROF_CAPTURE_MAX=64 "$build/train_evals" --stall 25 > cap.out 2>&1 || fail "train_evals --stall failed"
grep -q "<title>step 25 captured: " cap.html || fail "the captured step 25 is not marked on the step over the run"
check cap.html cap.json --expect over_time
# 2b. The README's demo (train_mlp): its memory part too.
GPUPROF_HTML=mlp.html GPUPROF_SUMMARY=mlp.json "$build/train_mlp" > mlp.out 2>&1 || fail "train_mlp with a page failed"
check mlp.html mlp.json --expect verdict --expect ranges --expect memory
# 3. The simulated GPU with kernel capture, and GPU metrics on the simulated PM sampler.
if [ -x "$build/tests/sim_demo" ]; then
  GPUPROF_HTML=sim.html GPUPROF_SUMMARY=sim.json GPUPROF_KERNELS=1 GPUPROF_CUPTI_PATH="$build/tests/libsimcupti.so" \
    "$build/tests/sim_demo" --mlp > sim.out 2>&1 || fail "sim_demo with a page failed"
  check sim.html sim.json --expect verdict --expect over_time --expect ranges --expect kernels --shot sim.png
  GPUPROF_HTML=gm.html GPUPROF_SUMMARY=gm.json GPUPROF_GPU_METRICS=1 GPUPROF_CUPTI_PATH="$build/tests/libsimcupti.so" \
    "$build/tests/sim_demo" --mlp > gm.out 2>&1 || fail "sim_demo with GPU metrics and a page failed"
  check gm.html gm.json --expect verdict --expect gpu_metrics
fi
# 3b. The device over the run, on the simulated NVML whose GPU reaches its power cap: the clocks held back shaded.
if [ -e "$build/tests/libsimnvml.so" ]; then
  GPUPROF_HTML=dev.html GPUPROF_SUMMARY=dev.json GPUPROF_NVML_PATH="$build/tests/libsimnvml.so" SIMNVML_SCENARIO=powercap SIMNVML_AFTER=8 \
    GPUPROF_DEVICE_EVERY_MS=50 "$build/train_evals" > dev.out 2>&1 || fail "train_evals with the simulated NVML failed"
  grep -q "fill='#f7e1d7'" dev.html || fail "the device's power cap is not shaded"
  check dev.html dev.json --expect verdict --expect device
fi
# 4. A long run: 20 000 steps, the page within 2 MB.
GPUPROF_HTML=long.html GPUPROF_SUMMARY=long.json "$build/tests/long_run" 20000 > long.out 2>&1 || fail "long_run failed"
size=$(wc -c < long.html)
[ "$size" -le 2000000 ] || fail "the page of 20 000 steps is $size bytes, over 2 MB"
check long.html long.json --expect verdict --expect over_time
echo "page: 20 000 steps: $size bytes"
# 5. A run killed after its checkpoints: the last checkpoint's page opens.
GPUPROF_HTML=killed.html GPUPROF_SUMMARY=killed.json GPUPROF_SUMMARY_EVERY=0.2 "$build/tests/long_run" 100000 --sleep-us 2000 > killed.out 2>&1 &
pid=$!
i=0
while [ $i -lt 100 ] && ! grep -qs 'a checkpoint' killed.html; do sleep 0.1; i=$((i + 1)); done
sleep 0.5
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
grep -q 'a checkpoint' killed.html || fail "no checkpoint's page before the kill"
ls killed.html.* 2>/dev/null && fail "a temporary file was left beside the page"
check killed.html killed.json --expect ranges --loose
cd / && rm -rf "$dir"
echo "page: ok${bpy:+ (opened in Chromium)}"
