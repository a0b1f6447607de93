#!/bin/bash
# collie against OpenMPI, self-contained: runs `collie bench ... --compare mpi` at 4, 8
# and 16 ranks with the collie binaries and the relocated OpenMPI 4.1.4 runtime that
# scripts/bench_bundle/make.sh put next to this script (no system MPI needed):
#   bash BUNDLE/run.sh OUTDIR          # BUNDLE: make.sh's folder, .devbundle by default
# Writes OUTDIR/{system.txt,lscpu.txt,ldd.txt,ompi_info.txt,smoke.txt,bench_nN.{txt,csv,
# json},summary.txt,run_log.txt} and prints them. Overridable: BENCH_NS (default
# "4 8 16"), BENCH_ARGS, BENCH_BUDGET_S (whole script, default 450), SKIP_SMOKE=1.
# See README.md next to it.
set -u
OUT=${1:?usage: bash BUNDLE/run.sh OUTDIR}
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
B=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
T0=$SECONDS
BUDGET=${BENCH_BUDGET_S:-450}
NS=${BENCH_NS:-4 8 16}
ARGS=${BENCH_ARGS:---op all -b 16 -e 64M -f 4 --compare mpi --rounds 3}
log() { echo "[run.sh +$((SECONDS - T0))s] $*" | tee -a "$OUT/run_log.txt"; }
left() { echo $((BUDGET - (SECONDS - T0))); }

# ---- 1. The machine, before any of the bundle's libraries are on the path ----
{
  echo "## ldd --version: $(ldd --version 2>&1 | head -1)"
  echo "## uname -a: $(uname -a)"
  echo "## nproc: $(nproc)"
  grep -E '^(PRETTY_NAME|VERSION_ID)=' /etc/os-release 2>/dev/null
  echo "## id: $(id)"
  echo "## /dev/shm and /tmp:"; df -h /dev/shm /tmp 2>&1
  echo "## ptrace_scope: $(cat /proc/sys/kernel/yama/ptrace_scope 2>&1)"
  echo "## THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>&1)"
  echo "## ulimit -l: $(ulimit -l)  ulimit -n: $(ulimit -n)"
  echo "## cgroup cpus: $(cat /sys/fs/cgroup/cpuset.cpus.effective 2>/dev/null) quota: $(cat /sys/fs/cgroup/cpu.max 2>/dev/null)"
  echo "## system mpirun: $(command -v mpirun 2>/dev/null || echo none)"
  echo "## inherited LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-} LD_PRELOAD=${LD_PRELOAD:-}"
  env | grep -E '^(OMPI_|OPAL_|PMIX_|PMI_|SLURM_|COLLIE_)' | sed 's/^/## inherited env: /'
} > "$OUT/system.txt" 2>&1
cat "$OUT/system.txt"
lscpu > "$OUT/lscpu.txt" 2>&1

