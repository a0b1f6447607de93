// shared_tensors.cc — the single-copy path (collie/shared.h): every rank allocates its
// tensors with empty_shared(), so collectives read and write them in place.
//
// Run:  collie run -n 2 build/examples/shared_tensors
// Each rank prints (rank 0 first) that the results are shared too, and a summary
// of them (inputs: 1 MiB of float32 per rank, filled with rank + 1):
//   all_reduce: shared=1 first=3 last=3
//   all_gather: shared=1 [1 2] rows 2
#include "example_util.h"

int main() {
  return examples::run_example([](int rank, int) {
    const int64_t count = 1 << 18;  // 1 MiB per rank: well above the 16 KiB threshold
    collie::Tensor x = collie::empty_shared({count});
    x.copy_from(collie::Tensor::full({count}, rank + 1.0));

    auto [sum, h] = collie::all_reduce(x);  // peers' inputs read in place
    auto [gathered, h2] = collie::all_gather_into_tensor(x.reshape({1, count}));

    std::ostringstream os;
    os << "all_reduce: shared=" << collie::is_shared(sum) << " first=" << sum.item(0)
       << " last=" << sum.item(count - 1) << "\n"
       << "all_gather: shared=" << collie::is_shared(gathered) << " [" << gathered.item(0) << " "
       << gathered.item(count) << "] rows " << gathered.size(0) << "\n";
    examples::print_in_rank_order(os.str());
  });
}
