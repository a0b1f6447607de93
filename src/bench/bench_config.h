// BenchConfig: what a `collie bench` sweep measures (shared by the driver and workers).
//
// Sizes follow nccl-tests: -b/-e/-f give the sweep, in bytes of the whole
// per-rank buffer (all_reduce, broadcast, reduce, send_recv) or of the whole
// gathered/scattered buffer (all_gather, reduce_scatter, all_to_all, gather,
// scatter).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace collie::bench {

struct BenchConfig {
  std::vector<std::string> ops;  // all_reduce, all_gather, ...
  size_t min_bytes = 8;
  size_t max_bytes = 64u << 20;
  double factor = 2;
  std::string dtype = "float32";
  int warmup = 3;
  int iters = 0;      // 0: chosen per size (more for small sizes)
  bool cold = false;  // rotate inputs through > 256 MiB (cache-cold)
  // Each rank rewrites its input (same values) before every call, untimed: the
  // input is then in its writer's cache, dirty, as a tensor a training step has
  // just produced, instead of clean data any core may read at full speed.
  bool dirty = false;
  bool shared = false;  // collie's inputs from empty_shared() (single-copy path)
  bool check = true;  // verify every result against the closed form
  // Time `iters` calls back to back after one barrier and report the mean per
  // call (nccl-tests' method) instead of timing each call after its own barrier
  // and reporting the median. See docs/performance.md for when they differ.
  bool loop = false;
  // Time each call after its own barrier, but from the moment the *last* rank
  // started it (every rank's clock is the machine's monotonic clock, so the ranks'
  // readings compare): each rank's time is its end minus the latest start. The
  // default measure from each rank's own start also counts how far apart the
  // barrier let the ranks go (docs/performance.md, "The barrier's release order");
  // this one is the collective's own critical path. Not with --loop.
  bool span = false;
  // broadcast, reduce, gather and scatter: the root rank, or kRotateRoot
  // (`--root rotate`): call i of a size, warm-up included, has root i % N, as
  // nccl-tests' `-r -1` does. A fixed root favours whichever library's barrier
  // lets that rank out first (docs/performance.md, "Rotating roots").
  int root = 0;
};

inline constexpr int kRotateRoot = -1;

// The root of call `call` (0, 1, ... within a size) on `n` ranks.
inline int root_of_call(const BenchConfig& config, long call, int n) {
  return config.root == kRotateRoot ? static_cast<int>(call % n) : config.root;
}

// std::invalid_argument unless config.root names one of `n` ranks (or rotates).
void check_root(const BenchConfig& config, int n);

const std::vector<std::string>& all_ops();

// An operation of all_ops(), which workers parse once per size (prepare) so that
// the timed calls dispatch on it: comparing the name with each operation's in
// turn cost up to 120 instructions a call (send_recv), on both sides of the
// comparison, about a quarter of an 8-byte all_reduce's.
enum class BenchOp {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSendRecv,
  kGather,
  kScatter
};

// Whether `op`'s size is the whole gathered or scattered buffer (N times a
// rank's piece: all_gather, reduce_scatter, all_to_all, gather, scatter) rather
// than a rank's buffer.
bool sized_by_whole_buffer(const std::string& op);

// Whether `op` has a root (broadcast, reduce, gather, scatter: --root).
bool is_rooted(const std::string& op);

// std::invalid_argument naming `op` if it is not one of all_ops().
BenchOp parse_bench_op(const std::string& op);

// Parses worker/driver sweep options; unknown options are returned in `rest`.
// Throws std::invalid_argument with a message for bad values.
BenchConfig parse_config(const std::vector<std::string>& args, std::vector<std::string>* rest);

// The arguments that reproduce `config` (for launching workers).
std::vector<std::string> config_args(const BenchConfig& config);

// Byte sizes of the sweep.
std::vector<size_t> sweep_sizes(const BenchConfig& config);

// nccl-tests bus bandwidth factor of `op` on n ranks.
double busbw_factor(const std::string& op, int n);

// Iterations for a size when config.iters is 0: about 0.2 s of data movement, 5..1000.
int iterations_for(const BenchConfig& config, size_t bytes);

// Parses "64K", "1M", "256M", "8".
size_t parse_size(const std::string& text);

}  // namespace collie::bench
