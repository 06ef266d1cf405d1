#!/bin/sh
# gpuprof-compare on summaries whose truth is known (tests/compare_runs.c):
# the same code run twice must read as no significant change, a 20% slower
# backward must read as slower, --fail-if-slower must set the exit status,
# and bad input must give a one-line message and exit 2.
# usage: test_compare.sh COMPARE_RUNS GPUPROF_COMPARE
set -u
gen=$1; cmp=$2
. "$(dirname "$0")/check.sh"

"$gen" base.json 1 || { echo "FAIL: compare_runs"; exit 1; }
"$gen" rerun.json 2
"$gen" slow.json 3 --slower 20
"$gen" fused.json 4 --fused
"$gen" sparse.json 5 --log-every 4

"$gen" evals.json 6 --checkpoint-in-eval mid.json

"$cmp" base.json rerun.json > same.out; code "same code, two runs" 0 $?
cat same.out
expect "same code: the step time" same.out "^(typical step) .*within noise"
expect "same code: backward" same.out "^backward .*within noise"
expect "same code: the overall line" same.out "ranges: 0 faster, 0 slower, 6 within noise, 0 added, 0 gone -> no significant change"
expect "same code: the memory peak is unchanged" same.out "tracked peak .*1.00 MiB ->   1.00 MiB  (+0.0%)"

"$cmp" base.json slow.json > slow.out; code "a slower run, no limit" 0 $?
cat slow.out
expect "slower: backward" slow.out "^backward .* +\(19.[5-9]\|20.[0-4]\)% .* SLOWER"
expect "slower: forward is not" slow.out "^forward .*within noise"
expect "slower: the step time" slow.out "^(typical step) .*SLOWER"
expect "slower: the overall line" slow.out "ranges: 0 faster, 1 slower, 5 within noise"

"$cmp" --fail-if-slower 10 base.json slow.json > fail.out; code "--fail-if-slower 10 on a 20% slower run" 1 $?
expect "the failure is said" fail.out "FAIL: slower by more than the --fail-if-slower limit"
"$cmp" --fail-if-slower 30 base.json slow.json > /dev/null; code "--fail-if-slower 30 on a 20% slower run" 0 $?
"$cmp" --fail-if-slower 1 base.json rerun.json > /dev/null; code "--fail-if-slower 1 on the same code" 0 $?

"$cmp" slow.json base.json > fast.out; code "the other way round" 0 $?
expect "faster: backward" fast.out "^backward .* -1[0-9].[0-9]% .* faster"

"$cmp" base.json base.json > self.out; code "a run against itself" 0 $?
expect "itself: p = 1" self.out "^backward .* +0.0% *1  within noise"

"$cmp" base.json fused.json > fused.out; code "a changed range" 0 $?
cat fused.out
expect "fused: added" fused.out "^  fused softmax"
expect "fused: gone" fused.out "^gone (only in the baseline):"
expect "fused: memory" fused.out "tracked peak .*1.00 MiB ->   1.50 MiB  (+50.0%)"
expect "fused: forward faster" fused.out "^forward .* faster"

"$cmp" base.json sparse.json > sparse.out; code "a range called less often" 0 $?
expect "log: compared per step" sparse.out "^log .* -75.[0-9]%\* *-  calls per step differ"
expect "and said so" sparse.out "1 called differently"

"$cmp" --min-change 25 base.json slow.json > minchg.out
expect "--min-change 25 hides a 20% change" minchg.out "^backward .*within noise"

# the test's arithmetic against a worked example: means 10 and 12 ms, std 2 and 3 ms,
# 10 and 12 calls: t = 1.865, 19.19 degrees of freedom, two-sided p = 0.0775
echo '{"schema":"gpuprof-summary","schema_version":3,"ranges":[{"name":"k","count":10,"mean_ns":1e7,"std_ns":2e6,"gpu":null}]}' > w1.json
echo '{"schema":"gpuprof-summary","schema_version":3,"ranges":[{"name":"k","count":12,"mean_ns":1.2e7,"std_ns":3e6,"gpu":null}]}' > w2.json
"$cmp" w1.json w2.json > welch.out; code "the worked example" 0 $?
expect "Welch p-value of the worked example" welch.out "^k .* +20.0% *0.078  within noise"
"$cmp" --alpha 0.1 w1.json w2.json > welch.out
expect "with alpha 0.1 it is slower" welch.out "^k .* +20.0% *0.078  SLOWER"
expect "no step time is said" welch.out "overall: no step time in the baseline"

