#!/bin/sh
# GPUPROF_DISABLE compiles to nothing: the instrumented functions' machine code
# at -O2 is identical to that of the never-instrumented program, with gcc and
# clang, and the macros' arguments are not evaluated.
# usage: compile_out.sh REPO_ROOT WORK_DIR
root=$1; work=$2; src=$root/tests/compile_out
mkdir -p "$work" && cd "$work" || exit 1
fails=0; passes=0
# The disassembly of one function, without addresses or raw bytes.
body() { objdump -d --no-show-raw-insn "$1" | awk -v f="<$2>:" '$2 == f {on=1; next} on && NF == 0 {exit} on' |
         sed 's/^ *[0-9a-f]*:[[:space:]]*//; s/[0-9a-f]* <\([^>+]*\)\(+0x[0-9a-f]*\)\?>/<\1>/g'; }
for cc in gcc clang; do
  command -v $cc >/dev/null || continue
  $cc -std=c11 -O2 -ffunction-sections -I"$root" -DGPUPROF_DISABLE -Wall -Wextra -Werror -c "$src/instrumented.c" -o inst.o || { fails=$((fails+1)); continue; }
  $cc -std=c11 -O2 -ffunction-sections -Wall -Wextra -Werror -c "$src/plain.c" -o plain.o || { fails=$((fails+1)); continue; }
  for fn in forward backward train_step; do
    body inst.o $fn > inst.$fn.s; body plain.o $fn > plain.$fn.s
    if [ -s inst.$fn.s ] && cmp -s inst.$fn.s plain.$fn.s; then
      passes=$((passes+1)); echo "$cc: $fn: $(wc -l < inst.$fn.s) instructions, identical"
    else
      fails=$((fails+1)); echo "FAIL $cc: $fn differs from the uninstrumented build:"; diff inst.$fn.s plain.$fn.s | head -20
    fi
  done
  if nm inst.o | grep -q gpuprof; then fails=$((fails+1)); echo "FAIL $cc: gpuprof symbols in a GPUPROF_DISABLE build:"; nm inst.o | grep gpuprof
  else passes=$((passes+1)); fi
  $cc -O2 inst.o "$src/main.c" -o run && ./run && passes=$((passes+1)) || { fails=$((fails+1)); echo "FAIL $cc: arguments were evaluated"; }
done
echo "compile_out: $passes passed, $fails failed"
[ $fails = 0 ]
