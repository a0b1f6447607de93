// demo.cc — a tour of every collie operation on N ranks (any N >= 2; the README runs 4).
// Each section names the call; every rank then prints its result, rank 0 first.
//
// Run:  collie run -n 4 build/examples/demo
// Output (4 ranks) begins:
//   collie demo: 4 ranks, backend shm
//   == all_reduce(sum) of full([4], rank + 1) ==
//   rank 0: [10. 10. 10. 10.]
//   rank 1: [10. 10. 10. 10.]
//   ...
#include "example_util.h"

namespace {

using collie::DType;
using collie::Shape;
using collie::Tensor;

int g_rank = 0;
int g_size = 1;

// Rank 0 prints the section title, then every rank prints "rank r: <text>" in order.
void show(const std::string& title, const std::string& text) {
  if (g_rank == 0) std::cout << "== " << title << " ==\n" << std::flush;
  collie::barrier();
  examples::print_in_rank_order("rank " + std::to_string(g_rank) + ": " + text + "\n");
}

Tensor arange(int64_t n) { return Tensor::arange(n, DType::Float32); }

void collectives() {
  const int r = g_rank, n = g_size;
  {
    auto [y, h] = collie::all_reduce(Tensor::full({4}, r + 1));
    show("all_reduce(sum) of full([4], rank + 1)", examples::str(y));
  }
  {
    Tensor x = Tensor::from_vector<float>({0.f + r, 1.f + r, 2.f + r});
    auto [y, h] = collie::all_reduce(x, collie::ReduceOp::MAX, collie::WORLD, /*async_op=*/true);
    h.wait();
    show("all_reduce(max, async_op=true) of arange(3) + rank, then handle.wait()", examples::str(y));
  }
  {
    auto [y, h] = collie::all_gather_into_tensor(Tensor::full({2}, r));
    show("all_gather_into_tensor of full([2], rank)", examples::str(y));
  }
  {
    Tensor x = Tensor::from_vector<float>(std::vector<float>(static_cast<size_t>(2 * n), 0.f));
    for (int i = 0; i < 2 * n; ++i) x.at<float>({i}) = static_cast<float>(i * (r + 1));
    auto [y, h] = collie::reduce_scatter_tensor(x, collie::ReduceOp::MIN);
    show("reduce_scatter_tensor(min) of arange(2N) * (rank + 1): rank r keeps rows 2r, 2r+1",
         examples::str(y));
  }
  {
    Tensor y = collie::reduce(Tensor::full({3}, r + 1), /*dst=*/n - 1);
    show("reduce(sum) of full([3], rank + 1) to rank N-1 (the others get shape [1])", examples::str(y));
  }
  {
    Tensor x = Tensor::from_vector<float>({10.f * r, 10.f * r + 1, 10.f * r + 2});
    Tensor y = collie::broadcast(x, /*src=*/1);
    show("broadcast from rank 1 of [10 rank, 10 rank + 1, 10 rank + 2]", examples::str(y));
  }
  {
    Tensor x = r == n - 1 ? arange(2 * n) : Tensor::zeros({2 * n});
    Tensor y = collie::scatter_tensor(x, /*src=*/n - 1);
    show("scatter_tensor from rank N-1 of arange(2N)", examples::str(y));
  }
  {
    Tensor y = collie::gather_into_tensor(Tensor::full({1}, r * r), /*dst=*/0);
    show("gather_into_tensor to rank 0 of full([1], rank * rank)", examples::str(y));
  }
  collie::barrier();
  show("barrier()", "passed the barrier");
}

void point_to_point() {
  const int r = g_rank, n = g_size;
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  {
    collie::CommHandle sent = collie::isend(Tensor::full({2}, r), next);
    Tensor y = collie::recv(Tensor::zeros({2}), prev);
    sent.wait();
    show("isend full([2], rank) to rank + 1, recv from rank - 1", examples::str(y));
  }
  {
    auto [y, h] = collie::irecv(Tensor::zeros({2}), prev, collie::WORLD, /*tag=*/7);
    collie::send(Tensor::full({2}, 10 + r), next, collie::WORLD, /*tag=*/7);
    h.wait();
    show("irecv from rank - 1 (tag 7), send full([2], 10 + rank) to rank + 1", examples::str(y));
  }
  {
    std::vector<Tensor> out = collie::batch_isend_irecv(
        {collie::P2POp("isend", Tensor::scalar(r + 1), next),
         collie::P2POp("irecv", Shape{}, prev, collie::WORLD, 0, DType::Float32)});
    show("batch_isend_irecv: isend rank + 1 to rank + 1, irecv from rank - 1", examples::tuple_str(out));
  }
}

void all_to_all() {
  const int r = g_rank, n = g_size;
  {
    std::vector<Tensor> inputs;
    std::vector<Shape> shapes;
    for (int j = 0; j < n; ++j) {
      inputs.push_back(Tensor::full({j + 1}, 10 * r + j));  // to rank j: j + 1 elements
      shapes.push_back({r + 1});                             // from every rank: rank + 1 elements
    }
    auto [out, h] = collie::all_to_all_with_output_shape(shapes, inputs);
    show("all_to_all_with_output_shape: rank i sends full([j + 1], 10 i + j) to rank j",
         examples::tuple_str(out));
  }
  {
    Tensor x = Tensor::arange(static_cast<double>(r), static_cast<double>(r + n), 1.0, DType::Float32);
    auto [y, h] = collie::all_to_all_single_with_output_shape({n}, x);
    show("all_to_all_single_with_output_shape of arange(N) + rank (element j goes to rank j)",
         examples::str(y));
  }
  {
    // Rank i sends (i + j) % 3 rows, each holding the value i, to rank j.
    std::vector<int64_t> matrix;
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) matrix.push_back((i + j) % 3);
    }
    int64_t in_rows = 0, out_rows = 0;
    for (int j = 0; j < n; ++j) in_rows += (r + j) % 3;
    for (int i = 0; i < n; ++i) out_rows += (i + r) % 3;
    Tensor output = Tensor::zeros({out_rows});
    collie::all_to_all_v_c(output, Tensor::full({in_rows}, r), matrix);
    show("all_to_all_v_c: rank i sends (i + j) % 3 copies of i to rank j", examples::str(output));
  }
}

void groups() {
  const int r = g_rank, n = g_size;
  std::vector<int> evens;  // even ranks, highest first: group rank 0 is the highest even rank
  for (int k = (n - 1) / 2 * 2; k >= 0; k -= 2) evens.push_back(k);
  std::string text = "not in group \"evens\"";
  if (r % 2 == 0) {
    collie::create_group("evens", evens);
    auto [y, h] = collie::all_reduce(Tensor::full({2}, r), collie::ReduceOp::SUM, "evens");
    std::string ranks;
    for (int k : collie::get_process_group_ranks("evens")) ranks += (ranks.empty() ? "" : ", ") + std::to_string(k);
    text = "group [" + ranks + "], group rank " + std::to_string(collie::get_rank("evens")) +
           ", all_reduce(sum) of full([2], rank) -> " + examples::str(y);
  }
  show("create_group(\"evens\", even ranks from highest to lowest) and all_reduce in it", text);
}

}  // namespace

int main() {
  return examples::run_example([](int rank, int size) {
    g_rank = rank;
    g_size = size;
    if (rank == 0) {
      std::cout << "collie demo: " << size << " ranks, backend " << collie::backend_name() << "\n" << std::flush;
    }
    collectives();
    point_to_point();
    all_to_all();
    groups();
    if (rank == 0) std::cout << "demo finished on " << size << " ranks\n" << std::flush;
  });
}
