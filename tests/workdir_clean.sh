#!/bin/sh
# Tests write only into a directory of their own, whatever directory they
# are started from: run some of them from an empty directory, with relative
# paths as a user would type them, and nothing may appear there.
# usage: workdir_clean.sh CHECK_TRACE CHECK_REPORT TEST_BINARY...
trace=$1; report=$2; shift 2
here=$(mktemp -d "${TMPDIR:-/tmp}/gpuprof-workdir-XXXXXX") || exit 1
cp "$trace" "$here/check_trace.py" && cp "$report" "$here/check_report.py" || exit 1
cd "$here" || exit 1
fails=0
for t in "$@"; do
  case $(basename "$t") in
    test_ranges|test_misuse) arg=./check_report.py ;;
    *) arg=./check_trace.py ;;
  esac
  if ! "$t" "$arg" > out.log 2>&1; then echo "FAIL: $(basename "$t") failed:"; tail -5 out.log; fails=$((fails+1)); fi
  rm -f out.log
  left=$(ls -A | grep -v '^check_trace.py$\|^check_report.py$')
  if [ -n "$left" ]; then echo "FAIL: $(basename "$t") left files where it was started: $left"; fails=$((fails+1)); rm -rf $left; fi
done
cd / && rm -rf "$here"
echo "workdir_clean: $# tests run from an empty directory, $fails failures"
[ $fails = 0 ]
