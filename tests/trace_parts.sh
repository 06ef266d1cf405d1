#!/bin/sh
# A streamed trace bounded on disk (GPUPROF_TRACE_MAX_MB, GPUPROF_TRACE_KEEP):
# sim_demo with kernel capture (its clock is simulated: two runs are the
# same run) in one file, then in parts of 2 MiB. Each part opens on its own
# and every event is in exactly one part (tests/trace_parts.py), in JSON and,
# with a Python that has Perfetto's decoder, in Perfetto's format; with
# GPUPROF_TRACE_KEEP=3 only the newest 3 parts are left, and the summary and
# the report name them. Then one step whose kernel launches alone fill
# several parts (sim_demo --burst): the parts between hold none of the main
# thread's own events, yet name its track for the CUDA calls on it, and the
# step begun in the first part ends in the last.
# Writes into a fresh temporary directory, removed when all pass.
#   usage: trace_parts.sh PYTHON BUILD_DIR SOURCE_DIR [PERFETTO_PYTHON]
py=$1; build=$2; src=$3; pfpy=${4:-}
dir=$(mktemp -d "${TMPDIR:-/tmp}/gpuprof-parts-XXXXXX") && cd "$dir" || exit 1
fail() { echo "trace_parts: $*; files kept in $dir"; exit 1; }
export GPUPROF_REPORT=off GPUPROF_KERNELS=1 GPUPROF_CUPTI_PATH="$build/tests/libsimcupti.so"
formats=json
[ -n "$pfpy" ] && "$pfpy" -c 'import perfetto.protos.perfetto.trace.perfetto_trace_pb2' 2>/dev/null && formats="json pftrace"
for f in $formats; do
  GPUPROF_TRACE=one.$f "$build/tests/sim_demo" > one.$f.out 2>&1 || fail "sim_demo ($f, one file) failed"
  GPUPROF_TRACE=run.$f GPUPROF_TRACE_MAX_MB=2 GPUPROF_SUMMARY=parts.$f.summary.json "$build/tests/sim_demo" > parts.$f.out 2>&1 ||
    fail "sim_demo ($f, in parts) failed"
  n=$(ls run.part*.$f 2>/dev/null | wc -l)
  [ "$n" -ge 2 ] || fail "$f: the trace was not split (GPUPROF_TRACE_MAX_MB=2): $(ls)"
  for p in run.$f run.part*.$f; do      # each part at most 2 MiB on disk: it ends before the block that would cross it
    [ "$(wc -c < $p)" -le 2097152 ] || fail "$f: $p is $(wc -c < $p) bytes, over GPUPROF_TRACE_MAX_MB=2"
  done
  parts="run.$f $(i=2; while [ -e run.part$i.$f ]; do printf 'run.part%s.%s ' $i $f; i=$((i + 1)); done)"
  if [ $f = json ]; then $py "$src/tests/trace_parts.py" one.$f $parts || fail "json: the parts differ from the one file"
  else $pfpy "$src/tests/trace_parts.py" one.$f $parts || fail "pftrace: the parts differ from the one file"; fi
  $py -c "import json, sys; t = json.load(open('parts.$f.summary.json'))['trace']; n = $n + 1; \
assert t['parts_written'] == n and t['parts'] == sys.argv[1:], t; print('$f: %d parts, named in the summary' % n)" $parts ||
    fail "$f: the summary does not name the parts"
  GPUPROF_TRACE=burst_one.$f "$build/tests/sim_demo" --burst 40000 > burst_one.$f.out 2>&1 || fail "sim_demo --burst ($f, one file) failed"
  GPUPROF_TRACE=burst.$f GPUPROF_TRACE_MAX_MB=2 "$build/tests/sim_demo" --burst 40000 > burst.$f.out 2>&1 || fail "sim_demo --burst ($f, in parts) failed"
  parts="burst.$f $(i=2; while [ -e burst.part$i.$f ]; do printf 'burst.part%s.%s ' $i $f; i=$((i + 1)); done)"
  [ -e burst.part3.$f ] || fail "$f: the burst's trace is in fewer than 3 parts: $(ls burst*)"
  for p in burst.$f burst.part*.$f; do
    [ "$(wc -c < $p)" -le 2097152 ] || fail "$f: $p is $(wc -c < $p) bytes, over GPUPROF_TRACE_MAX_MB=2"
  done
  if [ $f = json ]; then $py "$src/tests/trace_parts.py" burst_one.$f $parts || fail "json: the burst's parts differ from its one file"
  else $pfpy "$src/tests/trace_parts.py" burst_one.$f $parts || fail "pftrace: the burst's parts differ from its one file"; fi
done
# GPUPROF_TRACE_KEEP=3: the newest three parts stay
GPUPROF_TRACE=keep.json GPUPROF_TRACE_MAX_MB=2 GPUPROF_TRACE_KEEP=3 GPUPROF_REPORT=keep.report.txt GPUPROF_SUMMARY=keep.summary.json \
  "$build/tests/sim_demo" > keep.out 2>&1 || fail "sim_demo (GPUPROF_TRACE_KEEP=3) failed"
left=$(ls keep*.json | grep -v summary | sort | tr '\n' ' ')
$py -c "import json, sys; t = json.load(open('keep.summary.json'))['trace']; n = t['parts_written']; \
want = ['keep.part%d.json' % i for i in range(n - 2, n + 1)]; assert n > 3 and t['parts'] == want, t; \
assert sorted(sys.argv[1:]) == sorted(want), (sys.argv[1:], want); print('keep: %d parts written, %s left' % (n, ' '.join(want)))" $left ||
  fail "GPUPROF_TRACE_KEEP=3: not the newest three parts left ($left)"
grep -q "^   trace parts: [0-9]* of at most 2 MiB; on disk: keep.part[0-9]*.json ... keep.part[0-9]*.json (the newest 3, GPUPROF_TRACE_KEEP; [0-9]* older removed)" keep.report.txt ||
  fail "the report does not name the parts: $(grep 'trace' keep.report.txt)"
grep -q "^   trace: keep.part[0-9]*.json ... keep.part[0-9]*.json ([0-9]* events written" keep.report.txt ||
  fail "the report's trace line does not name the parts on disk (not the removed first): $(grep 'trace:' keep.report.txt)"
cd / && rm -rf "$dir"
