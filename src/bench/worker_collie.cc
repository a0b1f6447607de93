// collie_bench_worker: one rank of a `collie bench` sweep through collie's API.
// Started by `collie bench` via `collie run`; prints RESULT lines on rank 0.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_config.h"
#include "bench/bench_sweep.h"
#include "collie/collie.h"

namespace collie::bench {
namespace {

// Inputs hold rank+1 everywhere, so every result has a closed form.
class CollieComm {
 public:
  explicit CollieComm(const BenchConfig& config)
      : config_(config),
        dtype_(parse_dtype(config.dtype)),
        shared_(config.shared),
        rank_(get_rank()),
        n_(get_group_size()) {
    check_root(config, n_);
  }
  int rank() const { return rank_; }
  int size() const { return n_; }
  void barrier() { collie::barrier(); }

  std::vector<double> all_gather_double(double v) {
    return all_gather_into_tensor(Tensor::full({1}, v, DType::Float64)).first.to_double_vector();
  }

  void max_over_ranks(std::vector<int64_t>& values) {
    const Tensor most = all_reduce(Tensor::from_vector(values), ReduceOp::MAX).first;
    std::memcpy(values.data(), most.data_ptr(), values.size() * sizeof(int64_t));
  }

  bool prepare(const std::string& op, size_t bytes, int copies) {
    op_ = parse_bench_op(op);
    const int64_t es = static_cast<int64_t>(element_size(dtype_));
    int64_t count = std::max<int64_t>(1, static_cast<int64_t>(bytes) / es);
    if (sized_by_whole_buffer(op)) {
      count = std::max<int64_t>(n_, count / n_ * n_);  // whole buffer divisible by N
    }
    Shape shape = {count};
    if (op == "all_gather" || op == "gather") shape = {count / n_};
    if (op == "reduce_scatter") shape = {n_, count / n_};
    inputs_.clear();
    for (int i = 0; i < copies; ++i) {
      Tensor x = Tensor::full(shape, rank_ + 1, dtype_);
      if (shared_) {
        Tensor s = empty_shared(shape, dtype_);
        s.copy_from(x);
        x = s;
      }
      inputs_.push_back(x);
    }
    const auto* bytes_of = static_cast<const uint8_t*>(inputs_[0].data_ptr());
    pristine_.assign(bytes_of, bytes_of + inputs_[0].nbytes());
    count_ = count;
    out_shape_ = {count};
    calls_ = 0;
    return true;
  }

  void rewrite(int copy) {
    Tensor& input = inputs_[static_cast<size_t>(copy)];
    std::memcpy(input.data_ptr(), pristine_.data(), pristine_.size());
  }

  void run(int copy) {
    const Tensor& x = inputs_[static_cast<size_t>(copy)];
    // The previous result goes before the call, as in a loop that is done with
    // each result before the next (and as the OpenMPI side writes into one
    // buffer): kept alive, it would be a second output in the cache while this
    // call writes its own (2 ranks, all_gather of 1 MiB on a 2 MiB L2: 52 against
    // 40 us). The block cache then hands the same block back each call.
    out_.reset();  // (not `= Tensor()`: that takes two references to a shared empty tensor)
    root_ = root_of_call(config_, calls_++, n_);
    switch (op_) {
      case BenchOp::kAllReduce:
        out_ = all_reduce(x).first;
        break;
      case BenchOp::kAllGather:
        out_ = all_gather_into_tensor(x).first;
        break;
      case BenchOp::kReduceScatter:
        out_ = reduce_scatter_tensor(x).first;
        break;
      case BenchOp::kBroadcast:
        out_ = broadcast(x, root_);
        break;
      case BenchOp::kReduce:
        out_ = reduce(x, root_);
        break;
      case BenchOp::kAllToAll:
        out_ = all_to_all_single_with_output_shape(out_shape_, x).first;
        break;
      case BenchOp::kSendRecv: {
        int next = (rank_ + 1) % n_, prev = (rank_ + n_ - 1) % n_;
        // The received tensor is moved out of the results (as the other ops'
        // outputs are out of their pairs), not copied.
        out_ = std::move(batch_isend_irecv({P2POp("isend", x, next), P2POp("irecv", x, prev)})[1]);
        break;
      }
      case BenchOp::kGather:
        out_ = gather_into_tensor(x, root_);
        break;
      case BenchOp::kScatter:
        out_ = scatter_tensor(x, root_);
        break;
    }
  }

  bool check(const std::string& op) {
    const double sum = n_ * (n_ + 1) / 2.0;
    const Tensor& out = *out_;
    const int64_t total = out.numel();
    auto expect = [&](int64_t i) -> double {
      if (op == "all_reduce" || op == "reduce_scatter") return sum;
      if (op == "reduce") return rank_ == root_ ? sum : 0;  // [1] zeros elsewhere
      if (op == "broadcast" || op == "scatter") return root_ + 1;
      if (op == "gather") return rank_ == root_ ? static_cast<double>(i / (total / n_) + 1) : 0;
      if (op == "all_gather" || op == "all_to_all")
        return static_cast<double>(i / (total / n_) + 1);
      return (rank_ + n_ - 1) % n_ + 1;  // send_recv: the previous rank's value
    };
    for (int64_t i = 0; i < total; i += std::max<int64_t>(1, total / 1024)) {
      if (out.item(i) != expect(i)) return false;
    }
    return out.item(total - 1) == expect(total - 1);
  }

 private:
  const BenchConfig& config_;
  DType dtype_;
  bool shared_;
  int rank_, n_;
  long calls_ = 0;  // of this size, warm-up included (root_of_call)
  int root_ = 0;    // the last call's root (broadcast, reduce)
  int64_t count_ = 0;
  // all_to_all's output shape, made once per size as a training loop would
  // (a braced {count_} per call was a malloc the OpenMPI side does not do).
  Shape out_shape_;
  BenchOp op_ = BenchOp::kAllReduce;
  std::vector<Tensor> inputs_;
  std::vector<uint8_t> pristine_;  // what every input holds (rewrite)
  std::optional<Tensor> out_;      // the last call's result
};

}  // namespace
}  // namespace collie::bench

int main(int argc, char** argv) {
  try {
    collie::bench::BenchConfig config =
        collie::bench::parse_config(std::vector<std::string>(argv + 1, argv + argc), nullptr);
    collie::init();
    collie::bench::CollieComm comm(config);
    int rc = collie::bench::run_sweep(comm, config);
    collie::release();
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collie_bench_worker: %s\n", e.what());
    return 1;
  }
}
