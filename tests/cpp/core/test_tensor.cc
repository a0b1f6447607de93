// Tensor: factories, views and strides, conversions, element access, comparison.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "collie/errors.h"
#include "collie/tensor.h"

namespace collie {
namespace {

const std::vector<DType> kAllDTypes = {
    DType::Bool,  DType::Int8,    DType::UInt8,    DType::Int16,   DType::Int32,
    DType::Int64, DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};

std::string dtype_param_name(const ::testing::TestParamInfo<DType>& info) {
  return std::string(dtype_name(info.param));
}

// Runs `fn` and returns the message of the `E` it throws (fails if it throws nothing).
template <typename E, typename Fn>
std::string message_of(Fn fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

// A [rows, cols] float32 tensor holding 0, 1, 2, ... in row-major order.
Tensor iota(int64_t rows, int64_t cols) {
  return Tensor::arange(rows * cols, DType::Float32).reshape({rows, cols});
}

// ---- factories ----

TEST(TensorFactory, DefaultIsEmptyFloat32OfShape0) {
  const Tensor t;
  EXPECT_EQ(t.dtype(), DType::Float32);
  EXPECT_EQ(t.shape(), Shape{0});
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.nbytes(), 0u);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_NE(t.data_ptr(), nullptr);
}

TEST(TensorFactory, EmptyIsZeroFilledContiguousAndAligned) {
  for (int64_t n : {0, 1, 3, 17, 1000}) {
    const Tensor t = Tensor::empty({n, 3}, DType::Int16);
    EXPECT_EQ(t.shape(), (Shape{n, 3}));
    EXPECT_EQ(t.strides(), (Shape{3, 1}));
    EXPECT_EQ(t.numel(), n * 3);
    EXPECT_EQ(t.nbytes(), static_cast<size_t>(n * 3 * 2));
    EXPECT_EQ(t.storage_offset(), 0);
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_TRUE(t.storage()->owned());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u) << n;
    const auto* bytes = static_cast<const uint8_t*>(t.data_ptr());
    for (size_t i = 0; i < t.nbytes(); ++i) ASSERT_EQ(bytes[i], 0) << i;
  }
}

TEST(TensorFactory, ReusedMemoryIsZeroedToo) {
  // Freed memory of the same size usually comes straight back from the allocator.
  for (int round = 0; round < 8; ++round) {
    Tensor::full({1000}, -1, DType::Int32);  // fills, then frees, 4000 bytes of 0xff
    const Tensor t = Tensor::empty({1000}, DType::Int32);
    EXPECT_EQ(t.to_double_vector(), std::vector<double>(1000, 0.0));
  }
}

// Up to Storage::kInlineBytes the data lives inside the Storage (no second
// allocation); on both sides of that edge it is 64-byte aligned, zeroed, and
// each storage's own, also when the memory is reused.
TEST(Storage, SmallDataInlineAlignedZeroedAndPrivate) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{4096}}) {
    for (int round = 0; round < 3; ++round) {
      Storage a(n), b(n);
      const auto* inside_begin = reinterpret_cast<const uint8_t*>(&a);
      const auto* data = static_cast<const uint8_t*>(a.data());
      const bool inline_data = data >= inside_begin && data < inside_begin + sizeof(Storage);
      EXPECT_EQ(inline_data, n <= Storage::kInlineBytes) << n;
      ASSERT_NE(a.data(), nullptr) << n;
      EXPECT_NE(a.data(), b.data()) << n;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 64, 0u) << n;
      EXPECT_EQ(a.nbytes(), n);
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(data[i], 0) << n << " byte " << i;
      std::memset(a.data(), 0xff, n);  // the next round's storages must be zeroed again
      const auto* other = static_cast<const uint8_t*>(b.data());
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(other[i], 0) << n << " byte " << i;
    }
  }
  // The same through the factories, whose Storage comes from the per-thread pool
  // (allocate_shared): inline data keeps its alignment there too.
  for (int64_t n : {int64_t{1}, int64_t{16}, int64_t{17}, int64_t{1000}}) {
    const Tensor t = Tensor::uninitialized({n});
    const Tensor like = Tensor::uninitialized_like(t);
    const Tensor z = Tensor::zeros({n}, DType::Int8);
    for (const Tensor* x : {&t, &like, &z}) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(x->data_ptr()) % 64, 0u) << n;
    }
  }
  EXPECT_EQ(reinterpret_cast<uintptr_t>(Tensor::scalar(3).data_ptr()) % 64, 0u);
  // Uninitialised storage is not zeroed, but equally usable to its last byte.
  Storage raw(Storage::kInlineBytes, /*zero=*/false);
  std::memset(raw.data(), 7, raw.nbytes());
  EXPECT_EQ(static_cast<const uint8_t*>(raw.data())[Storage::kInlineBytes - 1], 7);
}

