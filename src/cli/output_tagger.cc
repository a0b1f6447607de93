#include "cli/output_tagger.h"

#include <utility>

namespace collie::cli {

OutputTagger::OutputTagger(std::string prefix, std::size_t max_line)
    : prefix_(std::move(prefix)), max_line_(max_line == 0 ? 1 : max_line) {}

void OutputTagger::feed(std::string_view data, std::string* out) {
  while (!data.empty()) {
    std::size_t nl = data.find('\n');
    if (nl == std::string_view::npos) {
      partial_.append(data);
      // Release over-long lines in pieces so a rank that never prints '\n' cannot
      // make the launcher buffer without bound.
      while (partial_.size() >= max_line_) {
        out->append(prefix_);
        out->append(partial_, 0, max_line_);
        out->push_back('\n');
        partial_.erase(0, max_line_);
      }
      return;
    }
    out->append(prefix_);
    out->append(partial_);
    out->append(data.substr(0, nl + 1));
    partial_.clear();
    data.remove_prefix(nl + 1);
  }
}

void OutputTagger::finish(std::string* out) {
  if (partial_.empty()) return;
  out->append(prefix_);
  out->append(partial_);
  out->push_back('\n');
  partial_.clear();
}

}  // namespace collie::cli
