// Element-wise reduction kernels (see reduce_kernels.h).
//
// Work proceeds in blocks of kBlock elements. Full blocks have a compile-time
// trip count and read their sources into a local accumulator the sources cannot
// alias, so the compiler vectorises them even at -O2's cheap cost model, which
// refuses loops that need runtime alias checks or scalar epilogues. Each block
// accumulates srcs[0], srcs[1], ... in order, so the result does not depend on
// the block size or on vectorisation: float addition happens in the same order
// for every element.
#include "core/reduce_kernels.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "collie/errors.h"
#include "core/cpu_id.h"
#include "core/float16.h"
#include "core/reduce_kernels_avx2.h"
#include "core/reduce_kernels_avx512.h"

// Asserts that a loop has no loop-carried dependence. True for the loops that
// write dst: dst may be one of the sources, but then element i is read before it
// is written and never read again.
#if defined(__clang__)
#define COLLIE_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define COLLIE_IVDEP _Pragma("GCC ivdep")
#else
#define COLLIE_IVDEP
#endif

namespace collie::detail {

namespace {

constexpr size_t kBlock = 256;

// A lane says how an element type is loaded for arithmetic (Acc) and stored back.
template <typename T>
struct PlainLane {
  using Elem = T;
  using Acc = T;
  static Acc load(Elem v) { return v; }
  static Elem store(Acc v) { return v; }
};

// float16 and bfloat16 accumulate in float32 and round once, when stored.
struct HalfLane {
  using Elem = Half;
  using Acc = float;
  static Acc load(Elem v) { return half_bits_to_float(v.bits); }
  static Elem store(Acc v) { return Half::from_bits(float_to_half_bits(v)); }
};

struct BFloat16Lane {
  using Elem = BFloat16;
  using Acc = float;
  static Acc load(Elem v) { return bfloat16_bits_to_float(v.bits); }
  static Elem store(Acc v) { return BFloat16::from_bits(float_to_bfloat16_bits(v)); }
};

// Bool elements are bytes; any nonzero byte is true and results are 0 or 1.
struct BoolLane {
  using Elem = uint8_t;
  using Acc = uint8_t;
  static Acc load(Elem v) { return v != 0 ? 1 : 0; }
  static Elem store(Acc v) { return v; }
};

// Integer arithmetic happens in the unsigned type of the promoted operands, where
// overflow wraps instead of being undefined; converting back wraps as well.
template <typename A>
using Unsigned = std::make_unsigned_t<decltype(A{} + A{})>;

struct SumOp {
  template <typename A>
  static A apply(A a, A b) {
    if constexpr (std::is_integral_v<A>) {
      return static_cast<A>(static_cast<Unsigned<A>>(a) + static_cast<Unsigned<A>>(b));
    } else {
      return a + b;
    }
  }
};

struct ProdOp {
  template <typename A>
  static A apply(A a, A b) {
    if constexpr (std::is_integral_v<A>) {
      return static_cast<A>(static_cast<Unsigned<A>>(a) * static_cast<Unsigned<A>>(b));
    } else {
      return a * b;
    }
  }
};

// MIN and MAX propagate NaN, like numpy.minimum / numpy.maximum.
struct MinOp {
  template <typename A>
  static A apply(A a, A b) {
    return (a < b || a != a) ? a : b;  // a != a: a is NaN
  }
};

struct MaxOp {
  template <typename A>
  static A apply(A a, A b) {
    return (a > b || a != a) ? a : b;
  }
};

struct OrOp {
  static uint8_t apply(uint8_t a, uint8_t b) { return a | b; }
};

struct AndOp {
  static uint8_t apply(uint8_t a, uint8_t b) { return a & b; }
};

// Reduces elements [base, base + len) of every source into dst. `Len` is either
// size_t or a std::integral_constant, which makes the trip count a constant.
// The first two sources are combined on loading and the last one on storing, so
// two sources take a single pass.
template <typename Lane, typename Op, typename Len>
void reduce_block(typename Lane::Elem* dst, const typename Lane::Elem* const* srcs, size_t nsrc,
                  size_t base, Len len) {
  using Elem = typename Lane::Elem;
  using Acc = typename Lane::Acc;
  const size_t n = len;
  Elem* out = dst + base;
  const Elem* first = srcs[0] + base;
  if (nsrc == 1) {
    COLLIE_IVDEP
    for (size_t i = 0; i < n; ++i) out[i] = Lane::store(Lane::load(first[i]));
    return;
  }
  const Elem* last = srcs[nsrc - 1] + base;
  if (nsrc == 2) {
    COLLIE_IVDEP
    for (size_t i = 0; i < n; ++i) {
      out[i] = Lane::store(Op::apply(Lane::load(first[i]), Lane::load(last[i])));
    }
    return;
  }
  Acc acc[kBlock];
  const Elem* second = srcs[1] + base;
  for (size_t i = 0; i < n; ++i) acc[i] = Op::apply(Lane::load(first[i]), Lane::load(second[i]));
  for (size_t k = 2; k + 1 < nsrc; ++k) {
    const Elem* src = srcs[k] + base;
    for (size_t i = 0; i < n; ++i) acc[i] = Op::apply(acc[i], Lane::load(src[i]));
  }
  COLLIE_IVDEP
  for (size_t i = 0; i < n; ++i) out[i] = Lane::store(Op::apply(acc[i], Lane::load(last[i])));
}

constexpr size_t kFewElements = 16;

// A few elements (a small collective's), each folded over the sources in order
// as reduce_block does (so the result is the same bit for bit), without the
// block code's vectorised set-up, which costs more than such work. Each path is
// its own function, so that none pays for another's stack frame: 2 float32
// sources, a call of reduce_n in a loop, 2 elements 134 -> 62 instructions, 16
// elements 317 -> 147.
template <typename Lane, typename Op>
[[gnu::noinline]] void reduce_few_of_many(void* dst, const void* const* srcs, size_t nsrc,
                                          size_t count) {
  using Elem = typename Lane::Elem;
  // Every source is read before dst is written: dst may be one of them.
  typename Lane::Acc acc[kFewElements];
  const auto* first = static_cast<const Elem*>(srcs[0]);
  for (size_t i = 0; i < count; ++i) acc[i] = Lane::load(first[i]);
  for (size_t k = 1; k < nsrc; ++k) {
    const auto* src = static_cast<const Elem*>(srcs[k]);
    for (size_t i = 0; i < count; ++i) acc[i] = Op::apply(acc[i], Lane::load(src[i]));
  }
  auto* out = static_cast<Elem*>(dst);
  for (size_t i = 0; i < count; ++i) out[i] = Lane::store(acc[i]);
}

// Two sources (two ranks): one plain pass.
template <typename Lane, typename Op>
[[gnu::noinline]] void reduce_few_of_two(void* dst, const void* const* srcs, size_t count) {
  using Elem = typename Lane::Elem;
  const auto* first = static_cast<const Elem*>(srcs[0]);
  const auto* second = static_cast<const Elem*>(srcs[1]);
  auto* out = static_cast<Elem*>(dst);
  for (size_t i = 0; i < count; ++i) {
    out[i] = Lane::store(Op::apply(Lane::load(first[i]), Lane::load(second[i])));
  }
}

// More than a few elements: whole blocks, then the rest. Kept out of line so that
// its frame (the typed source pointers) costs nothing to the few-element path.
template <typename Lane, typename Op>
[[gnu::noinline]] void reduce_blocks(void* dst, const void* const* srcs, size_t n, size_t count) {
  using Elem = typename Lane::Elem;
  // The typed source pointers live on the stack for the usual group sizes: a
  // heap allocation here was a tenth of a small all_reduce's instructions.
  constexpr size_t kInlineSources = 16;
  const Elem* inline_typed[kInlineSources] = {};
  std::vector<const Elem*> heap_typed;
  const Elem** typed = inline_typed;
  if (n > kInlineSources) {
    heap_typed.resize(n);
    typed = heap_typed.data();
  }
  for (size_t k = 0; k < n; ++k) typed[k] = static_cast<const Elem*>(srcs[k]);
  auto* out = static_cast<Elem*>(dst);
  size_t base = 0;
  for (; base + kBlock <= count; base += kBlock) {
    reduce_block<Lane, Op>(out, typed, n, base, std::integral_constant<size_t, kBlock>{});
  }
  if (base < count) reduce_block<Lane, Op>(out, typed, n, base, count - base);
}

template <typename Lane, typename Op>
void reduce_typed(void* dst, const void* const* srcs, int nsrc, size_t count) {
  const size_t n = static_cast<size_t>(nsrc);
  if (count <= kFewElements) {
    if (n == 2) return reduce_few_of_two<Lane, Op>(dst, srcs, count);
    return reduce_few_of_many<Lane, Op>(dst, srcs, n, count);
  }
  reduce_blocks<Lane, Op>(dst, srcs, n, count);
}

// Errors leave through these, out of line: a throw inline made every call save
// and restore six registers for it (34 of a 2-element call's instructions).
[[noreturn, gnu::noinline, gnu::cold]] void throw_no_sources(int nsrc) {
  throw ValueError("reduce_n: need at least one source, got " + std::to_string(nsrc));
}

[[noreturn, gnu::noinline, gnu::cold]] void throw_bad_op(ReduceOp op) {
  throw TypeError("reduce: invalid ReduceOp value " + std::to_string(static_cast<int>(op)));
}

[[noreturn, gnu::noinline, gnu::cold]] void throw_bad_dtype(DType dtype) {
  throw TypeError("reduce_n: invalid DType value " + std::to_string(static_cast<int>(dtype)));
}

template <typename Lane>
void reduce_arithmetic(void* dst, const void* const* srcs, int nsrc, size_t count, ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return reduce_typed<Lane, SumOp>(dst, srcs, nsrc, count);
    case ReduceOp::PROD: return reduce_typed<Lane, ProdOp>(dst, srcs, nsrc, count);
    case ReduceOp::MIN: return reduce_typed<Lane, MinOp>(dst, srcs, nsrc, count);
    case ReduceOp::MAX: return reduce_typed<Lane, MaxOp>(dst, srcs, nsrc, count);
  }
  throw_bad_op(op);
}

bool half_width(DType dtype) { return dtype == DType::Float16 || dtype == DType::BFloat16; }

// The chosen set's whole vectors (AVX-512: every element), then the rest
// portably.
[[gnu::noinline]] void reduce_n_vectorised(ReduceKernels kernels, void* dst,
                                           const void* const* srcs, int nsrc, size_t count,
                                           DType dtype, ReduceOp op) {
  const bool half = half_width(dtype);
  size_t done = 0;
  switch (kernels) {
    case ReduceKernels::kAvx512:
      done = half ? reduce_16bit_floats_avx512(dst, srcs, nsrc, count, dtype, op)
                  : reduce_wide_avx512(dst, srcs, nsrc, count, dtype, op);
      break;
    case ReduceKernels::kAvx2:
      done = half ? reduce_16bit_floats_avx2(dst, srcs, nsrc, count, dtype, op)
                  : reduce_wide_avx2(dst, srcs, nsrc, count, dtype, op);
      break;
    case ReduceKernels::kPortable:
      break;
  }
  if (done == count) return;
  if (done == 0) return reduce_n_portable(dst, srcs, nsrc, count, dtype, op);
  const size_t offset = done * element_size(dtype);
  constexpr size_t kInlineSources = 16;
  const void* inline_rest[kInlineSources];
  std::vector<const void*> heap_rest;
  const void** rest = inline_rest;
  if (static_cast<size_t>(nsrc) > kInlineSources) {
    heap_rest.resize(static_cast<size_t>(nsrc));
    rest = heap_rest.data();
  }
  for (int k = 0; k < nsrc; ++k) rest[k] = static_cast<const uint8_t*>(srcs[k]) + offset;
  reduce_n_portable(static_cast<uint8_t*>(dst) + offset, rest, nsrc, count - done, dtype, op);
}

bool vector_dtype(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Int32 ||
         dtype == DType::Int64 || dtype == DType::Float16 || dtype == DType::BFloat16;
}

ReduceKernels fastest_for_this_cpu() {
  if (avx512_kernels_available() && avx512_kernels_preferred_for_cpu(cpu_vendor(), cpu_family()))
    return ReduceKernels::kAvx512;
  if (avx2_kernels_available()) return ReduceKernels::kAvx2;
  return ReduceKernels::kPortable;
}

// COLLIE_REDUCE_KERNELS, "" when unset or auto.
std::string_view chosen_by_env() {
  const char* v = std::getenv("COLLIE_REDUCE_KERNELS");
  const std::string_view choice = v != nullptr ? v : "";
  return choice == "auto" ? "" : choice;
}

ReduceKernels read_choice() {
  const std::string_view choice = chosen_by_env();
  if (choice.empty()) return fastest_for_this_cpu();
  for (ReduceKernels k : {ReduceKernels::kPortable, ReduceKernels::kAvx2, ReduceKernels::kAvx512}) {
    if (choice != reduce_kernels_name(k)) continue;
    if (!reduce_kernels_available(k)) {
      throw ValueError("environment variable COLLIE_REDUCE_KERNELS='" + std::string(choice) +
                       "': this CPU cannot run them");
    }
    return k;
  }
  throw ValueError("environment variable COLLIE_REDUCE_KERNELS='" + std::string(choice) +
                   "' is not auto, portable, avx2 or avx512");
}

}  // namespace