TEST(TensorFactory, RejectsNegativeSizes) {
  const std::string message = message_of<ValueError>([] { Tensor::zeros({2, -1}); });
  expect_contains(message, "[2, -1]");
}

// An element count past int64 is a ValueError naming the shape (checked by
// overflow, not by dividing); a zero extent anywhere makes any shape empty.
TEST(TensorFactory, RejectsShapesWithTooManyElements) {
  constexpr int64_t big = int64_t{1} << 32;
  const std::string message = message_of<ValueError>([] { Tensor::zeros({big, big}); });
  expect_contains(message, "too many elements");
  expect_contains(message, "[4294967296, 4294967296]");
  EXPECT_THROW(Tensor::uninitialized({3, INT64_MAX}), ValueError);
  // A count that fits int64 but whose bytes do not (2^65 bytes of float64
  // wrapped to an empty storage under 2^62 elements).
  const std::string bytes_message =
      message_of<ValueError>([] { Tensor::zeros({int64_t{1} << 62}, DType::Float64); });
  expect_contains(bytes_message, "too many elements");
  EXPECT_THROW(Tensor::uninitialized({int64_t{1} << 61, 4}, DType::Int8), ValueError);
  EXPECT_EQ(Tensor::zeros({0, INT64_MAX}).numel(), 0);
  EXPECT_EQ(Tensor::zeros({INT64_MAX, 0}).numel(), 0);
  EXPECT_EQ(Tensor::zeros({big / 2, 2, 0}).numel(), 0);
}

class TensorDTypeTest : public ::testing::TestWithParam<DType> {};

TEST_P(TensorDTypeTest, OnesHoldsOne) {
  const Tensor t = Tensor::ones({2, 3}, GetParam());
  EXPECT_EQ(t.dtype(), GetParam());
  EXPECT_EQ(t.element_size(), element_size(GetParam()));
  EXPECT_EQ(t.to_double_vector(), std::vector<double>(6, 1.0));
}

TEST_P(TensorDTypeTest, ZerosHoldsZero) {
  EXPECT_EQ(Tensor::zeros({4}, GetParam()).to_double_vector(), std::vector<double>(4, 0.0));
}

TEST_P(TensorDTypeTest, FullAndScalar) {
  EXPECT_EQ(Tensor::full({3}, 1, GetParam()).to_double_vector(), std::vector<double>(3, 1.0));
  const Tensor s = Tensor::scalar(1, GetParam());
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.item(), 1.0);
}

TEST_P(TensorDTypeTest, ArangeCountsUp) {
  const Tensor t = Tensor::arange(5, GetParam());
  EXPECT_EQ(t.dtype(), GetParam());
  const std::vector<double> expected = GetParam() == DType::Bool
                                           ? std::vector<double>{0, 1, 1, 1, 1}
                                           : std::vector<double>{0, 1, 2, 3, 4};
  EXPECT_EQ(t.to_double_vector(), expected);
}

// Every conversion of small non-negative integers is exact; bool maps nonzero to 1.
TEST_P(TensorDTypeTest, ConvertsToEveryDType) {
  const Tensor src = Tensor::from_vector<double>({0, 1, 2, 5}).to(GetParam());
  const bool src_bool = GetParam() == DType::Bool;
  for (DType to : kAllDTypes) {
    const Tensor out = src.to(to);
    EXPECT_EQ(out.dtype(), to);
    EXPECT_EQ(out.shape(), Shape{4});
    const std::vector<double> expected = src_bool || to == DType::Bool
                                             ? std::vector<double>{0, 1, 1, 1}
                                             : std::vector<double>{0, 1, 2, 5};
    EXPECT_EQ(out.to_double_vector(), expected) << dtype_name(to);
  }
}

TEST_P(TensorDTypeTest, EqualsItsCloneAndNotAChangedCopy) {
  const Tensor a = Tensor::arange(6, GetParam()).reshape({2, 3});
  Tensor b = a.clone();
  EXPECT_TRUE(a.equal(b));
  b.copy_from(Tensor::zeros({2, 3}));
  EXPECT_FALSE(a.equal(b));
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, TensorDTypeTest, ::testing::ValuesIn(kAllDTypes),
                         dtype_param_name);

