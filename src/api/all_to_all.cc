// The three all-to-all functions of comm_func (collie/comm.h).
#include <algorithm>
#include <numeric>
#include <optional>
#include <span>
#include <string>

#include "api/api_common.h"
#include "collie/shared.h"
#include "core/inline_or_heap.h"
#include "runtime/shared_output.h"

namespace collie {

using collie::WorkPtr;
using detail::Backend;
using detail::OpKind;

namespace {

int64_t row_size(const Shape& shape) {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// One call's send and receive counts (n each), inside the object for groups of
// up to 32 ranks: a small call allocates nothing for them.
class CallCounts {
 public:
  explicit CallCounts(size_t n) : n_(n), counts_(2 * n) {}

  std::span<size_t> send() { return counts_.span().first(n_); }
  std::span<size_t> recv() { return counts_.span().subspan(n_, n_); }

 private:
  size_t n_;
  detail::InlineOrHeap<size_t, 64> counts_;
};

// Element counts per rank of a split along dim 0 (rows of `row` elements) into
// `counts`: the given split sizes (checked), or N equal parts.
void split_counts(const std::vector<int64_t>& given, int64_t rows, int64_t row,
                  const detail::Group& g, const char* which, std::span<size_t> counts) {
  const int n = g.size();
  if (given.empty()) {
    const int64_t per_rank = g.rows_per_rank(rows);
    if (per_rank < 0) {
      throw ValueError(std::string("For all_to_all_single_with_output_shape, ") + which +
                       " shape at dim 0 must be divided by world_size, but got " +
                       std::to_string(rows) + " and " + std::to_string(n) + ".");
    }
    std::fill(counts.begin(), counts.end(), static_cast<size_t>(per_rank * row));
    return;
  }
  if (given.size() != static_cast<size_t>(n)) {
    throw ValueError(std::string("all_to_all_single_with_output_shape: ") + which +
                     "_split_sizes " + list_str(given) + " must have one entry per rank (" +
                     std::to_string(n) + ")");
  }
  int64_t sum = 0;
  for (int64_t v : given) {
    if (v < 0)
      throw ValueError(std::string("all_to_all_single_with_output_shape: negative ") + which +
                       "_split_sizes " + list_str(given));
    sum += v;
  }
  if (sum != rows) {
    throw ValueError(std::string("all_to_all_single_with_output_shape: ") + which +
                     "_split_sizes " + list_str(given) + " sum to " + std::to_string(sum) +
                     " but the " + which + " has " + std::to_string(rows) + " rows at dim 0");
  }
  for (size_t i = 0; i < given.size(); ++i) counts[i] = static_cast<size_t>(given[i] * row);
}

// all_to_all_single's output. It usually differs from the (contiguous) input in
// its rows alone: then it takes the layout Tensor::uninitialized_rows_like keeps
// per thread instead of looking output_shape up (2 ranks, 8 B: 2,769 -> 2,739
// instructions a call).
Tensor new_all_to_all_output(const Tensor& in, const Shape& output_shape) {
  const Shape& shape = in.shape();
  if (output_shape.size() == shape.size() &&
      std::equal(shape.begin() + 1, shape.end(), output_shape.begin() + 1)) {
    return detail::new_output_rows(in, output_shape[0]);
  }
  return detail::new_output(in, output_shape, in.dtype());
}

// all_to_all_with_output_shape's inputs as the backend reads them. Inputs that
// lie back to back in memory, each contiguous (the pieces of one tensor that
// split() made, or numpy.split's views: the usual way to build the list), are
// one packed input, read where it lies (shared when it lies in the arena: the
// pieces of a shared tensor). Others are read piece by piece where they lie (a
// non-contiguous one copied first); the call is then a shared tensors' call when
// every piece is shared (collie/shared.h), however they lie. Either way the Work
// keeps the tensors read alive when it must, not a view made of them. Copying
// the inputs together cost the list form more than the exchange (2 ranks,
// float32, separate inputs: 4 MiB 345 against all_to_all_single's 234 us, 32 MiB
// 4.17 against 2.00 ms).
class ListInput {
 public:
  explicit ListInput(const std::vector<Tensor>& inputs)
      : packed_(packed_start(inputs)),
        pieces_(packed_ ? 0 : inputs.size()),
        read_(inputs.size() + 1) {
    for (size_t j = 0; j < inputs.size(); ++j) read_[j] = &inputs[j];
    if (packed_) {
      shared_ = *packed_ != nullptr && detail::is_shared_memory(*packed_, packed_bytes_);
      return;
    }
    shared_ = true;
    for (size_t j = 0; j < inputs.size(); ++j) {
      const Tensor* t = &inputs[j];
      if (t->numel() == 0) continue;  // adds no bytes, wherever it points
      if (!t->is_contiguous()) {
        copies_.reserve(inputs.size());  // the pointers to earlier copies stay valid
        t = read_[j] = &copies_.emplace_back(t->contiguous());
      }
      shared_ = shared_ && is_shared(*t);
      pieces_[j] = t->data_ptr();
    }
  }

  // Whether every input is shared.
  bool shared() const { return shared_; }
  // A tensor of the call's dtype, for its OpInfo.
  const Tensor& any() const { return *read_[0]; }
  detail::AllToAllInput backend_input() const {
    if (packed_) return {*packed_, {}};
    return {nullptr, pieces_.span()};
  }
  // The tensors the call's Work keeps alive when it must: those the backend
  // reads (each input or its copy), then `out`.
  std::span<const Tensor* const> tensors_with(const Tensor& out) {
    read_[read_.size() - 1] = &out;
    return read_.span();
  }

 private:
  // Where inputs that lie back to back, each contiguous, start (nullptr when
  // every one is empty; packed_bytes_ their bytes); else none.
  std::optional<const void*> packed_start(const std::vector<Tensor>& inputs) {
    const uint8_t* start = nullptr;
    const uint8_t* end = nullptr;
    for (const Tensor& t : inputs) {
      if (t.numel() == 0) continue;  // adds no bytes, wherever it points
      const auto* data = static_cast<const uint8_t*>(t.data_ptr());
      if (!t.is_contiguous() || (start != nullptr && data != end)) return std::nullopt;
      if (start == nullptr) start = data;
      end = data + t.nbytes();
    }
    packed_bytes_ = static_cast<size_t>(end - start);
    return start;
  }

  size_t packed_bytes_ = 0;
  std::optional<const void*> packed_;
  std::vector<Tensor> copies_;  // contiguous copies of non-contiguous inputs
  bool shared_ = false;
  detail::InlineOrHeap<const void*, 32> pieces_;  // given piece by piece: where each lies
  detail::InlineOrHeap<const Tensor*, 33> read_;  // tensors_with()'s, the last one `out`
};

// all_to_all_with_output_shape's output: one tensor of `total` elements, returned,
// whose consecutive pieces of output_shape_list's shapes go to `outputs`. Shapes
// that differ only in dim 0 (rows of one width, the usual case) are rows of one
// tensor of that width, sliced; others are reshaped 1-D slices (a second layout
// each).
Tensor new_split_outputs(bool shared, const std::vector<Shape>& shapes, int64_t total, DType dtype,
                         std::vector<Tensor>& outputs) {
  auto new_output = [&](const Shape& shape) {
    return shared ? empty_shared(shape, dtype) : Tensor::uninitialized(shape, dtype);
  };
  const Shape& first = shapes.front();
  bool rows_of_one_width = !first.empty();
  int64_t rows = 0;
  for (const Shape& s : shapes) {
    rows_of_one_width = rows_of_one_width && s.size() == first.size() &&
                        std::equal(s.begin() + 1, s.end(), first.begin() + 1);
    if (!rows_of_one_width) break;
    rows += s[0];
  }
  outputs.reserve(shapes.size());
  if (rows_of_one_width) {
    Shape shape = first;
    shape[0] = rows;
    Tensor out = new_output(shape);
    int64_t row = 0;
    for (const Shape& s : shapes) {
      outputs.push_back(out.slice(row, row + s[0]));
      row += s[0];
    }
    return out;
  }
  Tensor out = new_output({total});
  int64_t offset = 0;
  for (const Shape& s : shapes) {
    const int64_t len = shape_numel(s);
    outputs.push_back(out.slice(offset, offset + len).reshape(s));
    offset += len;
  }
  return out;
}

// `keep`: the tensors that hold what `in` points to, and the output (the Work
// keeps them alive when it must); `dtype_of`: one of the call's dtype.
WorkPtr launch(detail::Group& g, const Tensor& dtype_of, const detail::AllToAllInput& in,
               std::span<const Tensor* const> keep, CallCounts& counts, const Tensor& out,
               bool blocking) {
  // Counts differ per rank, so the fingerprint carries none (step 0 checks them).
  detail::OpInfo info = detail::op_info(OpKind::AllToAll, dtype_of, 0, ReduceOp::SUM, -1, blocking);
  return g.submit(info, keep, [&](Backend& b, const WorkPtr& w) {
    b.all_to_all(w, in, counts.send(), out.data_ptr(), counts.recv(), dtype_of.dtype());
  });
}
WorkPtr launch(detail::Group& g, const Tensor& in, CallCounts& counts, const Tensor& out,
               bool blocking) {
  const Tensor* keep[] = {&in, &out};
  return launch(g, in, {in.data_ptr(), {}}, keep, counts, out, blocking);
}

}  // namespace

std::pair<std::vector<Tensor>, CommHandle> all_to_all_with_output_shape(
    const std::vector<Shape>& output_shape_list, const std::vector<Tensor>& input_tensor_list,
    std::string_view group, bool async_op) {
  auto g = detail::lookup_for_op(group, "all_to_all_with_output_shape");
  const size_t n = static_cast<size_t>(g->size());
  if (input_tensor_list.size() != n || output_shape_list.size() != n) {
    throw TypeError("For all_to_all_with_output_shape, input_tensor_list (" +
                    std::to_string(input_tensor_list.size()) + ") and output_shape_list (" +
                    std::to_string(output_shape_list.size()) +
                    ") must have one entry per rank of the group (" + std::to_string(n) + ")");
  }
  DType dtype = input_tensor_list[0].dtype();
  for (const Tensor& t : input_tensor_list) {
    if (t.dtype() != dtype) {
      throw TypeError(
          "For all_to_all_with_output_shape, all_to_all input dtype must be the same, but got " +
          std::string(dtype_name(dtype)) + " and " + std::string(dtype_name(t.dtype())) + ".");
    }
  }
  CallCounts counts(n);
  std::span<size_t> send = counts.send(), recv = counts.recv();
  int64_t total_recv = 0;
  for (size_t i = 0; i < n; ++i) {
    const Shape& shape = output_shape_list[i];
    if (std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; })) {
      throw ValueError("For all_to_all_with_output_shape, output_shape_list[" + std::to_string(i) +
                       "] " + shape_to_string(shape) + " has a negative dimension");
    }
    send[i] = static_cast<size_t>(input_tensor_list[i].numel());
    recv[i] = static_cast<size_t>(shape_numel(shape));
    total_recv += static_cast<int64_t>(recv[i]);
  }
  ListInput in(input_tensor_list);
  std::vector<Tensor> outputs;
  const Tensor out = new_split_outputs(in.shared(), output_shape_list, total_recv, dtype, outputs);
  WorkPtr w =
      launch(*g, in.any(), in.backend_input(), in.tensors_with(out), counts, out, !async_op);
  if (!async_op) {
    w->wait();
    return {outputs, CommHandle()};
  }
  return {outputs, CommHandle(w)};
}

