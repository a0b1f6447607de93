// Tensor::to_string: numpy's str() layout (numpy >= 1.14 defaults).
//
// As in numpy, every element is formatted to a common width chosen from all the
// values shown; rows wrap at 75 characters; tensors over 1000 elements show only
// the first and last 3 entries of each long dim, with "..." between.
#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include "collie/tensor.h"
#include "core/element.h"
#include "core/float_format.h"

namespace collie {

namespace {

constexpr int kLineWidth = 75;
constexpr int64_t kThreshold = 1000;  // numpy's print threshold
constexpr int64_t kEdgeItems = 3;
constexpr int kPrecision = 8;  // at most 8 digits after the point

std::string pad_left(const std::string& text, size_t width) {
  return text.size() >= width ? text : std::string(width - text.size(), ' ') + text;
}

// numpy's FloatingFormat in its default 'maxprec' mode: positional notation with
// columns aligned on the decimal point, or scientific notation when the values
// span too many orders of magnitude.
class FloatFormat {
 public:
  FloatFormat(const std::vector<double>& values, DType dtype) : dtype_(dtype) {
    std::vector<double> finite;
    bool has_nonfinite = false;
    bool has_neg_inf = false;
    for (double v : values) {
      if (std::isfinite(v)) {
        finite.push_back(v);
      } else {
        has_nonfinite = true;
        has_neg_inf = has_neg_inf || v < 0;
      }
    }
    if (!finite.empty()) choose_layout(finite);
    if (has_nonfinite) {
      // "nan" and "inf" are right-aligned over the whole column.
      const int offset = pad_right_ + 1;
      pad_left_ = std::max({pad_left_, 3 - offset, 3 + (has_neg_inf ? 1 : 0) - offset});
    }
  }

  std::string operator()(double v) const {
    if (!std::isfinite(v)) {
      const std::string word = std::isnan(v) ? "nan" : v < 0 ? "-inf" : "inf";
      return pad_left(word, static_cast<size_t>(pad_left_ + pad_right_ + 1));
    }
    if (scientific_) {
      const detail::FloatParts parts = detail::scientific_parts(v, dtype_, kPrecision, precision_);
      std::string exponent = std::to_string(std::abs(parts.exponent));
      exponent.insert(
          0, static_cast<size_t>(std::max(0, exp_digits_ - static_cast<int>(exponent.size()))),
          '0');
      return pad_left(parts.int_part, static_cast<size_t>(pad_left_)) + "." + parts.frac_part +
             "e" + (parts.exponent < 0 ? "-" : "+") + exponent;
    }
    const detail::FloatParts parts = detail::positional_parts(v, dtype_, kPrecision);
    std::string frac = parts.frac_part;
    frac.resize(static_cast<size_t>(pad_right_), ' ');
    return pad_left(parts.int_part, static_cast<size_t>(pad_left_)) + "." + frac;
  }

 private:
  void choose_layout(const std::vector<double>& finite) {
    double max_abs = 0;
    double min_abs = INFINITY;
    for (double v : finite) {
      if (v == 0) continue;
      max_abs = std::max(max_abs, std::fabs(v));
      min_abs = std::min(min_abs, std::fabs(v));
    }
    scientific_ = max_abs > 0 && (max_abs >= 1e8 || min_abs < 1e-4 || max_abs / min_abs > 1e3);
    for (double v : finite) {
      if (scientific_) {
        const detail::FloatParts parts = detail::scientific_parts(v, dtype_, kPrecision);
        const int digits = static_cast<int>(std::to_string(std::abs(parts.exponent)).size());
        exp_digits_ = std::max(exp_digits_, digits);
        precision_ = std::max(precision_, static_cast<int>(parts.frac_part.size()));
        pad_left_ = std::max(pad_left_, static_cast<int>(parts.int_part.size()));
      } else {
        const detail::FloatParts parts = detail::positional_parts(v, dtype_, kPrecision);
        pad_left_ = std::max(pad_left_, static_cast<int>(parts.int_part.size()));
        pad_right_ = std::max(pad_right_, static_cast<int>(parts.frac_part.size()));
      }
    }
    // For the nan/inf width: what follows the integer part, less the point.
    if (scientific_) pad_right_ = exp_digits_ + 2 + precision_;
  }

