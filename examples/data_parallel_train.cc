// data_parallel_train.cc — data-parallel training with mirror-style gradient sync, checked
// against single-process training.
//
// Every rank holds the same MLP parameters and 1/N of the batch. Each parameter enters the
// model through ag::mirror(p, WORLD, /*mean=*/true): an identity forward whose backward
// all-reduces the gradient and divides by N (MindSpore's _MirrorOperator with mean_flag).
// With each rank's loss the mean over its own rows, the synchronised gradient is the
// full-batch gradient, so after every SGD step the parameters must equal those of the same
// model trained in one process on the whole batch. Each rank also trains that reference
// itself and compares after each of the 20 steps (tolerance 1e-6); any mismatch makes the
// program exit with status 1.
//
// Run:  collie run -n 4 build/examples/data_parallel_train
#include <iostream>

#include "autograd/mlp.h"

namespace {

constexpr int64_t kBatch = 32;
constexpr int kSteps = 20;
constexpr double kLr = 0.2, kTolerance = 1e-6;

int train(int rank, int world) {
  namespace ag = collie::autograd;
  if (kBatch % world != 0) {
    std::cerr << "data_parallel_train: the batch of " << kBatch << " rows does not split over "
              << world << " ranks\n";
    return 2;
  }
  const int64_t local = kBatch / world;
  const mlp::Batch batch = mlp::make_batch(kBatch);
  const collie::Tensor x = mlp::rows(batch.x, rank * local, local),
                       y = mlp::rows(batch.y, rank * local, local);

  mlp::Params dp = mlp::init_params(), ref = mlp::init_params();
  double worst = 0;
  for (int step = 0; step < kSteps; ++step) {
    // Data parallel: this rank's rows; gradients synchronised by the mirrors.
    double global_loss = 0;
    {
      ag::Tape tape;
      auto m = [](const ag::Variable& p) {
        return ag::mirror(p, collie::WORLD, /*mean_flag=*/true);
      };
      ag::Variable loss = mlp::mse(
          mlp::output(mlp::hidden(ag::Variable(x), m(dp.w1), m(dp.b1)), m(dp.w2), m(dp.b2)), y);
      tape.backward(loss);
      global_loss = collie::all_reduce(loss.value()).first.item() / world;  // for the printout
    }
    // The reference: one process, the whole batch.
    {
      ag::Tape tape;
      tape.backward(
          mlp::mse(mlp::output(mlp::hidden(ag::Variable(batch.x), ref.w1, ref.b1), ref.w2, ref.b2),
                   batch.y));
    }
    for (auto* p : dp.all()) mlp::sgd_step(*p, kLr);
    for (auto* p : ref.all()) mlp::sgd_step(*p, kLr);

    double diff = 0;
    const auto mine = dp.all(), theirs = ref.all();
    for (size_t i = 0; i < mine.size(); ++i)
      diff = std::max(diff, mlp::max_abs_diff(mine[i]->value(), theirs[i]->value()));
    // Every rank takes the same verdict, so none is left waiting in the next step's collectives.
    diff = collie::all_reduce(collie::Tensor::scalar(diff, collie::DType::Float64),
                              collie::ReduceOp::MAX)
               .first.item();
    worst = std::max(worst, diff);
    if (rank == 0)
      std::cout << "step " << step + 1 << ": loss " << global_loss << ", max |param - reference| "
                << diff << "\n";
    if (!(diff <= kTolerance)) {
      std::cerr << "rank " << rank << ": step " << step + 1
                << ": parameters differ from single-process training by " << diff << " (tolerance "
                << kTolerance << ")\n";
      return 1;
    }
  }
  if (rank == 0) {
    std::cout << "OK: after each of " << kSteps << " steps on " << world
              << " ranks the parameters equal "
              << "single-process full-batch training (max difference " << worst << ")\n";
  }
  return 0;
}

}  // namespace

int main() {
  try {
    collie::init();
    const int status = train(collie::get_rank(), collie::get_group_size());
    collie::release();
    return status;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
