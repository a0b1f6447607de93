#!/bin/bash
# instructions_per_call.sh — instructions one call executes on rank 0, collie
# against OpenMPI: the measure behind docs/performance.md's latency notes (a
# timing moves by tens of percent on a shared machine; this count by a few
# percent, since rank 0 polls while it waits and each poll is instructions:
# compare two builds by running them alternately, several times each).
#
#   bash scripts/instructions_per_call.sh [-n RANKS] [--build DIR] OP [BYTES]
#   bash scripts/instructions_per_call.sh all_reduce 8      # 2 ranks, 8 bytes
#
# OP is one of collie bench's (all_reduce, all_gather, reduce_scatter,
# broadcast, reduce, all_to_all, send_recv). Rank 0 of the bench workers runs
# under callgrind twice, timing 1,000 and 3,000 calls back to back (--loop);
# the difference over 2,000 calls is one call's instructions, everything else
# (start-up, warm-up, checks) cancels out. The other ranks run natively, so
# rank 0 rarely waits and the count is mostly the call's own work. It also
# gives how many of them were locked (atomic read-modify-writes, sequentially
# consistent stores: full barriers that an instruction count weighs as one;
# scripts/callgrind_locked.py). Valgrind's CPU has no AVX-512: under it rank 0
# reduces with the AVX2 kernels (`collie info` run under valgrind says so),
# where natively a Zen 5 uses AVX-512 (COLLIE_REDUCE_KERNELS=avx2 natively runs
# what is counted). Needs valgrind (apt-get install valgrind),
# objdump and /usr/bin/python3 and, for the OpenMPI side, mpirun.
set -euo pipefail

ranks=2
build=build
while [[ $# -gt 0 && $1 == -* ]]; do
  case $1 in
    -n) ranks=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "instructions_per_call.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
op=${1:?usage: instructions_per_call.sh [-n RANKS] [--build DIR] OP [BYTES]}
bytes=${2:-8}
command -v valgrind >/dev/null || { echo "instructions_per_call.sh: needs valgrind" >&2; exit 2; }
bin=$(cd "$build/bin" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

locked_script=$(cd "$(dirname "$0")" && pwd)/callgrind_locked.py

# totals LAUNCHER RANK_VARIABLE WORKER ITERS: rank 0's instructions and locked
# instructions, as "INSTRUCTIONS LOCKED".
totals() {
  local launcher=$1 rank_var=$2 worker=$3 iters=$4 out="$work/cg.$RANDOM"
  # 2,000 warm-up calls: both runs count a steady state (a lock revoked from one
  # thread is biased to another only after 1,024 holds in a row by it:
  # src/runtime/biased_mutex.h).
  local args="--op $op -b $bytes -e $bytes -w 2000 --iters $iters --loop --no-check"
  $launcher sh -c "if [ \"\$$rank_var\" = 0 ]; then
      exec valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file=$out $worker $args
    else exec $worker $args; fi" >/dev/null 2>&1
  local instructions locked
  instructions=$(callgrind_annotate "$out" 2>/dev/null |
    awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
  locked=$(/usr/bin/python3 "$locked_script" "$out" 2>/dev/null | awk '/^locked/ { print $2 }')
  echo "$instructions $locked"
}

per_call() {  # LAUNCHER RANK_VARIABLE WORKER
  local low high
  read -r -a low <<<"$(totals "$1" "$2" "$3" 1000)"
  read -r -a high <<<"$(totals "$1" "$2" "$3" 3000)"
  if [[ ${#low[@]} -lt 1 || ${#high[@]} -lt 1 ]]; then echo "? instructions"; return; fi
  local line="$(((high[0] - low[0]) / 2000)) instructions"
  # Locked instructions to a tenth: a few a call decide more than their count.
  # Without objdump or /usr/bin/python3 they are unknown; the count still holds.
  if [[ ${#low[@]} -ge 2 && ${#high[@]} -ge 2 ]]; then
    line+=" ($(awk -v h="${high[1]}" -v l="${low[1]}" 'BEGIN { printf "%.1f", (h - l) / 2000 }') locked)"
  else
    line+=" (locked unknown: needs objdump and /usr/bin/python3)"
  fi
  echo "$line"
}

collie=$(per_call "$bin/collie run -n $ranks --" COLLIE_RANK "$bin/collie_bench_worker")
line="$op ${bytes} B, $ranks ranks, rank 0, per call: collie $collie"
if [[ -x $bin/collie_bench_mpi ]] && command -v mpirun >/dev/null; then
  mpi=$(per_call "mpirun --oversubscribe --allow-run-as-root -np $ranks" OMPI_COMM_WORLD_RANK \
    "$bin/collie_bench_mpi")
  line+=", OpenMPI $mpi"
fi
echo "$line"
