// Unit tests of the --tag-output line tagger (src/cli/output_tagger.h).
#include "cli/output_tagger.h"

#include <gtest/gtest.h>

#include <string>

namespace collie::cli {
namespace {

TEST(CliOutputTagger, WholeLines) {
  OutputTagger t("[2] ");
  std::string out;
  t.feed("a\nbb\n", &out);
  EXPECT_EQ(out, "[2] a\n[2] bb\n");
  EXPECT_FALSE(t.has_partial());
  t.finish(&out);
  EXPECT_EQ(out, "[2] a\n[2] bb\n");
}

TEST(CliOutputTagger, PartialLinesWaitForTheirNewline) {
  OutputTagger t("[0] ");
  std::string out;
  t.feed("hel", &out);
  EXPECT_EQ(out, "");
  EXPECT_TRUE(t.has_partial());
  t.feed("lo\nwor", &out);
  EXPECT_EQ(out, "[0] hello\n");
  t.feed("ld", &out);
  t.feed("", &out);
  EXPECT_EQ(out, "[0] hello\n");
  t.finish(&out);  // the partial last line is flushed, newline-terminated
  EXPECT_EQ(out, "[0] hello\n[0] world\n");
  t.finish(&out);  // idempotent
  EXPECT_EQ(out, "[0] hello\n[0] world\n");
}

TEST(CliOutputTagger, EmptyLinesAreTaggedToo) {
  OutputTagger t("[1] ");
  std::string out;
  t.feed("\n\nx\n", &out);
  EXPECT_EQ(out, "[1] \n[1] \n[1] x\n");
}

TEST(CliOutputTagger, ByteAtATime) {
  OutputTagger t("[3] ");
  std::string out;
  for (char c : std::string("ab\ncd\n")) t.feed(std::string_view(&c, 1), &out);
  EXPECT_EQ(out, "[3] ab\n[3] cd\n");
}

TEST(CliOutputTagger, OverlongLinesAreSplit) {
  OutputTagger t("[0] ", 4);
  std::string out;
  t.feed("abcdefghij", &out);
  EXPECT_EQ(out, "[0] abcd\n[0] efgh\n");
  t.feed("\n", &out);
  EXPECT_EQ(out, "[0] abcd\n[0] efgh\n[0] ij\n");
}

TEST(CliOutputTagger, EmptyStreamProducesNothing) {
  OutputTagger t("[0] ");
  std::string out;
  t.finish(&out);
  EXPECT_EQ(out, "");
}

}  // namespace
}  // namespace collie::cli
