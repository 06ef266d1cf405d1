#!/bin/sh
# Builds the three libFuzzer targets (clang, with ASan and UBSan) and runs
# each for SECONDS from the seed corpus in tests/fuzz/corpus. Any finding
# (crash, leak, failed check, hang over 30 s) fails the run and leaves the
# input in WORK_DIR. SECONDS=0 only replays the seed corpus (a regression test).
# usage: run.sh REPO_ROOT WORK_DIR SECONDS
root=$1; work=$2; secs=${3:-60}
cc=${FUZZ_CC:-clang}
mkdir -p "$work" && cd "$work" || exit 1
work=$(pwd)
command -v "$cc" >/dev/null || { echo "run.sh: $cc not found (apt-get install clang libclang-rt-14-dev)"; exit 1; }
fails=0
# The implementation once (tests/impl/impl.c, its "alloc" configuration:
# gpuprof's allocations counted), with the fuzzer's instrumentation.
flags="-g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -DGPUPROF_TEST_ALLOC -I$root -I$root/tests"
if ! "$cc" $flags -fsanitize=fuzzer-no-link -c "$root/tests/impl/impl.c" -o impl.o 2> build_impl.log; then
  echo "impl.o: does not build:"; sed 's/^/    /' build_impl.log | head -20; exit 1
fi
for t in names env api; do
  if ! "$cc" $flags -fsanitize=fuzzer "$root/tests/fuzz/fuzz_$t.c" impl.o -lcjson -lpthread -lm -o "fuzz_$t" 2> "build_$t.log"; then
    echo "fuzz_$t: does not build:"; sed 's/^/    /' "build_$t.log" | head -20; fails=$((fails+1)); continue
  fi
  rm -rf "corpus_$t" && cp -r "$root/tests/fuzz/corpus/$t" "corpus_$t"
  if [ "$secs" = 0 ]; then
    ./"fuzz_$t" -runs=0 -timeout=30 "corpus_$t" > "log_$t" 2>&1; rc=$?
  else
    ./"fuzz_$t" -max_total_time="$secs" -timeout=30 -max_len=2048 -artifact_prefix="$work/" -print_final_stats=1 "corpus_$t" > "log_$t" 2>&1; rc=$?
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "log_$t" | grep -o '[0-9]*$')
  [ -n "$runs" ] || runs=$(grep -o 'Done [0-9]* runs' "log_$t" | grep -o '[0-9][0-9]*')
  [ -n "$runs" ] || runs=$(grep -c '^Executed\|INITED' "log_$t")
  echo "fuzz_$t: exit $rc, ${runs:-?} executions in ${secs}s, corpus $(ls "corpus_$t" | wc -l) inputs"
  if [ $rc -ne 0 ]; then
    fails=$((fails+1))
    grep -v '^#[0-9]\|^INFO\|NEW_FUNC\|Uses:' "log_$t" | tail -40 | sed 's/^/    /'
    ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* 2>/dev/null
  fi
done
[ $fails = 0 ]
