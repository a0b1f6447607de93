// collie_bench_mpi: one rank of the same sweep through OpenMPI's own collectives,
// for `collie bench --compare mpi` (started with mpirun). Buffers are reused
// between calls, as MPI users do; inputs hold rank+1 so results have closed forms.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_config.h"
#include "bench/bench_sweep.h"
#include "bench/huge_page_allocator.h"

namespace collie::bench {
namespace {

struct MpiType {
  MPI_Datatype type;
  size_t size;
};

bool mpi_type_of(const std::string& dtype, MpiType* out) {
  if (dtype == "float32")
    *out = {MPI_FLOAT, 4};
  else if (dtype == "float64")
    *out = {MPI_DOUBLE, 8};
  else if (dtype == "int32")
    *out = {MPI_INT, 4};
  else if (dtype == "int64")
    *out = {MPI_LONG_LONG, 8};
  else if (dtype == "int16")
    *out = {MPI_SHORT, 2};
  else if (dtype == "int8")
    *out = {MPI_SIGNED_CHAR, 1};
  else if (dtype == "uint8")
    *out = {MPI_UNSIGNED_CHAR, 1};
  else
    return false;  // float16/bfloat16/bool: MPI has no reduction for them
  return true;
}

class MpiComm {
 public:
  explicit MpiComm(const BenchConfig& config)
      : config_(config), supported_(mpi_type_of(config.dtype, &type_)) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &n_);
    check_root(config, n_);
  }
  int rank() const { return rank_; }
  int size() const { return n_; }
  void barrier() { MPI_Barrier(MPI_COMM_WORLD); }

  std::vector<double> all_gather_double(double v) {
    std::vector<double> all(static_cast<size_t>(n_));
    MPI_Allgather(&v, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD);
    return all;
  }