"$cmp" --help > help.out; code "--help" 0 $?
expect "--help states the rule" help.out "Welch's t-test"

"$cmp" base.json missing.json 2> err.out; code "a missing file" 2 $?
expect "a missing file is named" err.out "^gpuprof-compare: cannot read missing.json"
echo '{"x":1}' > notsummary.json
"$cmp" base.json notsummary.json 2> err.out; code "a JSON file that is not a summary" 2 $?
expect "and said so" err.out "is JSON but not a gpuprof summary"
printf '{"schema":"gpuprof-summary",' > cut.json
"$cmp" cut.json base.json 2> err.out; code "a cut file" 2 $?
expect "a cut file is named" err.out "cut.json is not valid JSON"
"$cmp" --alpha 2 base.json base.json 2> err.out; code "a bad --alpha" 2 $?
"$cmp" --bogus base.json base.json 2> err.out; code "an unknown option" 2 $?
expect "an unknown option is named" err.out "unknown option --bogus"

# several runs a side: each run's mean one sample of the test
"$gen" slow2.json 7 --slower 20
"$cmp" base.json,rerun.json slow.json,slow2.json > runs.out; code "several runs a side" 0 $?
cat runs.out
expect "the runs are said" runs.out "^baseline: 2 runs; compared on its typical steps"
expect "and how they are tested" runs.out "^several runs a side: each run's mean is one sample of the test"
expect "runs: backward, 2 runs each" runs.out "^backward  *CPU  *2  *2 .* +\(19.[5-9]\|20.[0-4]\)% .* SLOWER"
expect "runs: forward is not" runs.out "^forward .*within noise"
"$cmp" base.json,rerun.json base.json,rerun.json > runs_same.out; code "the same runs on both sides" 0 $?
expect "the same runs: no change" runs_same.out "-> no significant change"
"$cmp" base.json, slow.json 2> err.out; code "a list ending in a comma" 2 $?
expect "a bad list is named" err.out "is not a list of files"

# a summary written while a range was open (a checkpoint inside the first
# evaluation): the range is there, marked open with its time so far, and
# gpuprof-compare lists it rather than leaving it out of both its table and counts
expect "mid-run summary: the open range, its call so far" mid.json '"name":"eval","count":0,.*"open":{"calls":1,"ns":[45][0-9]\{6\}}'
"$cmp" mid.json evals.json > open.out; code "a mid-run summary against the whole run" 0 $?
cat open.out
expect "the open range is listed" open.out "^  eval  *baseline: 0 calls, 1 open ([45].[0-9]* ms so far)  ;  new: 1 calls, mean [56].[0-9]* ms"
# --html: the same comparison as one self-contained page (the slower backward's row and its bar, both verdicts)
"$cmp" --html cmp.html base.json slow.json > html.out; code "--html" 0 $?
expect "--html: a page" cmp.html "^<!doctype html>"
expect "--html: backward's row, slower" cmp.html "<td>backward</td>.*+\(19.[5-9]\|20.[0-4]\)%.*SLOWER"
expect "--html: both verdicts" cmp.html "<h2>The verdicts</h2>"
if grep -Eq '<script|(src|href)=' cmp.html; then bad "--html: the page has a script or a reference outside itself"; else ok; fi
if [ -e cmp.html.tmp ]; then bad "--html left its temporary file"; else ok; fi
"$cmp" --html /nonexistent/dir/cmp.html base.json slow.json > /dev/null 2> html_err.out; code "--html to a path that cannot be written" 2 $?
expect "--html: the failure is named" html_err.out "cannot write the page to '/nonexistent/dir/cmp.html'"
check_done test_compare
