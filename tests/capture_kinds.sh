#!/bin/sh
# Slow-step capture by kind of step (issue 41): llm.c's loop shape
# (examples/train_evals: validation every 10 steps, sampling every 20) with
# one training step stalled 40 ms. GPUPROF_CAPTURE_SLOW=2.5 must capture that
# step -- judged against the training steps' running median -- and not the
# validation and sampling steps, another kind of step at their usual length.
# usage: capture_kinds.sh TRAIN_EVALS PYTHON CHECK_TRACE
set -u
evals=$1; py=$2; check_trace=$3
. "$(dirname "$0")/check.sh"
rm -f gpuprof.*.slow.*.json cap.json cap.log
GPUPROF_CAPTURE_SLOW=2.5 GPUPROF_SUMMARY=cap.json "$evals" --stall 33 > cap.log 2>&1; code "train_evals --stall 33 runs" 0 $?
grep 'slow step' cap.log
expect "the stalled step is captured, of the most common kind" cap.log "slow step 33 captured (a step of the most common kind): .*x the running median of its kind"
# (a training step slowed by a loaded machine may be captured too: it is slow for its kind)
grep 'slow step' cap.log | grep -v 'a step of the most common kind' && bad "a step of another kind (validation, sampling) was captured" || ok
"$py" - cap.json <<'PY' && ok || bad "steps.captures: step 33, of the most common kind, and no step of another kind"
import json, sys
c = json.load(open(sys.argv[1]))["steps"]["captures"]
s = [x for x in c if x["step"] == 33]
assert len(s) == 1 and s[0]["kind"] == {"most_common": True, "with": []} and s[0]["written"], c
assert all(x["kind"]["most_common"] for x in c), c
print("captures:", c)
PY
f=$(ls gpuprof.*.slow.1.json 2>/dev/null | head -n 1)
[ -n "$f" ] && "$py" "$check_trace" "$f" --expect-name data > /dev/null && ok || bad "the capture is a valid trace with the step's ranges"
check_done capture_kinds
