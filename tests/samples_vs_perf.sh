#!/bin/sh
# gpuprof's CPU samples against perf's on the same run (SPEC 16): test_samples
# (functions that split its CPU time in known proportions, two threads, a
# shared library) runs under `perf record -e cpu-clock`, gpuprof sampling it
# at the same time; each function's share of the samples of the four that do
# the work (tokenize, checksum, sample_lib_hash, decode), as gpuprof's summary
# and as `perf report` count them, must agree within 5 points. Skipped (77)
# where perf is missing or may not record this process.
#   usage: samples_vs_perf.sh TEST_SAMPLES
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
command -v perf >/dev/null 2>&1 || { echo "samples_vs_perf: skipped: perf is not installed (apt-get install linux-perf)"; exit 77; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/gpuprof-perf-XXXXXX") && cd "$dir" || exit 1
if ! CHECK_WORKDIR="$dir" perf record -q -e cpu-clock -F 999 -o perf.data -- "$bin" > run.out 2> perf.err; then
  if [ -s samples.summary.json ]; then echo "samples_vs_perf: test_samples failed under perf; files kept in $dir"; cat run.out; exit 1; fi
  echo "samples_vs_perf: skipped: perf cannot record here ($(head -1 perf.err))"; cd / && rm -rf "$dir"; exit 77
fi
perf report -i perf.data --stdio --sort sym -q > perf.txt 2> perf.err || { echo "samples_vs_perf: perf report failed: $(head -1 perf.err)"; exit 1; }
python3 - <<'PY' || { echo "samples_vs_perf: the shares differ; files kept in $dir"; exit 1; }
import json, re, sys
fns = ['tokenize', 'checksum', 'sample_lib_hash', 'decode']
perf = dict.fromkeys(fns, 0.0)
for line in open('perf.txt'):
    m = re.match(r'\s*([\d.]+)%\s+\[\.\]\s+(\S+)', line)
    if m and m.group(2).split('.')[0] in perf:
        perf[m.group(2).split('.')[0]] += float(m.group(1))
gp = dict.fromkeys(fns, 0.0)
for r in json.load(open('samples.summary.json'))['samples']['by_range']:
    for f in r['functions']:
        if f['name'].split('.')[0] in gp:
            gp[f['name'].split('.')[0]] += f['self']
ps, gs = sum(perf.values()), sum(gp.values())
if not ps or not gs:
    print('samples_vs_perf: no samples of the four functions (perf %.1f%%, gpuprof %d)' % (ps, gs)); sys.exit(1)
bad = 0
print('%-16s %8s %8s' % ('function', 'perf', 'gpuprof'))
for f in fns:
    a, b = 100 * perf[f] / ps, 100 * gp[f] / gs
    print('%-16s %7.1f%% %7.1f%%' % (f, a, b))
    bad += abs(a - b) > 5
sys.exit(1 if bad else 0)
PY
cd / && rm -rf "$dir"
