# check.sh -- the shell tests' checks (sourced): counts, and a line for each
# failure with the file that was read. End a test with: check_done NAME
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $1"; }
expect() {  # expect WHAT FILE PATTERN
    if grep -q -- "$3" "$2"; then ok; else bad "$1 (no '$3' in $2)"; sed 's/^/    /' "$2"; fi
}
code() {    # code WHAT WANT GOT
    if [ "$2" = "$3" ]; then ok; else bad "$1: exit status $3, want $2"; fi
}
check_done() {
    echo "$1: $pass passed, $fail failed"
    [ $fail = 0 ]
}
