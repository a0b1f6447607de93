// Tensor::to_string: numpy's str() output. Every expected string below is what
// numpy 1.24 prints for the same array.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "collie/tensor.h"

namespace collie {
namespace {

std::string str(const Tensor& t) { return t.to_string(); }

TEST(TensorPrint, AllReduceExampleOutput) {
  EXPECT_EQ(str(Tensor::full({2, 8}, 2)),
            "[[2. 2. 2. 2. 2. 2. 2. 2.]\n"
            " [2. 2. 2. 2. 2. 2. 2. 2.]]");
}

TEST(TensorPrint, FloatColumnsAlign) {
  EXPECT_EQ(str(Tensor::from_vector<float>({0, 1, 10, 11}, {2, 2})), "[[ 0.  1.]\n [10. 11.]]");
  EXPECT_EQ(str(Tensor::ones({2, 2})), "[[1. 1.]\n [1. 1.]]");
  EXPECT_EQ(str(Tensor::from_vector<double>({1, 2.5})), "[1.  2.5]");
  EXPECT_EQ(str(Tensor::from_vector<float>({0.1f, 0.2f, 0.3f})), "[0.1 0.2 0.3]");
  EXPECT_EQ(str(Tensor::from_vector<double>({-0.0, 1.5})), "[-0.   1.5]");
}

TEST(TensorPrint, AtMostEightFractionalDigits) {
  EXPECT_EQ(str(Tensor::from_vector<double>({1.0 / 3})), "[0.33333333]");
  EXPECT_EQ(str(Tensor::from_vector<double>({1234.56789012345})), "[1234.56789012]");
}

TEST(TensorPrint, ScientificWhenMagnitudesSpreadWide) {
  EXPECT_EQ(str(Tensor::from_vector<double>({1e-5, 1})), "[1.e-05 1.e+00]");
  EXPECT_EQ(str(Tensor::from_vector<double>({1e8, 1})), "[1.e+08 1.e+00]");
  EXPECT_EQ(str(Tensor::arange(1200, DType::Float64).reshape({2, 600})),
            "[[0.000e+00 1.000e+00 2.000e+00 ... 5.970e+02 5.980e+02 5.990e+02]\n"
            " [6.000e+02 6.010e+02 6.020e+02 ... 1.197e+03 1.198e+03 1.199e+03]]");
}

TEST(TensorPrint, NonFiniteValues) {
  EXPECT_EQ(str(Tensor::from_vector<double>({NAN, 1, -INFINITY})), "[ nan   1. -inf]");
  EXPECT_EQ(str(Tensor::from_vector<double>({NAN, INFINITY})), "[nan inf]");
}

TEST(TensorPrint, Float16UsesItsOwnShortestDigits) {
  // 65504 has the shortest float16 digits 655e2: arrays still print the integer
  // exactly, scalars print the short form.
  EXPECT_EQ(str(Tensor::from_vector<double>({65504}).to(DType::Float16)), "[65504.]");
  EXPECT_EQ(str(Tensor::scalar(65504, DType::Float16)), "65500.0");
  EXPECT_EQ(str(Tensor::from_vector<double>({0.1, -2}).to(DType::Float16)), "[ 0.1 -2. ]");
  EXPECT_EQ(str(Tensor::scalar(3.14159265, DType::BFloat16)), "3.14");
  // 2^-6: the correctly rounded 4 digits (1.562e-2, a tie) fall outside the
  // narrower rounding interval below a power of two; numpy prints 1.563e-2.
  EXPECT_EQ(str(Tensor::scalar(0.015625, DType::Float16)), "0.01563");
}

TEST(TensorPrint, Integers) {
  EXPECT_EQ(str(Tensor::arange(3, DType::Int32)), "[0 1 2]");
  EXPECT_EQ(str(Tensor::from_vector<int16_t>({-1, 10, 100, -1000}, {2, 2})),
            "[[   -1    10]\n [  100 -1000]]");
  EXPECT_EQ(str(Tensor::from_vector<uint8_t>({255, 0})), "[255   0]");
  EXPECT_EQ(str(Tensor::from_vector<int64_t>({std::numeric_limits<int64_t>::min()})),
            "[-9223372036854775808]");
}

TEST(TensorPrint, Bools) {
  EXPECT_EQ(str(Tensor::from_vector<bool>({true, false})), "[ True False]");
  EXPECT_EQ(str(Tensor::scalar(1, DType::Bool)), "True");
}

TEST(TensorPrint, ZeroDimPrintsTheScalar) {
  EXPECT_EQ(str(Tensor::scalar(2.5)), "2.5");
  EXPECT_EQ(str(Tensor::scalar(1)), "1.0");
  EXPECT_EQ(str(Tensor::scalar(1e16, DType::Float64)), "1e+16");
  EXPECT_EQ(str(Tensor::scalar(1e-5)), "1e-05");
  EXPECT_EQ(str(Tensor::scalar(-0.0, DType::Float64)), "-0.0");
  EXPECT_EQ(str(Tensor::scalar(NAN)), "nan");
  EXPECT_EQ(str(Tensor::scalar(-INFINITY)), "-inf");
  EXPECT_EQ(str(Tensor::scalar(123456.79)), "123456.79");
  EXPECT_EQ(str(Tensor::scalar(-7, DType::Int8)), "-7");
}

TEST(TensorPrint, EmptyPrintsBrackets) {
  EXPECT_EQ(str(Tensor()), "[]");
  EXPECT_EQ(str(Tensor::zeros({2, 0}, DType::Int64)), "[]");
}

TEST(TensorPrint, LongRowsWrapAt75Characters) {
  EXPECT_EQ(str(Tensor::arange(30, DType::Int64)),
            "[ 0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 19 20 21 22 23\n"
            " 24 25 26 27 28 29]");
}

TEST(TensorPrint, SummarisesAbove1000Elements) {
  EXPECT_EQ(str(Tensor::arange(2000, DType::Int32)), "[   0    1    2 ... 1997 1998 1999]");
  EXPECT_EQ(str(Tensor::arange(1000, DType::Int32)).find("..."), std::string::npos);
}

TEST(TensorPrint, HigherDimsSeparateBlocksWithBlankLines) {
  EXPECT_EQ(str(Tensor::arange(24).reshape({2, 3, 4})),
            "[[[ 0.  1.  2.  3.]\n"
            "  [ 4.  5.  6.  7.]\n"
            "  [ 8.  9. 10. 11.]]\n"
            "\n"
            " [[12. 13. 14. 15.]\n"
            "  [16. 17. 18. 19.]\n"
            "  [20. 21. 22. 23.]]]");
}

TEST(TensorPrint, FollowsStridesAndOffset) {
  const Tensor t = Tensor::arange(6).reshape({2, 3});
  EXPECT_EQ(str(t.transpose(0, 1)), "[[0. 3.]\n [1. 4.]\n [2. 5.]]");
  EXPECT_EQ(str(t.slice(1, 2)), "[[3. 4. 5.]]");
}

TEST(TensorPrint, StreamOperatorMatchesToString) {
  std::ostringstream os;
  os << Tensor::arange(3, DType::Int8);
  EXPECT_EQ(os.str(), "[0 1 2]");
}

}  // namespace
}  // namespace collie
