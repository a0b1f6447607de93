// The stress test's plan: a random but reproducible sequence of operations.
//
// make_plan(seed, ...) is a pure function of its arguments, so every rank builds
// the same plan and issues the same operations in the same order (ranks that are
// not members of an operation's group skip it). Every input is a closed-form
// function of (world rank, op's key, element index) (tests/cpp/harness/values.h),
// so each rank computes the expected result of every operation locally.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collie/comm.h"
#include "collie/dtype.h"

namespace collie::stress {

struct GroupDef {
  std::string name;        // collie::WORLD for the world
  std::vector<int> ranks;  // world ranks in group-rank order
};

// The groups the plan draws from: the world and sub-groups of the 4-rank world,
// unsorted and single-rank ones included.
std::vector<GroupDef> stress_groups(int world_size);

enum class Kind {
  AllReduce,
  AllGather,
  ReduceScatter,
  Reduce,
  Broadcast,
  Gather,
  Scatter,
  Barrier,
  SendRecv,     // one sender, one receiver (blocking or isend/irecv)
  BatchRing,    // batch_isend_irecv: every member sends to the next, receives from the previous
  AllToAllSingle,
  AllToAllList,
  AllToAllVC,
  kCount
};

const char* kind_name(Kind k);

struct OpSpec {
  int index = 0;         // position in the plan
  Kind kind = Kind::Barrier;
  int group = 0;         // index into the groups
  DType dtype = DType::Float32;
  ReduceOp op = ReduceOp::SUM;
  int64_t rows = 0;      // rows per rank (per destination for reduce_scatter/scatter)
  int64_t cols = 1;      // elements per row
  int root = 0;          // group rank of the root / sender
  int peer = 0;          // group rank of the receiver (SendRecv)
  bool async = false;
  int64_t key = 0;       // offset into the closed-form data, differs per op
  std::vector<int64_t> splits;  // N x N rows, splits[i*N + j]: group rank i -> j (all-to-all)

  // "#12 all_reduce(max) int8 [5x17] group 'g031' async"
  std::string describe(const std::vector<GroupDef>& groups) const;
};

// `count` operations over `groups`. Sizes (elements per rank): 72% up to 600, 25%
// up to 16K, 3% up to 100K, all multiplied by `scale`.
std::vector<OpSpec> make_plan(uint64_t seed, int count, const std::vector<GroupDef>& groups,
                              int64_t scale = 1);

}  // namespace collie::stress