TEST(TensorFactory, ArangeWithStep) {
  EXPECT_EQ(Tensor::arange(0, 1, 0.25).to_double_vector(), (std::vector<double>{0, .25, .5, .75}));
  EXPECT_EQ(Tensor::arange(3, 0, -1, DType::Int32).to_double_vector(),
            (std::vector<double>{3, 2, 1}));
  EXPECT_EQ(Tensor::arange(5, 2).numel(), 0);
  EXPECT_EQ(Tensor::arange(0, 1, 0.3).numel(), 4);  // 0, .3, .6, .9
  EXPECT_THROW(Tensor::arange(0, 1, 0), ValueError);
}

TEST(TensorFactory, FromVectorCopiesValues) {
  std::vector<int32_t> values{1, 2, 3, 4, 5, 6};
  const Tensor t = Tensor::from_vector(values, {2, 3});
  values[0] = 100;  // the tensor owns a copy
  EXPECT_EQ(t.dtype(), DType::Int32);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.at<int32_t>({0, 0}), 1);
  EXPECT_EQ(t.at<int32_t>({1, 2}), 6);
  EXPECT_EQ(Tensor::from_vector(std::vector<double>{1.5}).shape(), Shape{1});
}

TEST(TensorFactory, FromVectorRejectsWrongCount) {
  const std::string message = message_of<ValueError>([] {
    Tensor::from_vector(std::vector<float>(5), {2, 3});
  });
  expect_contains(message, "5");
  expect_contains(message, "[2, 3]");
  expect_contains(message, "6");
}

TEST(TensorFactory, FromBlobIsAViewOnCallerMemory) {
  std::vector<float> buf{0, 1, 2, 3, 4, 5};
  const Tensor t = Tensor::from_blob(buf.data(), {2, 3}, DType::Float32);
  EXPECT_FALSE(t.storage()->owned());
  EXPECT_EQ(t.data_ptr(), buf.data());
  EXPECT_EQ(t.strides(), (Shape{3, 1}));
  buf[4] = 40;
  EXPECT_EQ(t.at<float>({1, 1}), 40.f);
  t.at<float>({0, 2}) = 20;
  EXPECT_EQ(buf[2], 20.f);
}

TEST(TensorFactory, FromBlobWithStrides) {
  std::vector<int64_t> buf{0, 1, 2, 3, 4, 5, 6, 7};
  // Every other element of each row: [[0, 2], [4, 6]].
  const Tensor t = Tensor::from_blob(buf.data(), {2, 2}, DType::Int64, {4, 2});
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.to_double_vector(), (std::vector<double>{0, 2, 4, 6}));
  EXPECT_THROW(Tensor::from_blob(buf.data(), {2, 2}, DType::Int64, {1}), ValueError);
  EXPECT_THROW(Tensor::from_blob(buf.data(), {2, 2}, DType::Int64, {-4, 1}), ValueError);
  EXPECT_THROW(Tensor::from_blob(nullptr, {2}, DType::Int64), ValueError);
}

TEST(TensorFactory, FromBlobRunsDeleterWhenLastViewDies) {
  int calls = 0;
  float value = 3;
  void* seen = nullptr;
  {
    Tensor t = Tensor::from_blob(&value, {1}, DType::Float32, {}, [&](void* p) {
      ++calls;
      seen = p;
    });
    const Tensor view = t.reshape({1, 1});
    t = Tensor();
    EXPECT_EQ(calls, 0);  // `view` still uses the memory
  }
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, &value);
}

// ---- metadata and element access ----

TEST(TensorMeta, SizeCountsNegativeDimsFromTheEnd) {
  const Tensor t = Tensor::zeros({2, 3, 4});
  EXPECT_EQ(t.dim(), 3);
  EXPECT_EQ(t.size(0), 2);
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.size(-3), 2);
  EXPECT_THROW(t.size(3), ValueError);
  EXPECT_THROW(t.size(-4), ValueError);
}

TEST(TensorAccess, DataRejectsTheWrongType) {
  const Tensor t = Tensor::zeros({2}, DType::Int32);
  EXPECT_NE(t.data<int32_t>(), nullptr);
  const std::string message = message_of<TypeError>([&] { t.data<float>(); });
  expect_contains(message, "int32");
  expect_contains(message, "float32");
  EXPECT_THROW(t.at<int64_t>({0}), TypeError);
}