std::pair<Tensor, CommHandle> all_to_all_single_with_output_shape(
    const Shape& output_shape, const Tensor& tensor, const std::vector<int64_t>& output_split_sizes,
    const std::vector<int64_t>& input_split_sizes, std::string_view group, bool async_op) {
  auto g = detail::lookup_for_op(group, "all_to_all_single_with_output_shape");
  if (tensor.dim() == 0) {
    throw ValueError(
        "For all_to_all_single_with_output_shape, the input must have at least one dimension");
  }
  if (output_shape.empty()) {
    throw ValueError(
        "For all_to_all_single_with_output_shape, output_shape must have at least one dimension");
  }
  // Sizes of what is sent come from the input tensor itself (not from output_shape).
  CallCounts counts(static_cast<size_t>(g->size()));
  split_counts(input_split_sizes, tensor.size(0), row_size(tensor.shape()), *g, "input",
               counts.send());
  split_counts(output_split_sizes, output_shape[0], row_size(output_shape), *g, "output",
               counts.recv());
  std::optional<Tensor> in_copy;
  const Tensor& in = detail::contiguous_ref(tensor, in_copy);
  Tensor out = new_all_to_all_output(in, output_shape);
  WorkPtr w = launch(*g, in, counts, out, !async_op);
  return detail::finish(std::move(out), w, async_op);
}

