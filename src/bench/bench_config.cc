#include "bench/bench_config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "core/byte_count.h"

namespace collie::bench {

const std::vector<std::string>& all_ops() {
  static const std::vector<std::string> ops = {"all_reduce", "all_gather", "reduce_scatter",
                                               "broadcast",  "reduce",     "all_to_all",
                                               "send_recv",  "gather",     "scatter"};
  return ops;
}

bool sized_by_whole_buffer(const std::string& op) {
  return op == "all_gather" || op == "reduce_scatter" || op == "all_to_all" || op == "gather" ||
         op == "scatter";
}

bool is_rooted(const std::string& op) {
  return op == "broadcast" || op == "reduce" || op == "gather" || op == "scatter";
}

BenchOp parse_bench_op(const std::string& op) {
  const auto& ops = all_ops();
  auto it = std::find(ops.begin(), ops.end(), op);
  if (it == ops.end()) throw std::invalid_argument("collie bench: unknown operation '" + op + "'");
  return static_cast<BenchOp>(it - ops.begin());  // all_ops() lists them in BenchOp's order
}

size_t parse_size(const std::string& text) {
  if (auto bytes = detail::parse_byte_count(text)) return *bytes;
  throw std::invalid_argument("bad size '" + text +
                              "': a byte count of at least 1 (8, 64K, 4M, 1G)");
}

BenchConfig parse_config(const std::vector<std::string>& args, std::vector<std::string>* rest) {
  BenchConfig c;
  auto value = [&](size_t& i) -> const std::string& {
    if (i + 1 >= args.size()) throw std::invalid_argument(args[i] + " needs a value");
    return args[++i];
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--op") {
      // Repeated, or several in one (--op gather,scatter), in the order given.
      const std::string& list = value(i);
      for (size_t begin = 0;;) {
        const size_t end = std::min(list.find(',', begin), list.size());
        const std::string v = list.substr(begin, end - begin);
        if (v == "all") {
          c.ops.insert(c.ops.end(), all_ops().begin(), all_ops().end());
        } else if (std::find(all_ops().begin(), all_ops().end(), v) != all_ops().end()) {
          c.ops.push_back(v);
        } else {
          throw std::invalid_argument("unknown op '" + v + "'" +
                                      (v == list ? "" : " in --op '" + list + "'"));
        }
        if (end == list.size()) break;
        begin = end + 1;
      }
    } else if (a == "-b" || a == "--minbytes") {
      c.min_bytes = parse_size(value(i));
    } else if (a == "-e" || a == "--maxbytes") {
      c.max_bytes = parse_size(value(i));
    } else if (a == "-f" || a == "--stepfactor") {
      c.factor = std::stod(value(i));
      if (!(c.factor > 1)) throw std::invalid_argument("-f must be > 1");
    } else if (a == "--dtype") {
      c.dtype = value(i);
    } else if (a == "-w" || a == "--warmup") {
      c.warmup = std::stoi(value(i));
    } else if (a == "--iters") {
      c.iters = std::stoi(value(i));
    } else if (a == "--cold") {
      c.cold = true;
    } else if (a == "--dirty") {
      c.dirty = true;
    } else if (a == "--shared") {
      c.shared = true;
    } else if (a == "--no-check") {
      c.check = false;
    } else if (a == "--loop") {
      c.loop = true;
    } else if (a == "--span") {
      c.span = true;
    } else if (a == "--root") {
      const std::string& v = value(i);
      if (v == "rotate") {
        c.root = kRotateRoot;
      } else {
        size_t used = 0;
        const int root = std::stoi(v, &used);
        if (used != v.size() || root < 0) {
          throw std::invalid_argument("--root takes a rank (0, 1, ...) or 'rotate', not '" + v +
                                      "'");
        }
        c.root = root;
      }
    } else if (rest != nullptr) {
      rest->push_back(a);
    } else {
      throw std::invalid_argument("unknown option '" + a + "'");
    }
  }
  if (c.ops.empty()) c.ops = {"all_reduce"};
  if (c.min_bytes > c.max_bytes) throw std::invalid_argument("-b must not exceed -e");
  if (c.dirty && c.loop) {
    throw std::invalid_argument(
        "--dirty rewrites the inputs between calls, untimed; --loop times calls back to back");
  }
  if (c.span && c.loop) {
    throw std::invalid_argument(
        "--span times each call after its own barrier; --loop times calls back to back");
  }
  return c;
}

std::vector<std::string> config_args(const BenchConfig& c) {
  std::vector<std::string> a;
  for (const std::string& op : c.ops) {
    a.push_back("--op");
    a.push_back(op);
  }
  // %.17g: the workers must parse back exactly this factor (std::to_string keeps six
  // decimals: 1.0000001 became 1.000000, which they reject; found by fuzz_bench_config).
  char factor[32];
  std::snprintf(factor, sizeof factor, "%.17g", c.factor);
  a.insert(a.end(), {"-b", std::to_string(c.min_bytes), "-e", std::to_string(c.max_bytes), "-f",
                     factor, "--dtype", c.dtype, "-w", std::to_string(c.warmup),
                     "--iters", std::to_string(c.iters)});
  if (c.cold) a.push_back("--cold");
  if (c.dirty) a.push_back("--dirty");
  if (c.shared) a.push_back("--shared");
  if (!c.check) a.push_back("--no-check");
  if (c.loop) a.push_back("--loop");
  if (c.span) a.push_back("--span");
  if (c.root != 0)
    a.insert(a.end(), {"--root", c.root == kRotateRoot ? "rotate" : std::to_string(c.root)});
  return a;
}

void check_root(const BenchConfig& c, int n) {
  if (c.root != kRotateRoot && c.root >= n) {
    throw std::invalid_argument("--root " + std::to_string(c.root) + ": there are only " +
                                std::to_string(n) + " ranks");
  }
}

std::vector<size_t> sweep_sizes(const BenchConfig& c) {
  std::vector<size_t> sizes;
  for (double s = static_cast<double>(c.min_bytes);
       s <= static_cast<double>(c.max_bytes) * 1.0000001; s *= c.factor) {
    size_t bytes = static_cast<size_t>(std::llround(s));
    // Factors barely above 1 would repeat sizes; keep each size once, at most 1000.
    if (!sizes.empty() && bytes == sizes.back()) continue;
    sizes.push_back(bytes);
    if (sizes.size() >= 1000) break;
  }
  return sizes;
}

double busbw_factor(const std::string& op, int n) {
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  // (n - 1) / n of the buffer crosses between ranks (gather and scatter, which
  // nccl-tests lack: to or from the root).
  if (sized_by_whole_buffer(op)) return double(n - 1) / n;
  return 1.0;  // broadcast, reduce, send_recv
}

int iterations_for(const BenchConfig& c, size_t bytes) {
  if (c.iters > 0) return c.iters;
  double target = 0.2 * 1e9;  // bytes moved per size, at ~1 GB/s about 0.2 s
  return std::clamp(static_cast<int>(target / std::max<size_t>(bytes, 1)), 5, 1000);
}

}  // namespace collie::bench
