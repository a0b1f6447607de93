// parse_byte_count: a size written by a person ("65536", "64K", "4M", "1.5G").
//
// K, M and G (either case) are 2^10, 2^20 and 2^30. Used by the environment
// contract (COLLIE_SHM_SLOT_BYTES, ...) and by `collie bench -b/-e`; header-only
// so that the MPI benchmark worker, which does not link collie, can use it too.
//
//   parse_byte_count("64K") == 65536;  parse_byte_count("0") == std::nullopt
#pragma once

#include <cstddef>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace collie::detail {

// The byte count, or nullopt unless the whole text is a number with an optional
// suffix giving at least 1 byte and less than 2^64 (inf, nan and 1e30 would be
// undefined behaviour to convert: found by the env and bench fuzzers).
inline std::optional<size_t> parse_byte_count(std::string_view text) {
  const std::string s(text);
  char* end = nullptr;
  const double n = std::strtod(s.c_str(), &end);
  if (end == s.c_str()) return std::nullopt;
  const std::string_view suffix(end);
  double mult = 1;
  if (suffix == "K" || suffix == "k") {
    mult = 1024.0;
  } else if (suffix == "M" || suffix == "m") {
    mult = 1024.0 * 1024;
  } else if (suffix == "G" || suffix == "g") {
    mult = 1024.0 * 1024 * 1024;
  } else if (!suffix.empty()) {
    return std::nullopt;
  }
  const double bytes = n * mult;
  if (!(bytes >= 1) || !(bytes < 18446744073709551616.0)) return std::nullopt;
  return static_cast<size_t>(bytes);
}

}  // namespace collie::detail