  DType dtype_;
  bool scientific_ = false;
  int pad_left_ = 0;
  int pad_right_ = 0;
  int precision_ = 0;   // scientific: digits after the point
  int exp_digits_ = 2;  // scientific: at least two exponent digits, as in C
};

// The printed words of the shown elements, in row-major order.
std::vector<std::string> format_elements(const Tensor& t, const std::vector<int64_t>& offsets) {
  return dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<std::string> words;
    words.reserve(offsets.size());
    if constexpr (std::is_same_v<T, bool>) {
      for (int64_t offset : offsets) {
        words.push_back(detail::load_element<bool>(t.data_ptr(), offset) ? " True" : "False");
      }
    } else if constexpr (std::is_integral_v<T>) {
      size_t width = 0;
      for (int64_t offset : offsets) {
        words.push_back(std::to_string(detail::load_element<T>(t.data_ptr(), offset)));
        width = std::max(width, words.back().size());
      }
      for (std::string& word : words) word = pad_left(word, width);
    } else {
      std::vector<double> values;
      values.reserve(offsets.size());
      for (int64_t offset : offsets) {
        values.push_back(
            detail::convert_element<double>(detail::load_element<T>(t.data_ptr(), offset)));
      }
      const FloatFormat format(values, t.dtype());
      for (double v : values) words.push_back(format(v));
    }
    return words;
  });
}

// numpy's _formatArray: nests brackets, wraps rows, inserts "..." where summarised.
class Layout {
 public:
  Layout(const Tensor& t, bool summarise) : tensor_(t), summarise_(summarise) {
    collect_offsets(0, 0);
    words_ = format_elements(t, offsets_);
  }

  std::string render() { return render_axis(0, " ", kLineWidth); }

 private:
  // The indices shown along `axis`: all, or the first and last kEdgeItems.
  std::vector<int64_t> shown(size_t axis) const {
    const int64_t n = tensor_.shape()[axis];
    std::vector<int64_t> indices;
    for (int64_t i = 0; i < n; ++i) {
      if (!summarised(axis) || i < kEdgeItems || i >= n - kEdgeItems) indices.push_back(i);
    }
    return indices;
  }

  bool summarised(size_t axis) const {
    return summarise_ && tensor_.shape()[axis] > 2 * kEdgeItems;
  }

  // Element offsets (relative to data_ptr()) of the shown elements, row-major.
  void collect_offsets(size_t axis, int64_t offset) {
    if (axis == tensor_.shape().size()) {
      offsets_.push_back(offset);
      return;
    }
    for (int64_t i : shown(axis)) collect_offsets(axis + 1, offset + i * tensor_.strides()[axis]);
  }

  // Appends `word` to `line`, first moving to a new line if it would pass `width`
  // (unless the line holds nothing yet, where wrapping would not help).
  static void extend_line(std::string& text, std::string& line, const std::string& word,
                          size_t width, const std::string& indent) {
    if (line.size() + word.size() > width && line.size() > indent.size()) {
      line.erase(line.find_last_not_of(' ') + 1);
      text += line + "\n";
      line = indent;
    }
    line += word;
  }

  std::string render_axis(size_t axis, const std::string& indent, int width) {
    const size_t axes_left = tensor_.shape().size() - axis;
    if (axes_left == 0) return words_[next_word_++];
    const std::string inner_indent = indent + " ";
    const int inner_width = width - 1;  // room for the closing ']'
    const size_t count = shown(axis).size();
    const bool summary = summarised(axis);
    std::string text;
    if (axes_left == 1) {
      const auto elem_width = static_cast<size_t>(width - 1);
      std::string line = indent;
      for (size_t j = 0; j < count; ++j) {
        if (summary && j == static_cast<size_t>(kEdgeItems)) {
          extend_line(text, line, "...", elem_width, indent);
          line += " ";
        }
        extend_line(text, line, render_axis(axis + 1, inner_indent, inner_width), elem_width,
                    indent);
        if (j + 1 < count) line += " ";
      }
      text += line;
    } else {
      // Blocks of higher dims are separated by one blank line per extra dim.
      const std::string separator(axes_left - 1, '\n');
      for (size_t j = 0; j < count; ++j) {
        if (summary && j == static_cast<size_t>(kEdgeItems)) text += indent + "..." + separator;
        text += indent + render_axis(axis + 1, inner_indent, inner_width);
        if (j + 1 < count) text += separator;
      }
    }
    return "[" + text.substr(indent.size()) + "]";
  }

  const Tensor& tensor_;
  bool summarise_;
  std::vector<int64_t> offsets_;
  std::vector<std::string> words_;
  size_t next_word_ = 0;
};

// A 0-d tensor prints as numpy prints the scalar: "2.5", "1.0", "7", "True".
std::string scalar_to_string(const Tensor& t) {
  return dispatch_dtype(t.dtype(), [&](auto tag) -> std::string {
    using T = decltype(tag);
    const T value = detail::load_element<T>(t.data_ptr(), 0);
    if constexpr (std::is_same_v<T, bool>) {
      return value ? "True" : "False";
    } else if constexpr (std::is_integral_v<T>) {
      return std::to_string(value);
    } else {
      return detail::format_float_scalar(detail::convert_element<double>(value), t.dtype());
    }
  });
}

}  // namespace

std::string Tensor::to_string() const {
  if (dim() == 0) return scalar_to_string(*this);
  if (numel() == 0) return "[]";
  return Layout(*this, numel() > kThreshold).render();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace collie
