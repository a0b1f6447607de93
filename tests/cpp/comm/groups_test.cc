// Group management: creation order is the one world<->group map (unsorted lists), rank
// queries, world aliases, non-members that only record a group, re-creation as a no-op,
// destroy, single-rank groups, and every ValueError/RuntimeError of runtime.h.
#include <exception>
#include <future>
#include <string>
#include <thread>

#include "comm_test_util.h"

namespace collie::testing {
namespace {

TEST(Groups, UnsortedRankListsAndQueries) {
  run_ranks(4, [](int rank) {
    const std::vector<int> pair = {3, 1};
    const std::vector<int> trio = {2, 0, 3};
    // Every rank calls create_group; non-members only record the groups.
    create_group("q_pair", pair);
    create_group("q_trio", trio);
    for (const auto& [name, ranks] : {std::pair{"q_pair", pair}, std::pair{"q_trio", trio}}) {
      const std::string g = name;
      RCHECK_EQ(get_process_group_ranks(name), ranks) << g;
      for (size_t i = 0; i < ranks.size(); ++i) {
        RCHECK_EQ(get_world_rank_from_group_rank(name, static_cast<int>(i)), ranks[i]) << g;
        RCHECK_EQ(get_group_rank_from_world_rank(ranks[i], name), static_cast<int>(i)) << g;
      }
      RCHECK_THROWS(get_world_rank_from_group_rank(name, static_cast<int>(ranks.size())), collie::RuntimeError);
      RCHECK_THROWS(get_world_rank_from_group_rank(name, -1), collie::RuntimeError);
      for (int w = 0; w < 4; ++w) {
        if (index_in(ranks, w) < 0) {
          RCHECK_THROWS(get_group_rank_from_world_rank(w, name), collie::RuntimeError) << g << " world " << w;
        }
      }
      const int my = index_in(ranks, rank);
      if (my >= 0) {
        RCHECK_EQ(get_rank(name), my) << g;
        RCHECK_EQ(get_group_size(name), static_cast<int>(ranks.size())) << g;
        RCHECK_EQ(get_local_rank_size(name), static_cast<int>(ranks.size())) << g;
        const int local = get_local_rank(name);
        RCHECK(local >= 0 && local < static_cast<int>(ranks.size())) << g << " local rank " << local;
        // Members can use it.
        auto [y, h] = all_reduce(Tensor::full({2}, rank, DType::Int32), ReduceOp::SUM, name);
        double sum = 0;
        for (int r : ranks) sum += r;
        check_tensor(y, DType::Int32, {2}, [sum](int64_t) { return sum; }, "all_reduce in " + g);
      } else {
        // Recorded only: queries work, membership queries and operations raise RuntimeError.
        RCHECK_THROWS(get_rank(name), collie::RuntimeError) << g;
        RCHECK_THROWS(all_reduce(Tensor::ones({2}), ReduceOp::SUM, name), collie::RuntimeError, "all_reduce")
            << g;
        RCHECK_THROWS(barrier(name), collie::RuntimeError, "barrier") << g;
        RCHECK_THROWS(broadcast(Tensor::ones({2}), ranks[0], name), collie::RuntimeError, "broadcast") << g;
      }
      // The same name with the same ranks again is a no-op, on members and non-members.
      create_group(name, ranks);
      RCHECK_EQ(get_process_group_ranks(name), ranks) << g;
    }
    // The world.
    RCHECK_EQ(get_rank(), rank);
    RCHECK_EQ(get_group_size(), 4);
    RCHECK_EQ(get_local_rank(), rank);
    RCHECK_EQ(get_local_rank_size(), 4);
    RCHECK_EQ(get_process_group_ranks(), (std::vector<int>{0, 1, 2, 3}));
    RCHECK_EQ(get_world_rank_from_group_rank(WORLD, 2), 2);
    RCHECK_EQ(get_group_rank_from_world_rank(3, WORLD), 3);
    RCHECK_THROWS(get_rank("no_such_group"), collie::RuntimeError);
    RCHECK_THROWS(get_group_size("no_such_group"), collie::RuntimeError);
    // The groups still work together after all that.
    barrier();
  });
}

TEST(Groups, WorldAliases) {
  run_ranks(3, [](int rank) {
    RCHECK_EQ(world_group_name(), std::string(WORLD));
    RCHECK_EQ(backend_name(), std::string("shm"));
    RCHECK(is_initialized());
    for (std::string_view name : {WORLD, HCCL_WORLD_COMM_GROUP, NCCL_WORLD_COMM_GROUP, MCCL_WORLD_COMM_GROUP}) {
      const std::string g(name);
      RCHECK_EQ(get_rank(name), rank) << g;
      RCHECK_EQ(get_group_size(name), 3) << g;
      RCHECK_EQ(get_process_group_ranks(name), (std::vector<int>{0, 1, 2})) << g;
      auto [y, h] = all_reduce(Tensor::full({3}, rank + 1, DType::Int16), ReduceOp::SUM, name);
      check_tensor(y, DType::Int16, {3}, [](int64_t) { return 6.0; }, "all_reduce in " + g);
      barrier(name);
      Tensor b = broadcast(Tensor::full({1}, rank), 2, name);
      check_tensor(b, DType::Float32, {1}, [](int64_t) { return 2.0; }, "broadcast in " + g);
      Tensor got = rank == 0 ? recv(Tensor::zeros({1}), 1, name) : Tensor();
      if (rank == 1) send(Tensor::full({1}, 9.0), 0, name);
      if (rank == 0) check_tensor(got, DType::Float32, {1}, [](int64_t) { return 9.0; }, "recv in " + g);
    }
  });
}

// A call's group is found by a per-thread shortcut: the very view of the world's
// constant name it found last. Views that share its characters' address but
// not its length (empty, a prefix) are other names, and equal text elsewhere is
// the same name.
TEST(Groups, TheLastGroupFoundIsReusedOnlyForTheSameName) {
  run_ranks(2, [](int rank) {
    auto sum = [](std::string_view group) {
      return all_reduce(Tensor::full({2}, 1.0), ReduceOp::SUM, group).first;
    };
    check_tensor(
        sum(WORLD), DType::Float32, {2}, [](int64_t) { return 2.0; }, "WORLD");
    RCHECK_THROWS(sum(WORLD.substr(0, 0)), collie::RuntimeError, "does not exist");
    RCHECK_THROWS(sum(WORLD.substr(0, 6)), collie::RuntimeError, "collie", "does not exist");
    const std::string copy(WORLD);
    check_tensor(
        sum(copy), DType::Float32, {2}, [](int64_t) { return 2.0; }, "a copy of WORLD");
    check_tensor(
        sum(WORLD), DType::Float32, {2}, [](int64_t) { return 2.0; }, "WORLD again");
    RCHECK_EQ(get_rank(WORLD), rank);
  });
}

// init("hccl") runs on the default backend and makes "hccl_world_group" the world's name.
TEST(Groups, InitWithMindSporeBackendName) {
  RunOptions o;
  o.call_init = false;
  run_ranks(2, [](int rank) {
    RCHECK(!is_initialized());
    RCHECK_EQ(backend_name(), std::string());
    init("hccl");
    RCHECK(is_initialized());
    RCHECK_EQ(world_group_name(), std::string("hccl_world_group"));
    RCHECK_EQ(backend_name(), std::string("shm"));
    init("hccl");  // again: a no-op
    auto [y, h] = all_reduce(Tensor::full({2}, rank + 1.0));
    check_tensor(y, DType::Float32, {2}, [](int64_t) { return 3.0; }, "all_reduce after init(\"hccl\")");
    auto [z, h2] = all_reduce(Tensor::full({2}, rank + 1.0), ReduceOp::MAX, "hccl_world_group");
    check_tensor(z, DType::Float32, {2}, [](int64_t) { return 2.0; }, "all_reduce in hccl_world_group");
    release();
    RCHECK(!is_initialized());
    // init() may be called again after release().
    init();
    RCHECK_EQ(world_group_name(), std::string(WORLD));
    auto [w, h3] = all_reduce(Tensor::full({2}, rank + 1.0));
    check_tensor(w, DType::Float32, {2}, [](int64_t) { return 3.0; }, "all_reduce after re-init");
    release();
  }, o);
}

TEST(Groups, CreateGroupValueErrors) {
  run_ranks(2, [](int) {
    SoftChecks soft;
    SOFT_THROWS(soft, create_group("", {0, 1}), collie::ValueError, "create_group");
    SOFT_THROWS(soft, create_group(WORLD, {0, 1}), collie::ValueError, "create_group");
    SOFT_THROWS(soft, create_group("hccl_world_group", {0, 1}), collie::ValueError, "create_group");
    SOFT_THROWS(soft, create_group("empty", {}), collie::ValueError, "create_group");
    SOFT_THROWS(soft, create_group("dups", {0, 1, 0}), collie::ValueError, "create_group");
    SOFT_THROWS(soft, create_group("too_big", {0, 2}), collie::ValueError, "create_group");
    SOFT_THROWS(soft, create_group("negative", {-1, 0}), collie::ValueError, "create_group");
    create_group("both", {1, 0});
    SOFT_THROWS(soft, create_group("both", {0, 1}), collie::ValueError, "create_group", "both");
    RCHECK_EQ(get_process_group_ranks("both"), (std::vector<int>{1, 0}));
    // None of the failed names exists.
    SOFT_THROWS(soft, get_process_group_ranks("dups"), collie::RuntimeError);
    soft.finish();
  });
}

TEST(Groups, DestroyGroup) {
  run_ranks(2, [](int rank) {
    SoftChecks soft;
    SOFT_THROWS(soft, destroy_group(WORLD), collie::ValueError, "destroy_group");
    SOFT_THROWS(soft, destroy_group("hccl_world_group"), collie::ValueError, "destroy_group");
    SOFT_THROWS(soft, destroy_group("never_created"), collie::ValueError, "destroy_group");
    create_group("short_lived", {0, 1});
    auto [y, h] = all_reduce(Tensor::ones({1}), ReduceOp::SUM, "short_lived");
    check_tensor(y, DType::Float32, {1}, [](int64_t) { return 2.0; }, "all_reduce before destroy");
    barrier("short_lived");
    destroy_group("short_lived");
    SOFT_THROWS_DERIVED(soft, all_reduce(Tensor::ones({1}), ReduceOp::SUM, "short_lived"), collie::Error,
                        "all_reduce", "short_lived");
    // The name can be used again, with other ranks.
    create_group("short_lived", {1, 0});
    RCHECK_EQ(get_rank("short_lived"), 1 - rank);
    auto [z, h2] = all_reduce(Tensor::full({1}, rank), ReduceOp::MAX, "short_lived");
    check_tensor(z, DType::Float32, {1}, [](int64_t) { return 1.0; }, "all_reduce after re-create");
    soft.finish();
  });
}

// A thread's lookup cache holds the group it used last (runtime.cc) even after
// another thread destroyed it: that thread's next call on the name must find it
// gone, and a group created again under the name must be the new one.
TEST(Groups, AGroupDestroyedByAnotherThreadIsNotUsedFromTheCache) {
  run_ranks(2, [](int rank) {
    create_group("cached", {0, 1});
    // `tried`: the worker's call on the destroyed name is over before the name
    // is created again (else that call may find the new group and succeed).
    std::promise<void> used, destroyed, tried, recreated;
    std::string after_destroy;   // the error of the worker's call on the destroyed name
    double after_recreate = -1;  // its all_reduce(MAX) of world ranks on the new group
    double before = -1;          // its all_reduce(SUM) of ones on the first group
    std::exception_ptr failure;
    std::thread worker([&] {
      try {
        before = all_reduce(Tensor::ones({1}), ReduceOp::SUM, "cached").first.item();
        used.set_value();
        destroyed.get_future().wait();
        try {
          all_reduce(Tensor::ones({1}), ReduceOp::SUM, "cached");
          after_destroy = "no error";
        } catch (const collie::RuntimeError& e) {
          after_destroy = e.what();
        }
        tried.set_value();
        recreated.get_future().wait();
        after_recreate = all_reduce(Tensor::full({1}, rank), ReduceOp::MAX, "cached").first.item();
      } catch (...) {
        failure = std::current_exception();
      }
    });
    used.get_future().wait();
    destroy_group("cached");
    destroyed.set_value();
    tried.get_future().wait();
    create_group("cached", {1, 0});
    recreated.set_value();
    worker.join();
    if (failure) std::rethrow_exception(failure);
    RCHECK_EQ(before, 2.0);
    RCHECK(after_destroy.find("cached") != std::string::npos &&
           after_destroy.find("does not exist") != std::string::npos)
        << after_destroy;
    RCHECK_EQ(after_recreate, 1.0);
    RCHECK_EQ(get_rank("cached"), 1 - rank);
    destroy_group("cached");
  });
}

// Groups of one rank, and many groups created and destroyed in a row.
TEST(Groups, SingleRankGroupsAndChurn) {
  run_ranks(3, [](int rank) {
    const std::string self = "self_" + std::to_string(rank);
    create_group(self, {rank});
    RCHECK_EQ(get_rank(self), 0);
    RCHECK_EQ(get_group_size(self), 1);
    auto [y, h] = all_reduce(Tensor::full({4}, rank + 5.0), ReduceOp::SUM, self);
    check_tensor(y, DType::Float32, {4}, [rank](int64_t) { return rank + 5.0; }, "all_reduce in " + self);
    Tensor b = broadcast(Tensor::full({2}, rank), rank, self);
    check_tensor(b, DType::Float32, {2}, [rank](int64_t) { return double(rank); }, "broadcast in " + self);
    for (int k = 0; k < 20; ++k) {
      const std::string name = "churn_" + std::to_string(k);
      create_group(name, {(k + 2) % 3, k % 3, (k + 1) % 3});
      auto [z, h2] = all_reduce(Tensor::full({3}, rank + k, DType::Int64), ReduceOp::SUM, name);
      check_tensor(z, DType::Int64, {3}, [k](int64_t) { return 3.0 + 3 * k; }, "all_reduce in " + name);
      destroy_group(name);
    }
  });
}

}  // namespace
}  // namespace collie::testing
