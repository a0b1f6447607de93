// init()/release() and the state errors: every operation before init() (and after
// release()) is a RuntimeError that names the operation and says to call init();
// queries before init() read the environment; bad environments and backends are ValueErrors.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "comm_test_util.h"

namespace collie::testing {
namespace {

RunOptions without_init() {
  RunOptions o;
  o.call_init = false;
  return o;
}

// Calls every operation and checks each raises RuntimeError naming it and init().
void check_every_op_needs_init() {
  Tensor x = Tensor::ones({2});
  Tensor out = Tensor::zeros({2});
  SoftChecks soft;
  SOFT_THROWS(soft, all_reduce(x), collie::RuntimeError, "all_reduce", "init()");
  SOFT_THROWS(soft, all_gather_into_tensor(x), collie::RuntimeError, "all_gather_into_tensor", "init()");
  SOFT_THROWS(soft, reduce_scatter_tensor(x), collie::RuntimeError, "reduce_scatter_tensor", "init()");
  SOFT_THROWS(soft, reduce(x, 0), collie::RuntimeError, "reduce", "init()");
  SOFT_THROWS(soft, scatter_tensor(x, 0), collie::RuntimeError, "scatter_tensor", "init()");
  SOFT_THROWS(soft, gather_into_tensor(x, 0), collie::RuntimeError, "gather_into_tensor", "init()");
  SOFT_THROWS(soft, broadcast(x, 0), collie::RuntimeError, "broadcast", "init()");
  SOFT_THROWS(soft, barrier(), collie::RuntimeError, "barrier", "init()");
  SOFT_THROWS(soft, send(x, 0), collie::RuntimeError, "send", "init()");
  SOFT_THROWS(soft, recv(x, 0), collie::RuntimeError, "recv", "init()");
  SOFT_THROWS(soft, isend(x, 0), collie::RuntimeError, "isend", "init()");
  SOFT_THROWS(soft, irecv(x, 0), collie::RuntimeError, "irecv", "init()");
  SOFT_THROWS(soft, batch_isend_irecv({P2POp("isend", x, 0)}), collie::RuntimeError, "batch_isend_irecv",
                    "init()");
  SOFT_THROWS(soft, all_to_all_with_output_shape({Shape{2}, Shape{2}}, {x, x}), collie::RuntimeError,
                    "all_to_all_with_output_shape", "init()");
  SOFT_THROWS(soft, all_to_all_single_with_output_shape({2}, x), collie::RuntimeError,
                    "all_to_all_single_with_output_shape", "init()");
  SOFT_THROWS(soft, all_to_all_v_c(out, x, {1, 1, 1, 1}), collie::RuntimeError, "all_to_all_v_c", "init()");
  SOFT_THROWS(soft, create_group("g", {0, 1}), collie::RuntimeError, "create_group", "init()");
  SOFT_THROWS(soft, destroy_group("g"), collie::RuntimeError, "destroy_group", "init()");
  soft.finish();
}

TEST(Init, OperationsBeforeInitAreRuntimeErrors) {
  run_ranks(2, [](int rank) {
    RCHECK(!is_initialized());
    // Queries before init() come from the environment (COLLIE_RANK / COLLIE_WORLD_SIZE).
    RCHECK_EQ(get_rank(), rank);
    RCHECK_EQ(get_group_size(), 2);
    RCHECK_EQ(backend_name(), std::string());
    check_every_op_needs_init();
  }, without_init());
}

TEST(Init, OperationsAfterReleaseAreRuntimeErrors) {
  run_ranks(2, [](int) {
    init();
    barrier();
    release();
    RCHECK(!is_initialized());
    check_every_op_needs_init();
  }, without_init());
}

TEST(Init, InitTwiceIsANoOpAndVersionIsSet) {
  run_ranks(2, [](int rank) {
    init();  // the harness already called it
    RCHECK(is_initialized());
    RCHECK_EQ(get_rank(), rank);
    RCHECK(version() != nullptr && std::string(version()).size() > 0);
    auto [y, h] = all_reduce(Tensor::ones({1}));
    check_tensor(y, DType::Float32, {1}, [](int64_t) { return 2.0; }, "all_reduce after a second init()");
  });
}

// is_initialized() answers at once while init() waits for the other ranks: rank
// 1 joins only after rank 0's is_initialized() said false during its own init()
// (on another thread), so an is_initialized() that waited for init() would never
// answer and the job would hang until the harness's deadline.
TEST(Init, IsInitializedDoesNotWaitForTheRendezvous) {
  run_ranks(
      2,
      [](int rank) {
        const std::string asked = "/tmp/collie-test-" + std::to_string(getuid()) + "-" +
                                  std::getenv("COLLIE_JOB_ID") + "-asked";
        if (rank == 0) {
          std::thread joining([] { init(); });
          // Give init() time to take the runtime's lock and wait for rank 1; the
          // check below holds either way, it only means more once init() is inside.
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          RCHECK(!is_initialized());
          std::FILE* f = std::fopen(asked.c_str(), "w");
          RCHECK(f != nullptr);
          std::fclose(f);
          joining.join();
          RCHECK(is_initialized());
        } else {
          for (int i = 0; i < 60'000 && ::access(asked.c_str(), F_OK) != 0; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
          RCHECK_EQ(::access(asked.c_str(), F_OK), 0)
              << "rank 0 never got an answer from is_initialized()";
          std::remove(asked.c_str());
          init();
          RCHECK(is_initialized());
        }
        barrier();
        release();
      },
      without_init());
}

TEST(Init, WorldOfOne) {
  run_ranks(1, [](int) {
    RCHECK_EQ(get_group_size(), 1);
    auto [y, h] = all_reduce(Tensor::full({3}, 4.0));
    check_tensor(y, DType::Float32, {3}, [](int64_t) { return 4.0; }, "all_reduce in a world of one");
    barrier();
    auto [g, h2] = all_gather_into_tensor(Tensor::full({2}, 1.0));
    check_tensor(g, DType::Float32, {2}, [](int64_t) { return 1.0; }, "all_gather in a world of one");
  });
}

TEST(Init, UnknownBackendIsValueError) {
  run_ranks(1, [](int) {
    RCHECK_THROWS(init("carrier_pigeon"), collie::ValueError, "carrier_pigeon");
    RCHECK(!is_initialized());
  }, without_init());
}

TEST(Init, BadEnvironmentIsValueError) {
  RunOptions bad_timeout = without_init();
  bad_timeout.env = {{"COLLIE_TIMEOUT", "soon"}};
  run_ranks(1, [](int) { RCHECK_THROWS(init(), collie::ValueError, "COLLIE_TIMEOUT"); }, bad_timeout);

  RunOptions bad_debug = without_init();
  bad_debug.env = {{"COLLIE_DEBUG", "verbose"}};
  run_ranks(
      1, [](int) { RCHECK_THROWS(init(), collie::ValueError, "COLLIE_DEBUG", "verbose"); },
      bad_debug);

  RunOptions bad_copy_path = without_init();
  bad_copy_path.env = {{"COLLIE_COPY_PATH", "fast"}};
  run_ranks(
      1, [](int) { RCHECK_THROWS(init(), collie::ValueError, "COLLIE_COPY_PATH", "fast"); },
      bad_copy_path);

  RunOptions bad_kernels = without_init();
  bad_kernels.env = {{"COLLIE_REDUCE_KERNELS", "sse9"}};
  run_ranks(
      1,
      [](int) {
        RCHECK_THROWS(init(), collie::ValueError, "COLLIE_REDUCE_KERNELS", "sse9");
        RCHECK(!is_initialized());
      },
      bad_kernels);

  RunOptions bad_rank = without_init();
  bad_rank.env = {{"COLLIE_RANK", "5"}};
  run_ranks(1, [](int) { RCHECK_THROWS(init(), collie::ValueError, "COLLIE_RANK"); }, bad_rank);
}

// COLLIE_REDUCE_KERNELS=portable (which every CPU runs): reductions give the
// same results as with the kernels the CPU prefers, here a bfloat16 all_reduce
// whose sum rounds (5 ranks' 1.0234375 each: 5.1171875, not a bfloat16, rounds
// up to 5.125, where cutting its low bits would give 5.09375) and an int64
// one that wraps.
TEST(Init, ReduceKernelsNamedByTheEnvironmentGiveTheSameResults) {
  RunOptions portable;
  portable.env = {{"COLLIE_REDUCE_KERNELS", "portable"}};
  for (const RunOptions& o : {RunOptions{}, portable}) {
    run_ranks(
        5,
        [](int) {
          Tensor b = Tensor::full({1000}, 1.0234375, DType::BFloat16);
          auto [sum, h] = all_reduce(b);
          check_tensor(
              sum, DType::BFloat16, {1000}, [](int64_t) { return 5.125; }, "bfloat16 all_reduce");
          Tensor i = Tensor::full({1000}, static_cast<double>(INT64_C(1) << 62), DType::Int64);
          auto [wrapped, h2] = all_reduce(i);
          // 5 * 2^62 mod 2^64 = 2^62.
          check_tensor(
              wrapped, DType::Int64, {1000},
              [](int64_t) { return static_cast<double>(INT64_C(1) << 62); }, "int64 all_reduce");
        },
        o);
  }
}

}  // namespace
}  // namespace collie::testing