  void max_over_ranks(std::vector<int64_t>& values) {
    MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_INT64_T,
                  MPI_MAX, MPI_COMM_WORLD);
  }

  bool prepare(const std::string& op, size_t bytes, int copies) {
    if (!supported_) return false;
    op_ = parse_bench_op(op);
    count_ = std::max<size_t>(1, bytes / type_.size);
    if (sized_by_whole_buffer(op)) {
      count_ = std::max<size_t>(static_cast<size_t>(n_), count_ / n_ * n_);
    }
    size_t in_count = op == "all_gather" || op == "gather" ? count_ / n_ : count_;
    inputs_.assign(static_cast<size_t>(copies), Buffer(in_count * type_.size));
    for (auto& buf : inputs_) fill(buf.data(), in_count, rank_ + 1);
    pristine_ = inputs_[0];
    out_.assign(count_ * type_.size, 0);
    calls_ = 0;
    return true;
  }

  void rewrite(int copy) {
    auto& input = inputs_[static_cast<size_t>(copy)];
    std::memcpy(input.data(), pristine_.data(), input.size());
  }

  void run(int copy) {
    const void* in = inputs_[static_cast<size_t>(copy)].data();
    void* out = out_.data();
    const int c = static_cast<int>(count_), per = static_cast<int>(count_ / n_);
    root_ = root_of_call(config_, calls_++, n_);
    switch (op_) {
      case BenchOp::kAllReduce:
        MPI_Allreduce(in, out, c, type_.type, MPI_SUM, MPI_COMM_WORLD);
        break;
      case BenchOp::kAllGather:
        MPI_Allgather(in, per, type_.type, out, per, type_.type, MPI_COMM_WORLD);
        break;
      case BenchOp::kReduceScatter:
        MPI_Reduce_scatter_block(in, out, per, type_.type, MPI_SUM, MPI_COMM_WORLD);
        break;
      case BenchOp::kBroadcast:
        if (rank_ == root_) std::memcpy(out, in, count_ * type_.size);
        MPI_Bcast(out, c, type_.type, root_, MPI_COMM_WORLD);
        break;
      case BenchOp::kReduce:
        MPI_Reduce(in, out, c, type_.type, MPI_SUM, root_, MPI_COMM_WORLD);
        break;
      case BenchOp::kAllToAll:
        MPI_Alltoall(in, per, type_.type, out, per, type_.type, MPI_COMM_WORLD);
        break;
      case BenchOp::kSendRecv: {
        int next = (rank_ + 1) % n_, prev = (rank_ + n_ - 1) % n_;
        MPI_Sendrecv(in, c, type_.type, next, 0, out, c, type_.type, prev, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        break;
      }
      case BenchOp::kGather:
        MPI_Gather(in, per, type_.type, out, per, type_.type, root_, MPI_COMM_WORLD);
        break;
      case BenchOp::kScatter:
        MPI_Scatter(in, per, type_.type, out, per, type_.type, root_, MPI_COMM_WORLD);
        break;
    }
  }

  bool check(const std::string& op) {
    const double sum = n_ * (n_ + 1) / 2.0;
    size_t total = op == "reduce_scatter" || op == "scatter" ? count_ / n_ : count_;
    auto expect = [&](size_t i) -> double {
      if (op == "all_reduce" || op == "reduce_scatter") return sum;
      if (op == "reduce") return sum;
      if (op == "broadcast" || op == "scatter") return root_ + 1;
      if (op == "all_gather" || op == "all_to_all" || op == "gather")
        return static_cast<double>(i / (count_ / n_) + 1);
      return (rank_ + n_ - 1) % n_ + 1;
    };
    // MPI leaves a non-root's output of reduce and gather untouched.
    if ((op == "reduce" || op == "gather") && rank_ != root_) return true;
    for (size_t i = 0; i < total; i += std::max<size_t>(1, total / 1024)) {
      if (value(i) != expect(i)) return false;
    }
    return value(total - 1) == expect(total - 1);
  }

 private:
  void fill(unsigned char* p, size_t n, double v) {
    for (size_t i = 0; i < n; ++i) store(p, i, v);
  }
  void store(unsigned char* p, size_t i, double v) {
    if (type_.type == MPI_FLOAT)
      reinterpret_cast<float*>(p)[i] = static_cast<float>(v);
    else if (type_.type == MPI_DOUBLE)
      reinterpret_cast<double*>(p)[i] = v;
    else if (type_.type == MPI_INT)
      reinterpret_cast<int*>(p)[i] = static_cast<int>(v);
    else if (type_.type == MPI_LONG_LONG)
      reinterpret_cast<long long*>(p)[i] = static_cast<long long>(v);
    else if (type_.type == MPI_SHORT)
      reinterpret_cast<short*>(p)[i] = static_cast<short>(v);
    else if (type_.type == MPI_SIGNED_CHAR)
      reinterpret_cast<signed char*>(p)[i] = static_cast<signed char>(v);
    else
      reinterpret_cast<unsigned char*>(p)[i] = static_cast<unsigned char>(v);
  }
  double value(size_t i) const {
    const unsigned char* p = out_.data();
    if (type_.type == MPI_FLOAT) return reinterpret_cast<const float*>(p)[i];
    if (type_.type == MPI_DOUBLE) return reinterpret_cast<const double*>(p)[i];
    if (type_.type == MPI_INT) return reinterpret_cast<const int*>(p)[i];
    if (type_.type == MPI_LONG_LONG)
      return static_cast<double>(reinterpret_cast<const long long*>(p)[i]);
    if (type_.type == MPI_SHORT) return reinterpret_cast<const short*>(p)[i];
    if (type_.type == MPI_SIGNED_CHAR) return reinterpret_cast<const signed char*>(p)[i];
    return p[i];
  }

  const BenchConfig& config_;
  bool supported_;
  MpiType type_{MPI_FLOAT, 4};
  int rank_ = 0, n_ = 1;
  long calls_ = 0;  // of this size, warm-up included (root_of_call)
  int root_ = 0;    // the last call's root (broadcast, reduce)
  size_t count_ = 0;
  BenchOp op_ = BenchOp::kAllReduce;
  // Large buffers on huge pages, as collie's tensors are (huge_page_allocator.h).
  using Buffer = std::vector<unsigned char, HugePageAllocator<unsigned char>>;
  std::vector<Buffer> inputs_;
  Buffer pristine_;  // what every input holds (rewrite)
  Buffer out_;
};

}  // namespace
}  // namespace collie::bench

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 1;
  try {
    collie::bench::BenchConfig config =
        collie::bench::parse_config(std::vector<std::string>(argv + 1, argv + argc), nullptr);
    collie::bench::MpiComm comm(config);
    rc = collie::bench::run_sweep(comm, config);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collie_bench_mpi: %s\n", e.what());
  }
  MPI_Finalize();
  return rc;
}