# A copy may have lost the exec bits.
chmod u+x "$B"/bin/* "$B"/ompi/bin/* 2> /dev/null
# Docker's default /dev/shm is 64 MiB: too small for 16 ranks of collie or OpenMPI.
shm_kb=$(df -Pk /dev/shm 2> /dev/null | awk 'NR == 2 {print $4}')
if [ -n "$shm_kb" ] && [ "$shm_kb" -lt 4194304 ]; then
  log "/dev/shm has only ${shm_kb} KiB free; trying to remount it with 16G"
  mount -o remount,size=16G /dev/shm 2>&1 | tee -a "$OUT/run_log.txt"
  log "/dev/shm now: $(df -Ph /dev/shm | awk 'NR == 2 {print $2 " size, " $4 " free"}')"
fi

# ---- 2. Environment: only the bundle's OpenMPI, nothing inherited --------------
# shellcheck source=env.sh
source "$B/env.sh"
[ -n "${BUNDLE_CXX_NOTE:-}" ] && log "$BUNDLE_CXX_NOTE"
log "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
log "mpirun is $(command -v mpirun)"

{
  for f in "$B"/bin/* "$O"/bin/mpirun "$O"/bin/orted; do echo "== ldd $f"; ldd "$f"; done
  echo "== libraries resolved outside the bundle (should be glibc only):"
  for f in "$B"/bin/* "$O"/bin/* "$O"/lib/*.so* "$O"/lib/openmpi3/*.so "$P"/lib/pmix/*.so; do
    ldd "$f" 2>&1 | grep -v -e "$B/" -e 'linux-vdso' -e 'ld-linux' -e '/libc\.so' -e '/libm\.so' \
      -e '/libpthread' -e '/libdl\.so' -e '/librt\.so' -e '/libresolv' -e 'statically' \
      -e "^$f:" | sed "s|^|$(basename "$f"): |"
  done
} > "$OUT/ldd.txt" 2>&1
sed -n '1,/ldd .*mpirun$/p' "$OUT/ldd.txt" | sed '$d'   # the three collie binaries
sed -n '/libraries resolved outside/,$p' "$OUT/ldd.txt" | head -20
grep -e 'not found' "$OUT/ldd.txt" && log "WARNING: unresolved libraries, see ldd.txt"
{ ompi_info --path all; ompi_info | grep -E 'Open MPI:|MCA (btl|pml|pmix|plm|ess|schizo|shmem):'; } \
  > "$OUT/ompi_info.txt" 2>&1
head -30 "$OUT/ompi_info.txt"

# ---- 3. Smoke test: both sides work, else retry MPI without CMA single copy ----
if [ "${SKIP_SMOKE:-0}" != 1 ]; then
  smoke() {
    timeout -k 5 60 collie bench -n 2 --op all_reduce --op all_to_all -b 8 -e 4M -f 64 \
      --compare mpi > "$OUT/smoke.txt" 2>&1
  }
  smoke; rc=$?
  cat "$OUT/smoke.txt"
  if [ $rc != 0 ] || grep -q -e 'MPI run of' -e ' n/a ' "$OUT/smoke.txt"; then
    log "smoke test failed (rc $rc); retrying with OMPI_MCA_btl_vader_single_copy_mechanism=none"
    export OMPI_MCA_btl_vader_single_copy_mechanism=none
    mv "$OUT/smoke.txt" "$OUT/smoke_failed.txt"
    smoke; rc=$?
    cat "$OUT/smoke.txt"
    if [ $rc != 0 ]; then
      log "smoke test still fails (rc $rc): keeping the default single-copy mechanism"
      unset OMPI_MCA_btl_vader_single_copy_mechanism
    else
      log "NOTE: OpenMPI runs with btl_vader_single_copy_mechanism=none (no CMA here)"
    fi
  fi
fi

# ---- 4. The sweeps: 4, 8, 16 ranks, each within its share of the time left -----
# Shares of the time left: N=4 gets 1/5, N=8 1/3 of what is then left, N=16 the rest
# (unused time carries over). A sweep cut short keeps the rows it printed.
read -r -a ns <<< "$NS"
count=${#ns[@]}
i=0
for N in "${ns[@]}"; do
  i=$((i + 1))
  rem=$(left)
  case "$count-$i" in
    3-1) t=$((rem / 5)) ;;
    3-2) t=$((rem / 3)) ;;
    2-1) t=$((rem / 3)) ;;
    *) t=$((rem - 5)) ;;
  esac
  [ "$t" -gt 30 ] || t=30
  [ "$t" -le $((rem - 5)) ] || t=$((rem - 5))
  if [ "$t" -lt 10 ]; then
    log "N=$N: skipped, the time budget (${BUDGET}s) is spent"
    continue
  fi
  log "N=$N: collie bench -n $N $ARGS (timeout ${t}s)"
  s=$SECONDS
  # shellcheck disable=SC2086
  timeout -k 10 "$t" collie bench -n "$N" $ARGS --csv "$OUT/bench_n$N.csv" \
    --json "$OUT/bench_n$N.json" 2>&1 | tee "$OUT/bench_n$N.txt"
  rc=${PIPESTATUS[0]}
  log "N=$N: exit $rc after $((SECONDS - s))s$([ "$rc" = 124 ] && echo ' (TIMED OUT: partial table)')"
done
# Compact summary (speed-up = OpenMPI time / collie time, >1 means collie is faster).
{
  echo "== speed-up of collie over OpenMPI (mpi_us / time_us), per op and size"
  for N in "${ns[@]}"; do
    f=$OUT/bench_n$N.txt
    [ -f "$f" ] || continue
    awk -v n="$N" '
      /^  [a-z_]+ / && $8 ~ /^(ok|FAIL)$/ {
        if (!($2 in seen)) { seen[$2] = 1; sizes[++ns] = $2 }
        if (!($1 in seenop)) { seenop[$1] = 1; ops[++no] = $1 }
        v[$1, $2] = ($8 == "FAIL" ? "FAIL" : $NF)
      }
      END {
        if (no == 0) { printf "N=%s: no rows\n", n; exit }
        printf "N=%-3s %-14s", n, "op \\ size"; for (j = 1; j <= ns; j++) printf " %7s", sizes[j]; printf "\n"
        for (i = 1; i <= no; i++) {
          printf "      %-14s", ops[i]
          for (j = 1; j <= ns; j++) { x = v[ops[i], sizes[j]]; printf " %7s", x == "" ? "-" : x }
          printf "\n"
        }
      }' "$f"
  done
} | tee "$OUT/summary.txt"
log "done; files in $OUT:"
# shellcheck disable=SC2012
ls -la "$OUT" | tee -a "$OUT/run_log.txt"
