#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang and runs each briefly.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     (default: 20 s each, every target)
#
# Targets: env (launch environment), run_options (`collie run` arguments),
# bench_config (`collie bench` options), p2p_stream (p2p message headers and
# payloads as a peer writes them). Each starts from tests/fuzz/corpus/<target>,
# copied into build-fuzz/corpus/<target> so that what the fuzzer learns stays out
# of the source tree. A crash, a leak, undefined behaviour, a broken invariant or
# an exception that escapes a parser fails the run; libFuzzer writes the input
# that caused it to build-fuzz/artifacts/.
#
# Needs clang with libFuzzer (Debian: clang, libclang-rt-14-dev).
# Environment: JOBS (default 2: fuzzers run at once too), CXX (default clang++).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(env run_options bench_config p2p_stream)
cxx=${CXX:-clang++}
dir=build-fuzz
# Build type "Fuzz" adds no flags of its own: these are all.
# -Wno-pass-failed: at -O1 clang reports every "vectorize" loop hint it skips.
flags="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g1 -O1 -Wno-pass-failed"

t0=$(date +%s)
mkdir -p "$dir"
cmake -S tests/fuzz -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Fuzz \
      -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_FLAGS="$flags" > "$dir/configure.log" 2>&1 ||
  { cat "$dir/configure.log"; exit 1; }
cmake --build "$dir" -j"${JOBS:-2}" --target "${targets[@]/#/fuzz_}"
echo "fuzz.sh: built in $(( $(date +%s) - t0 )) s"

# A parser that asks for more than 64 MiB gets std::bad_alloc (which it must
# handle) instead of filling memory; no input here justifies more.
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:max_allocation_size_mb=64
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
mkdir -p "$dir/artifacts"

# Each fuzzer runs on one core, so JOBS of them run at once: the same fuzzing
# time per target in half the wall time on 2 cores.
fuzz_one() {
  local t=$1 corpus="$dir/corpus/$1" dict=()
  mkdir -p "$corpus"
  cp -n tests/fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null || true
  [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
  "$dir/fuzz_$t" "$corpus" "${dict[@]}" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -artifact_prefix="$dir/artifacts/$t-" -print_final_stats=1 \
      2> "$dir/fuzz_$t.log"
}
report() {  # report TARGET STATUS
  if [ "$2" -ne 0 ]; then
    tail -60 "$dir/fuzz_$1.log"
    echo "fuzz.sh: fuzz_$1 FAILED"
    return 1
  fi
  echo "fuzz.sh: fuzz_$1: $(grep -E "^stat::number_of_executed_units|^Done" "$dir/fuzz_$1.log" | tr '\n' ' ')"
}
declare -A running=()  # pid -> target
failed=0
reap_one() {  # waits for one running fuzzer and reports it
  local status=0 pid
  wait -n -p pid "${!running[@]}" || status=$?
  report "${running[$pid]}" "$status" || failed=1
  unset "running[$pid]"
}
for t in "${targets[@]}"; do
  echo "fuzz.sh: fuzz_$t for $seconds s"
  fuzz_one "$t" &
  running[$!]=$t
  while (( ${#running[@]} >= ${JOBS:-2} )); do reap_one; done
done
while (( ${#running[@]} )); do reap_one; done
(( failed == 0 )) || exit 1
echo "fuzz.sh: all targets passed in $(( $(date +%s) - t0 )) s"