TEST(TensorAccess, AtIsBoundsChecked) {
  const Tensor t = iota(2, 4);
  EXPECT_EQ(t.at<float>({1, 3}), 7.f);
  const std::string message = message_of<ValueError>([&] { t.at<float>({2, 0}); });
  expect_contains(message, "[2, 0]");
  expect_contains(message, "[2, 4]");
  EXPECT_THROW(t.at<float>({0, 4}), ValueError);
  EXPECT_THROW(t.at<float>({-1, 0}), ValueError);
  EXPECT_THROW(t.at<float>({1}), ValueError);        // too few indices
  EXPECT_THROW(t.at<float>({1, 1, 0}), ValueError);  // too many
}

TEST(TensorAccess, AtFollowsStridesAndOffset) {
  const Tensor t = iota(3, 4).slice(1, 3).transpose(0, 1);  // [[4, 8], [5, 9], [6, 10], [7, 11]]
  EXPECT_EQ(t.at<float>({0, 1}), 8.f);
  EXPECT_EQ(t.at<float>({3, 0}), 7.f);
}

TEST(TensorAccess, ItemReadsRowMajorAcrossStrides) {
  const Tensor t = iota(2, 3).transpose(0, 1);  // [[0, 3], [1, 4], [2, 5]]
  EXPECT_EQ(t.item(0), 0);
  EXPECT_EQ(t.item(1), 3);
  EXPECT_EQ(t.item(4), 2);
  EXPECT_EQ(Tensor::scalar(2.5).item(), 2.5);
  EXPECT_EQ(Tensor::scalar(-7, DType::Int8).item(), -7);
  const std::string message = message_of<ValueError>([&] { t.item(6); });
  expect_contains(message, "6");
  expect_contains(message, "[3, 2]");
  EXPECT_THROW(t.item(-1), ValueError);
}

// ---- views ----

TEST(TensorView, ReshapeOfContiguousSharesStorage) {
  const Tensor t = iota(2, 6);
  const Tensor r = t.reshape({3, -1});
  EXPECT_EQ(r.shape(), (Shape{3, 4}));
  EXPECT_EQ(r.strides(), (Shape{4, 1}));
  EXPECT_EQ(r.storage(), t.storage());
  EXPECT_EQ(r.at<float>({2, 1}), 9.f);
  EXPECT_EQ(t.reshape({-1}).shape(), Shape{12});
  EXPECT_EQ(t.reshape({12, 1, -1}).shape(), (Shape{12, 1, 1}));
  EXPECT_EQ(Tensor::scalar(1).reshape({1, 1}).shape(), (Shape{1, 1}));
  EXPECT_EQ(Tensor::zeros({1}).reshape({}).dim(), 0);
}

