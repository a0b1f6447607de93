// Small helpers shared by the comm tests (see tests/cpp/harness for the harness itself).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "check.h"
#include "collie/collie.h"
#include "rank_runner.h"
#include "values.h"

namespace collie::testing {

// The output of an op returning (tensor, handle): checks the handle convention (empty
// when synchronous, non-empty when async_op) and waits when async.
inline Tensor finish(std::pair<Tensor, CommHandle> result, bool async, const std::string& what) {
  if (async) {
    RCHECK(static_cast<bool>(result.second)) << what << ": async_op=true must return a handle";
    result.second.wait();
    RCHECK(result.second.is_completed()) << what << ": is_completed() false after wait()";
  } else {
    RCHECK(!result.second) << what << ": async_op=false must return an empty handle";
  }
  return std::move(result.first);
}

// "int8 n=37 op=sum async" — names one case of a loop in failure messages.
inline std::string case_name(DType dt, int64_t count, bool async, const char* extra = "") {
  return std::string(dtype_name(dt)) + " count=" + std::to_string(count) +
         (async ? " async" : " sync") + extra;
}

// Options with the 4 KiB staging slots and rings (forces chunking of 5000 elements).
inline RunOptions small_chunks() {
  RunOptions o;
  o.env = small_chunk_env();
  return o;
}

// Prints "n1", "n2", ... as the name of a world-size parameter.
inline std::string world_size_name(const ::testing::TestParamInfo<int>& info) {
  return "n" + std::to_string(info.param);
}

// Index of `world_rank` in `ranks` (its group rank), -1 if absent.
inline int index_in(const std::vector<int>& ranks, int world_rank) {
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] == world_rank) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace collie::testing