void reduce_n(void* dst, const void* const* srcs, int nsrc, size_t count, DType dtype,
              ReduceOp op) {
  if (nsrc < 1) throw_no_sources(nsrc);
  // Floats and 32/64-bit integers beyond a few elements: the vector kernels
  // this process chose (reduce_kernels_avx2.h, reduce_kernels_avx512.h).
  if (vector_dtype(dtype) && count > kFewElements)
    return reduce_n_vectorised(reduce_kernels_in_use(), dst, srcs, nsrc, count, dtype, op);
  reduce_n_portable(dst, srcs, nsrc, count, dtype, op);
}

void reduce_n_with(ReduceKernels kernels, void* dst, const void* const* srcs, int nsrc,
                   size_t count, DType dtype, ReduceOp op) {
  if (nsrc < 1) throw_no_sources(nsrc);
  if (!reduce_kernels_available(kernels)) {
    throw ValueError(std::string("reduce_n_with: this CPU cannot run the ") +
                     reduce_kernels_name(kernels) + " kernels");
  }
  if (vector_dtype(dtype)) return reduce_n_vectorised(kernels, dst, srcs, nsrc, count, dtype, op);
  reduce_n_portable(dst, srcs, nsrc, count, dtype, op);
}

ReduceKernels reduce_kernels_in_use() {
  static const ReduceKernels kernels = read_choice();
  return kernels;
}

