#!/bin/sh
# The MPI example (examples/train_ddp.c) as a job: 4 ranks started by
# mpiexec, rank 3's data loading slow. Each rank takes its rank from the MPI
# launcher's variables and writes its own summary; only rank 0 prints its
# table; gpuprof-ranks names rank 3 and "data", with the all-reduce as where
# it waits least.
# usage: test_ddp_mpi.sh MPIEXEC NUMPROC_FLAG TRAIN_DDP GPUPROF_RANKS
set -u
mpiexec=$1; np=$2; ddp=$3; tool=$4
fail() { echo "FAIL: $*"; exit 1; }
rm -f train_ddp.*.json
# Under AddressSanitizer (CI's second build): Open MPI leaves its own
# allocations at exit (none of gpuprof's: every other test and valgrind check
# those), so leak checking is off for the ranks.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"; export ASAN_OPTIONS
"$mpiexec" "$np" 4 "$ddp" --slow-rank 3 > ddp.out 2>&1 < /dev/null || { cat ddp.out; fail "mpiexec -n 4 train_ddp"; }
grep -q 'rank 0 of 4 on' ddp.out || fail "rank 0's table names the rank and the world size"
grep -q "gpuprof: rank 0 of 4 printed its table; every rank's summary is in 'train_ddp.%r.json'" ddp.out || fail "rank 0 says where the summaries are"
[ "$(grep -c '== gpuprof' ddp.out)" = 1 ] || fail "only rank 0 prints a table ($(grep -c '== gpuprof' ddp.out))"
grep -q '"rank_source":"OMPI_COMM_WORLD_RANK"\|"rank_source":"PMI_RANK"' train_ddp.2.json || fail "the rank comes from the MPI launcher"
"$tool" train_ddp.0.json train_ddp.1.json train_ddp.2.json train_ddp.3.json > ranks.out || fail "gpuprof-ranks"
cat ranks.out
grep -q '^straggler: rank 3 -- "data" .* it waits least in "allreduce"' ranks.out || fail "the straggler is rank 3, late in data, waiting least in allreduce"
echo "test_ddp_mpi: passed"
