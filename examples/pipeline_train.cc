// pipeline_train.cc — a 2-stage pipeline with send/recv on the autograd tape, checked
// against the single-process model.
//
// Rank 0 holds the first layer, rank 1 the second. Each step splits the batch into
// micro-batches: rank 0 computes relu(x W1 + b1) for each and sends it (ag::send); rank 1
// receives it (ag::recv), computes the output and the loss. Then both run backward: rank 1
// from its loss, rank 0 with no loss of its own (tape.backward()): the backward of each send
// receives its activation's gradient from rank 1 (on a gradient tag, never confused with
// the next step's activations). After each step every rank compares its stage's gradients
// and parameters with the same model trained in one process on the whole batch
// (tolerance 1e-6) and exits with status 1 on a mismatch.
//
// Run:  collie run -n 2 build/examples/pipeline_train
#include <iostream>

#include "autograd/mlp.h"

namespace {

constexpr int64_t kBatch = 16, kMicro = 2;
constexpr int kSteps = 5;
constexpr double kLr = 0.2, kTolerance = 1e-6;
constexpr int kTag = 11;

int train(int rank, int world) {
  namespace ag = collie::autograd;
  if (world != 2) {
    std::cerr << "pipeline_train: needs exactly 2 ranks (one per stage), got " << world << "\n";
    return 2;
  }
  const mlp::Batch batch = mlp::make_batch(kBatch);
  const int64_t rows = kBatch / kMicro;
  mlp::Params stage = mlp::init_params(), ref = mlp::init_params();
  double worst = 0;
  for (int step = 0; step < kSteps; ++step) {
    // GPipe order: every micro-batch forward, then one backward over all of them.
    {
      ag::Tape tape;
      if (rank == 0) {
        for (int64_t m = 0; m < kMicro; ++m) {
          ag::Variable h =
              mlp::hidden(ag::Variable(mlp::rows(batch.x, m * rows, rows)), stage.w1, stage.b1);
          ag::send(h, /*dst=*/1, collie::WORLD, kTag);
        }
        tape.backward();  // no loss here; the sends' backward brings the gradients
      } else {
        std::vector<ag::Variable> losses;
        for (int64_t m = 0; m < kMicro; ++m) {
          ag::Variable h = ag::recv({rows, mlp::kHidden}, collie::DType::Float64, /*src=*/0,
                                    collie::WORLD, kTag);
          // The full-batch mean is the average of the micro-batch means.
          losses.push_back(ag::scale(
              mlp::mse(mlp::output(h, stage.w2, stage.b2), mlp::rows(batch.y, m * rows, rows)),
              1.0 / kMicro));
        }
        ag::Variable loss = losses[0];
        for (size_t m = 1; m < losses.size(); ++m) loss = loss + losses[m];
        if (step == 0 || step == kSteps - 1)
          std::cout << "step " << step + 1 << ": loss " << loss.value().item() << "\n";
        tape.backward(loss);
      }
    }
    {
      ag::Tape tape;
      tape.backward(
          mlp::mse(mlp::output(mlp::hidden(ag::Variable(batch.x), ref.w1, ref.b1), ref.w2, ref.b2),
                   batch.y));
    }
    // This rank's stage against the same layers of the reference: gradients, then parameters.
    const std::vector<ag::Variable*> mine = rank == 0
                                                ? std::vector<ag::Variable*>{&stage.w1, &stage.b1}
                                                : std::vector<ag::Variable*>{&stage.w2, &stage.b2};
    const std::vector<ag::Variable*> theirs = rank == 0
                                                  ? std::vector<ag::Variable*>{&ref.w1, &ref.b1}
                                                  : std::vector<ag::Variable*>{&ref.w2, &ref.b2};
    double diff = 0;
    for (size_t i = 0; i < mine.size(); ++i)
      diff = std::max(diff, mlp::max_abs_diff(mine[i]->grad(), theirs[i]->grad()));
    for (auto* p : mine) mlp::sgd_step(*p, kLr);
    for (auto* p : ref.all()) mlp::sgd_step(*p, kLr);
    for (size_t i = 0; i < mine.size(); ++i)
      diff = std::max(diff, mlp::max_abs_diff(mine[i]->value(), theirs[i]->value()));
    diff = collie::all_reduce(collie::Tensor::scalar(diff, collie::DType::Float64),
                              collie::ReduceOp::MAX)
               .first.item();
    worst = std::max(worst, diff);
    if (!(diff <= kTolerance)) {
      std::cerr << "rank " << rank << ": step " << step + 1
                << ": gradients or parameters differ from the single-process "
                << "model by " << diff << " (tolerance " << kTolerance << ")\n";
      return 1;
    }
  }
  if (rank == 1) {
    std::cout << "OK: for " << kSteps << " steps of " << kMicro
              << " micro-batches, both stages' gradients and "
              << "parameters equal the single-process model (max difference " << worst << ")\n";
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