bool reduce_kernels_available(ReduceKernels kernels) {
  switch (kernels) {
    case ReduceKernels::kPortable:
      return true;
    case ReduceKernels::kAvx2:
      return avx2_kernels_available();
    case ReduceKernels::kAvx512:
      return avx512_kernels_available();
  }
  return false;
}

std::string describe_reduce_kernels() {
  const ReduceKernels kernels = reduce_kernels_in_use();
  const std::string name = reduce_kernels_name(kernels);
  if (!chosen_by_env().empty()) return name + " (COLLIE_REDUCE_KERNELS)";
  if (kernels == ReduceKernels::kPortable)
    return name + " (this CPU has no AVX2 and F16C, or is not x86-64)";
  char family[16];
  std::snprintf(family, sizeof family, "0x%x", cpu_family());
  return name + " (" + cpu_vendor() + " family " + family + ")";
}

const char* reduce_kernels_name(ReduceKernels kernels) {
  switch (kernels) {
    case ReduceKernels::kPortable:
      return "portable";
    case ReduceKernels::kAvx2:
      return "avx2";
    case ReduceKernels::kAvx512:
      return "avx512";
  }
  return "unknown";
}

void reduce_n_portable(void* dst, const void* const* srcs, int nsrc, size_t count, DType dtype,
                       ReduceOp op) {
  if (nsrc < 1) throw_no_sources(nsrc);
  switch (dtype) {
    case DType::Bool:
      if (op == ReduceOp::SUM || op == ReduceOp::MAX) {
        return reduce_typed<BoolLane, OrOp>(dst, srcs, nsrc, count);
      }
      return reduce_typed<BoolLane, AndOp>(dst, srcs, nsrc, count);
    case DType::Int8: return reduce_arithmetic<PlainLane<int8_t>>(dst, srcs, nsrc, count, op);
    case DType::UInt8: return reduce_arithmetic<PlainLane<uint8_t>>(dst, srcs, nsrc, count, op);
    case DType::Int16: return reduce_arithmetic<PlainLane<int16_t>>(dst, srcs, nsrc, count, op);
    case DType::Int32: return reduce_arithmetic<PlainLane<int32_t>>(dst, srcs, nsrc, count, op);
    case DType::Int64: return reduce_arithmetic<PlainLane<int64_t>>(dst, srcs, nsrc, count, op);
    case DType::Float16: return reduce_arithmetic<HalfLane>(dst, srcs, nsrc, count, op);
    case DType::BFloat16: return reduce_arithmetic<BFloat16Lane>(dst, srcs, nsrc, count, op);
    case DType::Float32: return reduce_arithmetic<PlainLane<float>>(dst, srcs, nsrc, count, op);
    case DType::Float64: return reduce_arithmetic<PlainLane<double>>(dst, srcs, nsrc, count, op);
  }
  throw_bad_dtype(dtype);
}

}  // namespace collie::detail
