// output_tagger.h — turns a rank's raw output stream into "[r] "-prefixed lines.
//
// `collie run --tag-output` reads each rank's stdout and stderr through pipes and
// feeds the bytes here. Only whole lines are released, so lines of different ranks
// never interleave mid-line; a partial last line is released (newline-terminated)
// by finish() when the stream ends. A line longer than max_line bytes is released
// in max_line pieces, each tagged, so memory stays bounded.
//
// Example:
//   OutputTagger t("[3] ");
//   std::string out;
//   t.feed("hello\nwor", &out);   // out == "[3] hello\n"
//   t.feed("ld", &out);           // nothing new
//   t.finish(&out);               // out == "[3] hello\n[3] world\n"
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace collie::cli {

class OutputTagger {
 public:
  explicit OutputTagger(std::string prefix, std::size_t max_line = 64 * 1024);

  // Appends every line of `data` that is now complete, tagged, to *out.
  void feed(std::string_view data, std::string* out);
  // End of stream: appends the pending partial line (tagged, plus '\n'), if any.
  void finish(std::string* out);

  bool has_partial() const { return !partial_.empty(); }

 private:
  std::string prefix_;
  std::string partial_;
  std::size_t max_line_;
};

}  // namespace collie::cli
