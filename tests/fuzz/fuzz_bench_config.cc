// libFuzzer target: `collie bench` sweep options (src/bench/bench_config.cc). Any
// argv must give a config or std::invalid_argument / std::out_of_range (the
// documented errors of parse_config and of the std::sto* it uses), and a config
// must survive the trip to the workers: config_args() parsed again gives the
// same sweep.
//
// Input: NUL-separated arguments; an odd first byte collects unknown options in
// `rest` instead of rejecting them.
#include <cmath>
#include <stdexcept>

#include "bench/bench_config.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using collie::bench::BenchConfig;
  if (size == 0) return 0;
  auto args = collie::fuzz::split(data + 1, size - 1);
  std::vector<std::string> rest;
  BenchConfig c;
  try {
    c = collie::bench::parse_config(args, (data[0] & 1) ? &rest : nullptr);
  } catch (const std::invalid_argument&) {
    return 0;
  } catch (const std::out_of_range&) {
    return 0;
  }
  FUZZ_CHECK(!c.ops.empty() && c.min_bytes > 0 && c.min_bytes <= c.max_bytes && c.factor > 1,
             "config limits");
  BenchConfig again;
  try {
    again = collie::bench::parse_config(collie::bench::config_args(c), nullptr);
  } catch (const std::exception& e) {
    collie::fuzz::fail(std::string("config_args() does not parse again: ") + e.what());
  }
  FUZZ_CHECK(again.ops == c.ops && again.min_bytes == c.min_bytes &&
                 again.max_bytes == c.max_bytes && again.factor == c.factor &&
                 again.dtype == c.dtype && again.warmup == c.warmup && again.iters == c.iters &&
                 again.cold == c.cold && again.check == c.check && again.loop == c.loop &&
                 again.shared == c.shared && again.dirty == c.dirty && again.span == c.span &&
                 again.root == c.root,
             "config_args() round trip");
  // The sweep itself, where it is of a sane length: a factor barely above 1 asks
  // for millions of sizes (reported; sweep_sizes has no cap yet).
  const double steps = std::log(static_cast<double>(c.max_bytes) / static_cast<double>(c.min_bytes)) /
                       std::log(c.factor);
  if (steps < 4096 && c.max_bytes < (uint64_t{1} << 53)) {  // sizes exact in a double
    auto sizes = collie::bench::sweep_sizes(c);
    FUZZ_CHECK(!sizes.empty() && sizes.front() == c.min_bytes, "sweep starts at -b");
    for (size_t i = 1; i < sizes.size(); ++i) FUZZ_CHECK(sizes[i] >= sizes[i - 1], "sweep ascends");
  }
  return 0;
}