TEST(TensorView, ReshapeOfNonContiguousCopies) {
  const Tensor t = iota(2, 3).transpose(0, 1);
  const Tensor r = t.reshape({6});
  EXPECT_NE(r.storage(), t.storage());
  EXPECT_EQ(r.to_double_vector(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
}

TEST(TensorView, ReshapeRejectsBadShapes) {
  const Tensor t = iota(4, 4);
  const std::string message = message_of<ValueError>([&] { t.reshape({3, 5}); });
  expect_contains(message, "[4, 4]");
  expect_contains(message, "16 elements");
  expect_contains(message, "[3, 5]");
  EXPECT_THROW(t.reshape({-1, -1}), ValueError);
  EXPECT_THROW(t.reshape({3, -1}), ValueError);
  EXPECT_THROW(t.reshape({-2, -8}), ValueError);
  EXPECT_THROW(Tensor::zeros({0}).reshape({0, -1}), ValueError);  // ambiguous
}

TEST(TensorView, SliceIsAViewOnRows) {
  const Tensor t = iota(4, 2);
  const Tensor s = t.slice(1, 3);
  EXPECT_EQ(s.shape(), (Shape{2, 2}));
  EXPECT_EQ(s.storage(), t.storage());
  EXPECT_EQ(s.storage_offset(), 2);
  EXPECT_TRUE(s.is_contiguous());
  EXPECT_EQ(s.to_double_vector(), (std::vector<double>{2, 3, 4, 5}));
  EXPECT_EQ(t.slice(2, 2).numel(), 0);
  s.at<float>({0, 0}) = -1;
  EXPECT_EQ(t.at<float>({1, 0}), -1.f);
}

TEST(TensorView, SliceRejectsBadRanges) {
  const Tensor t = iota(4, 2);
  const std::string message = message_of<ValueError>([&] { t.slice(1, 5); });
  expect_contains(message, "[1, 5)");
  expect_contains(message, "[4, 2]");
  EXPECT_THROW(t.slice(-1, 2), ValueError);
  EXPECT_THROW(t.slice(3, 2), ValueError);
  EXPECT_THROW(Tensor::scalar(1).slice(0, 1), ValueError);
}

TEST(TensorView, TransposeSwapsShapeAndStrides) {
  const Tensor t = iota(2, 3);
  const Tensor tt = t.transpose(0, 1);
  EXPECT_EQ(tt.shape(), (Shape{3, 2}));
  EXPECT_EQ(tt.strides(), (Shape{1, 3}));
  EXPECT_EQ(tt.storage(), t.storage());
  EXPECT_FALSE(tt.is_contiguous());
  EXPECT_EQ(tt.to_double_vector(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(t.transpose(-1, -2).shape(), (Shape{3, 2}));
  EXPECT_TRUE(t.transpose(1, 1).is_contiguous());
  EXPECT_THROW(t.transpose(0, 2), ValueError);
}

// Tensors of one shape share their (immutable) layout: views of one must leave
// the others, and the tensor they were taken from, as they were.
TEST(TensorView, ViewsLeaveOtherTensorsOfTheSameShapeAlone) {
  const Tensor a = Tensor::zeros({4, 3});
  const Tensor b = Tensor::ones({4, 3}, DType::Int64);
  const Tensor c = a;
  for (int round = 0; round < 10; ++round) {  // more shapes than the layout cache holds
    const Tensor t = a.transpose(0, 1);
    const Tensor s = b.slice(1, 3);
    const Tensor r = a.reshape({2, -1});
    const Tensor other = Tensor::empty({round + 1, 5});
    EXPECT_EQ(t.shape(), (Shape{3, 4}));
    EXPECT_EQ(s.shape(), (Shape{2, 3}));
    EXPECT_EQ(s.strides(), (Shape{3, 1}));
    EXPECT_EQ(r.shape(), (Shape{2, 6}));
    EXPECT_EQ(other.strides(), (Shape{5, 1}));
    EXPECT_EQ(other.numel(), (round + 1) * 5);
  }
  for (const Tensor* x : {&a, &b, &c}) {
    EXPECT_EQ(x->shape(), (Shape{4, 3}));
    EXPECT_EQ(x->strides(), (Shape{3, 1}));
    EXPECT_EQ(x->numel(), 12);
    EXPECT_TRUE(x->is_contiguous());
  }
  EXPECT_EQ(Tensor::uninitialized({4, 3}).strides(), (Shape{3, 1}));
  EXPECT_EQ(Tensor().shape(), (Shape{0}));
  EXPECT_EQ(Tensor::scalar(2).numel(), 1);
}

TEST(TensorFactory, UninitializedLikeTakesShapeAndDtypeAndOwnsNewMemory) {
  const Tensor like = Tensor::full({2, 3}, 7.0, DType::Int32);
  Tensor t = Tensor::uninitialized_like(like);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.strides(), (Shape{3, 1}));
  EXPECT_EQ(t.dtype(), DType::Int32);
  EXPECT_EQ(t.storage_offset(), 0);
  EXPECT_NE(t.storage(), like.storage());
  t.data<int32_t>()[5] = 1;  // its own memory: `like` keeps its values
  EXPECT_EQ(like.item(5), 7.0);
  // A view at an offset: the new tensor starts at its own storage's beginning.
  const Tensor rows = Tensor::zeros({4, 3}).slice(1, 3);
  EXPECT_EQ(Tensor::uninitialized_like(rows).storage_offset(), 0);
  EXPECT_EQ(Tensor::uninitialized_like(rows).storage()->nbytes(), 6 * sizeof(float));
  // Not contiguous: a contiguous tensor of the same shape.
  const Tensor tt = Tensor::zeros({2, 3}).transpose(0, 1);
  const Tensor c = Tensor::uninitialized_like(tt);
  EXPECT_EQ(c.shape(), (Shape{3, 2}));
  EXPECT_EQ(c.strides(), (Shape{2, 1}));
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(Tensor::uninitialized_like(Tensor::scalar(1.0, DType::Float64)).shape(), Shape{});
}

TEST(TensorFactory, UninitializedRowsLikeReplacesDimZero) {
  const Tensor like = Tensor::full({2, 3}, 7.0, DType::Int32);
  Tensor t = Tensor::uninitialized_rows_like(like, 5);
  EXPECT_EQ(t.shape(), (Shape{5, 3}));
  EXPECT_EQ(t.strides(), (Shape{3, 1}));
  EXPECT_EQ(t.dtype(), DType::Int32);
  EXPECT_EQ(t.storage()->nbytes(), 15 * sizeof(int32_t));
  EXPECT_NE(t.storage(), like.storage());
  t.data<int32_t>()[5] = 1;  // its own memory: `like` keeps its values
  EXPECT_EQ(like.item(5), 7.0);
  EXPECT_EQ(like.shape(), (Shape{2, 3}));  // the shape it was made from is unchanged
  // A 0-d tensor gives a 1-d one; a strided one a contiguous one of its shape.
  EXPECT_EQ(Tensor::uninitialized_rows_like(Tensor::scalar(1.0, DType::Float64), 4).shape(),
            Shape{4});
  const Tensor c = Tensor::uninitialized_rows_like(Tensor::zeros({2, 3}).transpose(0, 1), 1);
  EXPECT_EQ(c.shape(), (Shape{1, 2}));
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(Tensor::uninitialized_rows_like(like, 0).numel(), 0);
  expect_contains(message_of<ValueError>([&] { Tensor::uninitialized_rows_like(like, -1); }),
                  "[-1, 3]");
}

// The layout is reused per (like's layout, rows), and only for that pair: more
// pairs than the thread keeps still each get their own shape.
TEST(TensorFactory, UninitializedRowsLikeReusesLayoutsOnlyForTheSamePair) {
  const Tensor a = Tensor::zeros({2, 3});
  const Tensor b = Tensor::zeros({2, 4});
  EXPECT_EQ(&Tensor::uninitialized_rows_like(a, 6).shape(),
            &Tensor::uninitialized_rows_like(Tensor(a), 6).shape())
      << "the same layout and rows: one shape, looked up once";
  for (int round = 0; round < 3; ++round) {
    for (int64_t rows = 0; rows < 6; ++rows) {
      EXPECT_EQ(Tensor::uninitialized_rows_like(a, rows).shape(), (Shape{rows, 3}));
      EXPECT_EQ(Tensor::uninitialized_rows_like(b, rows).shape(), (Shape{rows, 4}));
    }
  }
}

TEST(TensorView, SizeOneDimsDoNotBreakContiguity) {
  const Tensor t = Tensor::zeros({3, 1}).transpose(0, 1);  // shape [1, 3], strides [1, 1]
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_FALSE(Tensor::zeros({3, 2}).transpose(0, 1).is_contiguous());
}

TEST(TensorView, ContiguousReturnsItselfOnlyWhenContiguousAtOffsetZero) {
  const Tensor t = iota(4, 3);
  EXPECT_EQ(t.contiguous().storage(), t.storage());

  const Tensor sliced = t.slice(1, 3);  // contiguous but at offset 3
  const Tensor c = sliced.contiguous();
  EXPECT_NE(c.storage(), t.storage());
  EXPECT_EQ(c.storage_offset(), 0);
  EXPECT_TRUE(c.equal(sliced));

  const Tensor tt = t.transpose(0, 1);
  const Tensor ct = tt.contiguous();
  EXPECT_TRUE(ct.is_contiguous());
  EXPECT_EQ(ct.strides(), (Shape{4, 1}));
  EXPECT_EQ(ct.to_double_vector(), tt.to_double_vector());
}

TEST(TensorView, CloneIsIndependent) {
  const Tensor t = iota(2, 2);
  const Tensor c = t.clone();
  EXPECT_NE(c.storage(), t.storage());
  c.at<float>({0, 0}) = 9;
  EXPECT_EQ(t.at<float>({0, 0}), 0.f);
}

TEST(TensorView, SplitIntoEqualParts) {
  const Tensor t = iota(6, 2);
  const std::vector<Tensor> parts = t.split(3);
  ASSERT_EQ(parts.size(), 3u);
  for (size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ(parts[i].shape(), (Shape{2, 2}));
    EXPECT_EQ(parts[i].storage(), t.storage());
    EXPECT_EQ(parts[i].item(0), 4.0 * static_cast<double>(i));
  }
  const std::string message = message_of<ValueError>([&] { t.split(4); });
  expect_contains(message, "[6, 2]");
  expect_contains(message, "4");
  EXPECT_THROW(t.split(0), ValueError);
  EXPECT_THROW(Tensor::scalar(1).split(1), ValueError);
}

TEST(TensorView, SplitBySizes) {
  const Tensor t = Tensor::arange(5, DType::Int32);
  const std::vector<Tensor> parts = t.split(std::vector<int64_t>{2, 0, 3});
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].to_double_vector(), (std::vector<double>{0, 1}));
  EXPECT_EQ(parts[1].numel(), 0);
  EXPECT_EQ(parts[2].to_double_vector(), (std::vector<double>{2, 3, 4}));
  const std::string message = message_of<ValueError>([&] { t.split(std::vector<int64_t>{2, 2}); });
  expect_contains(message, "sum to 4");
  expect_contains(message, "5");
  EXPECT_THROW(t.split(std::vector<int64_t>{6, -1}), ValueError);
}

TEST(TensorView, CatConcatenatesAlongDim0) {
  const Tensor t = iota(4, 2);
  const Tensor joined = Tensor::cat(t.split(2));
  EXPECT_NE(joined.storage(), t.storage());
  EXPECT_TRUE(joined.equal(t));

  const Tensor a = Tensor::from_vector<int16_t>({1, 2}, {1, 2});
  const Tensor b = Tensor::from_vector<int16_t>({3, 4, 5, 6}, {2, 2}).transpose(0, 1);
  const Tensor c = Tensor::cat({a, b});
  EXPECT_EQ(c.shape(), (Shape{3, 2}));
  EXPECT_EQ(c.dtype(), DType::Int16);
  EXPECT_EQ(c.to_double_vector(), (std::vector<double>{1, 2, 3, 5, 4, 6}));
}

TEST(TensorView, CatRejectsMismatches) {
  EXPECT_THROW(Tensor::cat({}), ValueError);
  const std::string shapes = message_of<ValueError>([] {
    Tensor::cat({Tensor::zeros({1, 2}), Tensor::zeros({1, 3})});
  });
  expect_contains(shapes, "[1, 3]");
  expect_contains(shapes, "[1, 2]");
  const std::string dtypes = message_of<ValueError>([] {
    Tensor::cat({Tensor::zeros({1}), Tensor::zeros({1}, DType::Int32)});
  });
  expect_contains(dtypes, "int32");
  EXPECT_THROW(Tensor::cat({Tensor::scalar(1)}), ValueError);
}

// ---- copies and conversions ----

TEST(TensorCopy, CopyFromAcrossStridesAndShapes) {
  const Tensor src = iota(2, 3);
  Tensor dst = Tensor::zeros({3, 2}).transpose(0, 1);  // [2, 3] view, column-major
  dst.copy_from(src);
  EXPECT_TRUE(dst.equal(src));
  EXPECT_EQ(dst.storage()->nbytes(), 24u);

  Tensor flat = Tensor::zeros({6}, DType::Float64);
  flat.copy_from(src.transpose(0, 1));  // same numel, another shape and dtype
  EXPECT_EQ(flat.to_double_vector(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
}

TEST(TensorCopy, CopyFromRejectsAnotherNumel) {
  Tensor dst = Tensor::zeros({2, 2});
  const std::string message = message_of<ValueError>([&] { dst.copy_from(Tensor::zeros({5})); });
  expect_contains(message, "[5]");
  expect_contains(message, "[2, 2]");
}

TEST(TensorCopy, CopyFromOverlappingViewOfTheSameStorage) {
  const Tensor t = Tensor::arange(5, DType::Int32);
  t.slice(1, 5).copy_from(t.slice(0, 4));  // shift right by one, like memmove
  EXPECT_EQ(t.to_double_vector(), (std::vector<double>{0, 0, 1, 2, 3}));
  // The same through strided views, copied element by element.
  const Tensor m = Tensor::arange(10, DType::Int32).reshape({5, 2});
  m.slice(1, 5).transpose(0, 1).copy_from(m.slice(0, 4).transpose(0, 1));
  EXPECT_EQ(m.to_double_vector(), (std::vector<double>{0, 1, 0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(TensorCopy, ConversionsFollowNumpy) {
  const Tensor f = Tensor::from_vector<double>({-2.7, 2.7, -1.0, 300.0, NAN, 0.5, -0.0});
  EXPECT_EQ(f.to(DType::Int32).to_double_vector(), (std::vector<double>{-2, 2, -1, 300, 0, 0, 0}));
  EXPECT_EQ(f.to(DType::UInt8).to_double_vector(), (std::vector<double>{254, 2, 255, 44, 0, 0, 0}));
  EXPECT_EQ(f.to(DType::Int8).to_double_vector(), (std::vector<double>{-2, 2, -1, 44, 0, 0, 0}));
  EXPECT_EQ(f.to(DType::Bool).to_double_vector(), (std::vector<double>{1, 1, 1, 1, 1, 1, 0}));
  EXPECT_EQ(Tensor::from_vector<int32_t>({200, -129, 65535}).to(DType::Int8).to_double_vector(),
            (std::vector<double>{-56, 127, -1}));
  // Half-way between 1 and the next float16: rounds to even.
  EXPECT_EQ(Tensor::scalar(1 + std::ldexp(1.0, -11), DType::Float64).to(DType::Float16).item(),
            1.0);
  EXPECT_EQ(Tensor::scalar(3.14159265).to(DType::BFloat16).item(), 3.140625);
}

TEST(TensorCopy, Int64StaysExact) {
  const int64_t big = (int64_t{1} << 62) + 1;  // not representable as a double
  const Tensor t = Tensor::from_vector<int64_t>({big, -big, 7, 8}, {2, 2});
  Tensor out = Tensor::zeros({2, 2}, DType::Int64).transpose(0, 1);
  out.copy_from(t);
  EXPECT_EQ(out.at<int64_t>({0, 0}), big);
  EXPECT_EQ(out.at<int64_t>({0, 1}), -big);
  EXPECT_EQ(t.to(DType::Int64).at<int64_t>({0, 0}), big);
}

TEST(TensorCopy, BoolBytesOtherThanOneReadAsTrue) {
  uint8_t bytes[3] = {0, 2, 255};
  const Tensor b = Tensor::from_blob(bytes, {3}, DType::Bool);
  EXPECT_EQ(b.to_double_vector(), (std::vector<double>{0, 1, 1}));
  const Tensor c = b.to(DType::Int32);
  EXPECT_EQ(c.to_double_vector(), (std::vector<double>{0, 1, 1}));
  EXPECT_TRUE(b.equal(Tensor::from_vector<bool>({false, true, true})));
}

// ---- comparison ----

TEST(TensorCompare, EqualChecksShapeDtypeAndValues) {
  const Tensor a = iota(2, 2);
  EXPECT_TRUE(a.equal(a.reshape({2, 2})));
  EXPECT_FALSE(a.equal(a.reshape({4})));
  EXPECT_FALSE(a.equal(a.to(DType::Float64)));
  EXPECT_TRUE(a.transpose(0, 1).equal(Tensor::from_vector<float>({0, 2, 1, 3}, {2, 2})));
}

TEST(TensorCompare, EqualTreatsNaNAsEqualAndSignedZerosAsEqual) {
  EXPECT_TRUE(Tensor::from_vector<float>({NAN, 1}).equal(Tensor::from_vector<float>({NAN, 1})));
  EXPECT_FALSE(Tensor::from_vector<float>({NAN}).equal(Tensor::from_vector<float>({1})));
  EXPECT_TRUE(Tensor::from_vector<double>({0.0}).equal(Tensor::from_vector<double>({-0.0})));
  const Tensor h = Tensor::from_vector<double>({NAN}).to(DType::Float16);
  EXPECT_TRUE(h.equal(h.clone()));
}

TEST(TensorCompare, EqualIsExactForInt64) {
  const int64_t big = (int64_t{1} << 60) + 1;
  EXPECT_FALSE(Tensor::from_vector<int64_t>({big}).equal(Tensor::from_vector<int64_t>({big - 1})));
}

TEST(TensorCompare, Allclose) {
  const Tensor a = Tensor::from_vector<double>({1.0, 100.0, INFINITY});
  EXPECT_TRUE(a.allclose(Tensor::from_vector<double>({1.0 + 1e-9, 100.0005, INFINITY})));
  EXPECT_FALSE(a.allclose(Tensor::from_vector<double>({1.0, 100.01, INFINITY})));
  EXPECT_FALSE(a.allclose(Tensor::from_vector<double>({1.0, 100.0, -INFINITY})));
  EXPECT_TRUE(a.allclose(Tensor::from_vector<double>({1.1, 100.0, INFINITY}), 0, 0.2));
  EXPECT_FALSE(Tensor::from_vector<double>({NAN}).allclose(Tensor::from_vector<double>({NAN})));
  EXPECT_FALSE(a.allclose(Tensor::from_vector<double>({1.0, 100.0})));  // shapes differ
  EXPECT_TRUE(Tensor::ones({2}, DType::Int32).allclose(Tensor::ones({2}, DType::Float16)));
}

}  // namespace
}  // namespace collie