CommHandle all_to_all_v_c(Tensor& output, const Tensor& input,
                          const std::vector<int64_t>& send_count_matrix, std::string_view group,
                          bool async_op) {
  auto g = detail::lookup_for_op(group, "all_to_all_v_c");
  const size_t n = static_cast<size_t>(g->size());
  if (send_count_matrix.size() != n * n) {
    throw TypeError("For all_to_all_v_c, send_count_matrix must be square matrix, but got " +
                    std::to_string(send_count_matrix.size()) + ".");
  }
  for (int64_t v : send_count_matrix) {
    if (v < 0)
      throw ValueError("all_to_all_v_c: send_count_matrix has a negative count " +
                       std::to_string(v));
  }
  const int64_t in_row = row_size(input.shape()), out_row = row_size(output.shape());
  if (in_row != out_row) {
    throw ValueError(
        "For all_to_all_v_c, the input and output dimensions except 0 must be of equal size, but "
        "got " +
        std::to_string(in_row) + " and " + std::to_string(out_row) + ".");
  }
  if (input.dtype() != output.dtype()) {
    throw ValueError("all_to_all_v_c: input dtype " + std::string(dtype_name(input.dtype())) +
                     " differs from output dtype " + std::string(dtype_name(output.dtype())));
  }
  if (!output.is_contiguous()) {
    throw ValueError("all_to_all_v_c writes into output, which must be contiguous");
  }
  const size_t me = static_cast<size_t>(g->rank());
  CallCounts counts(n);
  std::span<size_t> send = counts.send(), recv = counts.recv();
  int64_t rows_out = 0, rows_in = 0;
  for (size_t j = 0; j < n; ++j) {
    send[j] = static_cast<size_t>(send_count_matrix[me * n + j] * in_row);
    recv[j] = static_cast<size_t>(send_count_matrix[j * n + me] * out_row);
    rows_in += send_count_matrix[me * n + j];
    rows_out += send_count_matrix[j * n + me];
  }
  const int64_t have_in = input.dim() == 0 ? 1 : input.size(0);
  const int64_t have_out = output.dim() == 0 ? 1 : output.size(0);
  if (rows_in > have_in || rows_out > have_out) {
    throw ValueError("all_to_all_v_c: rank " + std::to_string(me) + " sends " +
                     std::to_string(rows_in) + " rows (input has " + std::to_string(have_in) +
                     ") and receives " + std::to_string(rows_out) + " rows (output has " +
                     std::to_string(have_out) + ")");
  }
  std::optional<Tensor> in_copy;
  const Tensor& in = detail::contiguous_ref(input, in_copy);
  WorkPtr w = launch(*g, in, counts, output, !async_op);
  if (!async_op) {
    w->wait();
    return CommHandle();
  }
  return CommHandle(w);
}

}  // namespace collie
