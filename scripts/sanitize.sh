#!/usr/bin/env bash
# Builds collie under sanitizers in separate trees and runs a subset of the tests.
#
#   scripts/sanitize.sh [asan|tsan]...     (default: asan tsan)
#
#   asan: build-asan, -fsanitize=address,undefined: memory errors, leaks, UB
#   tsan: build-tsan, -fsanitize=thread: data races between threads of a rank
#
# Only the test binaries listed below are built (not the examples, the Python
# module or the MPI backend), so each tree builds and runs in a few minutes on
# 2 cores. Any sanitizer report fails the run: UBSan and TSan halt on the first
# error, and ctest sees the failing test.
#
# TSan cannot see the other processes of a job: peers' writes to shared memory
# and their futex wake-ups are invisible to it. scripts/tsan.supp suppresses the
# reports that come only from that (each entry says why); races between a rank's
# own threads are still reported.
#
# Environment: JOBS (default 2), SANITIZE_CTEST_ARGS (extra ctest arguments).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${JOBS:-2}
kinds=("$@")
((${#kinds[@]})) || kinds=(asan tsan)

# Build type "Sanitize" has no flags of its own: -O1 -g1 (line tables) below
# compiles twice as fast as RelWithDebInfo's -O2 -g and still gives file:line
# in every report.
common=(-G Ninja -DCMAKE_BUILD_TYPE=Sanitize -DCOLLIE_WITH_MPI=OFF
        -DCOLLIE_WITH_PYTHON=OFF -DCOLLIE_BUILD_EXAMPLES=OFF)

# Unit tests of the core, the runtime and the p2p matcher (run directly: the
# ctest labels below do not select them), the operations, the harness, the
# launcher, fault injection and the stress test.
asan_core=(core_test_dtype core_test_tensor core_test_layout_ref core_test_tensor_print
           core_test_reduce_kernels core_test_small_pool core_test_message_buffer runtime_test_flight_recorder
           runtime_test_work runtime_test_futex_mutex runtime_test_biased_mutex runtime_test_group
           backends_test_p2p_matcher
           backends_test_segment)
asan_targets=("${asan_core[@]}" harness_test
              all_reduce_test all_gather_test reduce_scatter_test rooted_ops_test eager_rooted_test
              barrier_test p2p_test batch_isend_irecv_test all_to_all_test groups_test
              init_and_errors_test concurrency_test fault_test shared_test cma_test
              collie_cli_tests collie_fault_test collie_stress_test)
# The CMA world's data movers run three times under the copy-path tests
# (cma_copy_path_single, _hybrid, _staged: the same sizes in two dtypes, each
# path forced), so their plain run in every dtype, which repeats whichever path
# this machine prefers, is left out here: under ASan it took 66 s of the 284.
# (The CMA paths move bytes: the dtype decides nothing there but the byte count.)
asan_ctest=(-L '^(comm|harness|cli|faults|stress)$' -E '^WorldSizes/CmaWorld\.DataMovers')
# The tests where a rank runs several threads at once: async operations and the
# progress thread, concurrent callers, groups created while others communicate,
# p2p in any order, failures delivered to waiting threads, the stress mix; and
# the small-object pool, whose blocks move between threads (ASan bypasses it), and
# the flight recorder, dumped while other threads record; Work, completed by one
# thread while another sleeps on it; FutexMutex and BiasedMutex (a plain mutex
# under TSan) under contention; tensor layouts,
# whose owners are counted by hand (LayoutRef), copied and dropped on several threads.
tsan_core=(core_test_small_pool core_test_layout_ref runtime_test_flight_recorder runtime_test_work
           runtime_test_futex_mutex runtime_test_biased_mutex)
tsan_targets=("${tsan_core[@]}" concurrency_test shared_test p2p_test batch_isend_irecv_test groups_test fault_test
              all_reduce_test eager_rooted_test collie_stress_test)
tsan_ctest=(-R '^(Concurrency|P2P|Batch|Groups|Fault|AllReduce|Stress|Shared|EagerRootedMismatch|Ranks/EagerRooted)\.')

elapsed() { echo $(( $(date +%s) - $1 )); }

run_kind() {
  local kind=$1 dir flags core=() targets select
  case $kind in
    asan)
      dir=build-asan
      # -Wno-maybe-uninitialized: GCC 12 with ASan at -O1 reports 60 false ones
      # inside libstdc++'s <regex> (std::function moves in _NFA, from the tests'
      # regexes); the other builds keep the warning.
      flags="-O1 -g1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -Wno-maybe-uninitialized"
      core=("${asan_core[@]}")
      targets=("${asan_targets[@]}")
      select=("${asan_ctest[@]}")
      # Fork-based tests: a child's report goes to its stderr, and its exit code
      # fails the rank (and so the test). Leaks are checked at every exit.
      export ASAN_OPTIONS=detect_leaks=1:exitcode=86:strict_string_checks=1
      export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
      export COLLIE_STRESS_PERCENT=${COLLIE_STRESS_PERCENT:-25}
      ;;
    tsan)
      dir=build-tsan
      flags="-O1 -g1 -fsanitize=thread -fno-omit-frame-pointer"
      core=("${tsan_core[@]}")
      targets=("${tsan_targets[@]}")
      select=("${tsan_ctest[@]}")
      export TSAN_OPTIONS="halt_on_error=1:exitcode=87:second_deadlock_stack=1:suppressions=$root/scripts/tsan.supp"
      # TSan slows the stress test ~15x: a tenth of its operations still mixes every kind.
      export COLLIE_STRESS_PERCENT=${COLLIE_STRESS_PERCENT:-10}
      ;;
    *) echo "sanitize.sh: unknown kind '$kind' (asan, tsan)" >&2; return 2 ;;
  esac
  # Sanitized ranks run slower: give the fault tests' time bounds more slack.
  export COLLIE_FAULT_SLACK_S=${COLLIE_FAULT_SLACK_S:-3}
  local t0
  t0=$(date +%s)
  echo "sanitize.sh: $kind: configuring and building ${#targets[@]} targets in $dir"
  mkdir -p "$dir"
  cmake -S . -B "$dir" "${common[@]}" \
        -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
        -DCMAKE_SHARED_LINKER_FLAGS="$flags" > "$dir/configure.log" 2>&1 ||
    { cat "$dir/configure.log"; return 1; }
  cmake --build "$dir" -j"$jobs" --target "${targets[@]}"
  echo "sanitize.sh: $kind: built in $(elapsed "$t0") s"
  t0=$(date +%s)
  for t in "${core[@]}"; do
    "$dir/tests/cpp/${t%%_test_*}/$t" --gtest_brief=1  # core_test_x in tests/cpp/core
  done
  # shellcheck disable=SC2086
  ctest --test-dir "$dir" "${select[@]}" -j"$jobs" --output-on-failure --timeout 600 \
        ${SANITIZE_CTEST_ARGS:-}
  echo "sanitize.sh: $kind: tests passed in $(elapsed "$t0") s"
}

for kind in "${kinds[@]}"; do
  run_kind "$kind"
done
