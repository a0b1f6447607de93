#!/usr/bin/env bash
# compare_backends.sh LAUNCHER PROGRAM NP OUTDIR SEED STEPS MPIEXEC [MPIEXEC_FLAGS...]
#
# Runs the differential PROGRAM (differential.cc) three times with the same seed:
#   shm:    LAUNCHER run -n NP -- PROGRAM ...
#   mpi:    MPIEXEC FLAGS -np NP PROGRAM ...   (COLLIE_BACKEND=mpi, default reductions)
#   native: the same with COLLIE_MPI_REDUCTION=native (MPI reduces every dtype)
# and compares each rank's result hashes: shm and mpi must agree on every step
# (floats included: the default reduces floats in rank order, as shm does);
# shm and native on every step except floating-point reductions, whose rounding
# depends on MPI's order of additions.
set -u
if [ $# -lt 7 ]; then
  echo "usage: $0 LAUNCHER PROGRAM NP OUTDIR SEED STEPS MPIEXEC [FLAGS...]" >&2
  exit 2
fi
launcher=$1 program=$2 np=$3 outdir=$4 seed=$5 steps=$6 mpiexec=$7
shift 7
rm -rf "$outdir" && mkdir -p "$outdir" || exit 2

run() {  # label command...
  local label=$1
  shift
  echo "---- $label: $*"
  if ! timeout 150 "$@"; then
    echo "FAIL: the $label run failed"
    exit 1
  fi
}
run shm env -u COLLIE_BACKEND "$launcher" run -n "$np" -- "$program" "$outdir/shm" "$seed" "$steps"
run mpi env COLLIE_BACKEND=mpi "$mpiexec" "$@" -x COLLIE_BACKEND -np "$np" "$program" "$outdir/mpi" "$seed" "$steps"
run native env COLLIE_BACKEND=mpi COLLIE_MPI_REDUCTION=native \
  "$mpiexec" "$@" -x COLLIE_BACKEND -x COLLIE_MPI_REDUCTION -np "$np" "$program" "$outdir/native" "$seed" "$steps"

failures=0
for ((r = 0; r < np; r++)); do
  shm="$outdir/shm.rank$r.txt" mpi="$outdir/mpi.rank$r.txt" native="$outdir/native.rank$r.txt"
  lines=$(wc -l < "$shm")
  if [ "$lines" -eq 0 ]; then
    echo "FAIL: rank $r wrote no steps"
    failures=$((failures + 1))
  fi
  if ! diff -u "$shm" "$mpi" > "$outdir/diff.mpi.rank$r"; then
    echo "FAIL: rank $r: shm and mpi results differ:"
    head -20 "$outdir/diff.mpi.rank$r"
    failures=$((failures + 1))
  fi
  # Field 7 is 1 for floating-point reductions.
  if ! diff -u <(awk '$7 == 0' "$shm") <(awk '$7 == 0' "$native") > "$outdir/diff.native.rank$r"; then
    echo "FAIL: rank $r: shm and mpi (native reductions) differ outside floating-point reductions:"
    head -20 "$outdir/diff.native.rank$r"
    failures=$((failures + 1))
  fi
  exact=$(awk '$7 == 0' "$shm" | wc -l)
  echo "rank $r: $lines steps bit-identical on shm and mpi; $exact of them also with native MPI reductions"
done
if [ $failures -ne 0 ]; then
  echo "FAIL: $failures comparison(s) failed (files in $outdir)"
  exit 1
fi
echo "PASS"
