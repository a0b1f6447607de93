// parse_config / config_args / root_of_call: the sweep options shared by
// `collie bench` and its workers (src/bench/bench_config.h), here `--op`,
// `--root` and `--span`.
#include "bench/bench_config.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace collie::bench {
namespace {

BenchConfig parse(std::vector<std::string> args) { return parse_config(args, nullptr); }

TEST(BenchConfig, OpsAreRepeatedOrListedInTheOrderGiven) {
  using Ops = std::vector<std::string>;
  EXPECT_EQ(parse({}).ops, Ops{"all_reduce"});
  EXPECT_EQ(parse({"--op", "gather"}).ops, Ops{"gather"});
  EXPECT_EQ(parse({"--op", "scatter,gather"}).ops, (Ops{"scatter", "gather"}));
  EXPECT_EQ(parse({"--op", "reduce", "--op", "broadcast,send_recv"}).ops,
            (Ops{"reduce", "broadcast", "send_recv"}));
  EXPECT_EQ(parse({"--op", "all"}).ops, all_ops());
  Ops all_then_one = all_ops();
  all_then_one.push_back("reduce");
  EXPECT_EQ(parse({"--op", "all,reduce"}).ops, all_then_one);
  for (const char* bad : {"bogus", "gather,bogus", "gather,", ",gather", "gather,,scatter", ""}) {
    EXPECT_THROW(parse({"--op", bad}), std::invalid_argument) << "--op '" << bad << "'";
  }
  try {
    parse({"--op", "gather,gaher"});
    ADD_FAILURE() << "a misspelt op in a list was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown op 'gaher' in --op 'gather,gaher'");
  }
  // The workers get the list as repeated options.
  BenchConfig c;
  c.ops = {"broadcast", "reduce"};
  EXPECT_EQ(parse(config_args(c)).ops, (Ops{"broadcast", "reduce"}));
}

TEST(BenchConfig, RootDefaultsToZeroAndTakesARankOrRotate) {
  EXPECT_EQ(parse({}).root, 0);
  EXPECT_EQ(parse({"--root", "3"}).root, 3);
  EXPECT_EQ(parse({"--root", "rotate"}).root, kRotateRoot);
  for (const char* bad : {"-1", "x", "2x", ""}) {
    EXPECT_THROW(parse({"--root", bad}), std::invalid_argument) << "--root '" << bad << "'";
  }
  EXPECT_THROW(parse({"--root"}), std::invalid_argument);
}

TEST(BenchConfig, RootSurvivesTheTripToTheWorkers) {
  for (int root : {0, 1, 5, kRotateRoot}) {
    BenchConfig c;
    c.root = root;
    EXPECT_EQ(parse(config_args(c)).root, root);
  }
}

TEST(BenchConfig, RootOfEachCall) {
  BenchConfig fixed;
  fixed.root = 2;
  BenchConfig rotating;
  rotating.root = kRotateRoot;
  for (long call = 0; call < 10; ++call) {
    EXPECT_EQ(root_of_call(fixed, call, 4), 2);
    EXPECT_EQ(root_of_call(rotating, call, 4), call % 4);
    EXPECT_EQ(root_of_call(rotating, call, 3), call % 3);
  }
}

TEST(BenchConfig, RootMustNameARank) {
  BenchConfig c;
  c.root = 2;
  EXPECT_NO_THROW(check_root(c, 3));
  EXPECT_THROW(check_root(c, 2), std::invalid_argument);
  c.root = kRotateRoot;
  EXPECT_NO_THROW(check_root(c, 1));
}

TEST(BenchConfig, SpanIsOffByDefaultAndReachesTheWorkers) {
  EXPECT_FALSE(parse({}).span);
  EXPECT_TRUE(parse({"--span"}).span);
  BenchConfig c;
  c.span = true;
  EXPECT_TRUE(parse(config_args(c)).span);
  c.span = false;
  EXPECT_FALSE(parse(config_args(c)).span);
}

TEST(BenchConfig, SpanAndLoopExcludeEachOther) {
  // --span times each call after its own barrier; --loop has no barrier per call.
  EXPECT_THROW(parse({"--span", "--loop"}), std::invalid_argument);
  EXPECT_NO_THROW(parse({"--span", "--dirty"}));
}

}  // namespace
}  // namespace collie::bench
