// Unit tests of `collie run` argument parsing (src/cli/run_options.h).
#include "cli/run_options.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace collie::cli {
namespace {

using V = std::vector<std::string>;

RunParse parse(const V& args) { return parse_run_options(args); }

TEST(CliRunOptions, MinimalCommand) {
  RunParse p = parse({"-n", "4", "prog", "a", "b"});
  ASSERT_EQ(p.kind, RunParse::Kind::kOk) << p.error;
  EXPECT_EQ(p.options.nprocs, 4);
  EXPECT_EQ(p.options.command, (V{"prog", "a", "b"}));
  EXPECT_FALSE(p.options.tag_output);
  EXPECT_FALSE(p.options.timeout.has_value());
  EXPECT_FALSE(p.options.job_id.has_value());
}

TEST(CliRunOptions, AllOptionsAndDoubleDash) {
  RunParse p = parse({"--tag-output", "-n", "3", "--timeout", "7.5", "--job-id", "Ab12", "--",
                      "prog", "--tag-output", "-n", "9"});
  ASSERT_EQ(p.kind, RunParse::Kind::kOk) << p.error;
  EXPECT_EQ(p.options.nprocs, 3);
  EXPECT_TRUE(p.options.tag_output);
  EXPECT_EQ(p.options.timeout, "7.5");
  EXPECT_EQ(p.options.job_id, "Ab12");
  // Everything after "--" belongs to the program, even option-like words.
  EXPECT_EQ(p.options.command, (V{"prog", "--tag-output", "-n", "9"}));
}

TEST(CliRunOptions, BindTo) {
  EXPECT_EQ(parse({"-n", "2", "prog"}).options.bind, BindPolicy::kAuto);
  EXPECT_EQ(parse({"-n", "2", "--bind-to", "core", "prog"}).options.bind, BindPolicy::kCore);
  EXPECT_EQ(parse({"--bind-to=none", "-n", "2", "prog"}).options.bind, BindPolicy::kNone);
  RunParse bad = parse({"-n", "2", "--bind-to", "socket", "prog"});
  EXPECT_EQ(bad.kind, RunParse::Kind::kError);
  EXPECT_NE(bad.error.find("--bind-to expects auto, core or none, got 'socket'"), std::string::npos)
      << bad.error;
  EXPECT_EQ(parse({"-n", "2", "--bind-to"}).kind, RunParse::Kind::kError);
}

TEST(CliRunOptions, OptionsAfterTheProgramBelongToIt) {
  RunParse p = parse({"-n", "2", "python3", "-c", "print(1)", "--timeout", "x"});
  ASSERT_EQ(p.kind, RunParse::Kind::kOk) << p.error;
  EXPECT_EQ(p.options.command, (V{"python3", "-c", "print(1)", "--timeout", "x"}));
  EXPECT_FALSE(p.options.timeout.has_value());
}

TEST(CliRunOptions, SpellingsOfN) {
  for (const V& args : {V{"-n", "5", "p"}, V{"-n5", "p"}, V{"-n=5", "p"}, V{"-np", "5", "p"},
                        V{"--nprocs", "5", "p"}, V{"--nprocs=5", "p"}}) {
    RunParse p = parse(args);
    ASSERT_EQ(p.kind, RunParse::Kind::kOk) << args[0] << ": " << p.error;
    EXPECT_EQ(p.options.nprocs, 5) << args[0];
  }
}

TEST(CliRunOptions, EqualsForms) {
  RunParse p = parse({"-n", "1", "--timeout=2", "--job-id=xyz9", "p"});
  ASSERT_EQ(p.kind, RunParse::Kind::kOk) << p.error;
  EXPECT_EQ(p.options.timeout, "2");
  EXPECT_EQ(p.options.job_id, "xyz9");
}

TEST(CliRunOptions, LastRepeatWins) {
  RunParse p = parse({"-n", "1", "-n", "6", "p"});
  ASSERT_EQ(p.kind, RunParse::Kind::kOk) << p.error;
  EXPECT_EQ(p.options.nprocs, 6);
}

TEST(CliRunOptions, Help) {
  EXPECT_EQ(parse({"--help"}).kind, RunParse::Kind::kHelp);
  EXPECT_EQ(parse({"-n", "2", "-h"}).kind, RunParse::Kind::kHelp);
  EXPECT_NE(run_usage().find("usage: collie run -n N"), std::string::npos);
}

struct BadCase {
  V args;
  std::string needle;  // expected in the error
};

TEST(CliRunOptions, Errors) {
  const std::vector<BadCase> cases = {
      {{}, "missing -n"},
      {{"prog"}, "missing -n"},
      {{"-n", "2"}, "missing the program"},
      {{"-n", "2", "--"}, "missing the program"},
      {{"-n"}, "-n needs"},
      {{"-n", "0", "p"}, "at least 1"},
      {{"-n", "-3", "p"}, "at least 1"},
      {{"-n0", "p"}, "at least 1"},
      {{"-n", "two", "p"}, "whole number"},
      {{"-n", "2.5", "p"}, "whole number"},
      {{"-n", "", "p"}, "-n needs"},
      {{"-n", "1025", "p"}, "limit"},
      {{"-n", "99999999999", "p"}, "limit"},
      {{"-n", "2", "--frobnicate", "p"}, "unknown option '--frobnicate'"},
      {{"-x", "-n", "2", "p"}, "unknown option '-x'"},
      {{"-n", "2", "--timeout", "0", "p"}, "--timeout"},
      {{"-n", "2", "--timeout", "-1", "p"}, "--timeout"},
      {{"-n", "2", "--timeout", "abc", "p"}, "--timeout"},
      {{"-n", "2", "--timeout", "5s", "p"}, "--timeout"},
      {{"-n", "2", "--timeout", "inf", "p"}, "--timeout"},
      {{"-n", "2", "--timeout", "nan", "p"}, "--timeout"},
      {{"-n", "2", "--timeout"}, "--timeout needs"},
      {{"-n", "2", "--job-id"}, "--job-id needs"},
      {{"-n", "2", "--job-id", "a-b", "p"}, "--job-id 'a-b'"},
      {{"-n", "2", "--job-id", "a_b", "p"}, "not valid"},
      {{"-n", "2", "--job-id", "", "p"}, "not valid"},
      {{"-n", "2", "--job-id", "../x", "p"}, "not valid"},
      {{"-n", "2", "--job-id", std::string(49, 'a'), "p"}, "not valid"},
      {{"-n", "2", "", "p"}, "the program name is empty"},
  };
  for (const BadCase& c : cases) {
    std::string joined;
    for (const auto& a : c.args) joined += "[" + a + "]";
    RunParse p = parse(c.args);
    EXPECT_EQ(p.kind, RunParse::Kind::kError) << joined;
    EXPECT_NE(p.error.find(c.needle), std::string::npos)
        << joined << ": error '" << p.error << "' lacks '" << c.needle << "'";
  }
}

TEST(CliRunOptions, LimitsAreInclusive) {
  EXPECT_EQ(parse({"-n", std::to_string(kMaxRanks), "p"}).kind, RunParse::Kind::kOk);
  EXPECT_EQ(parse({"-n", "1", "--job-id", std::string(kMaxJobIdLength, 'Z'), "p"}).kind,
            RunParse::Kind::kOk);
}

TEST(CliRunOptions, ValidJobId) {
  EXPECT_TRUE(valid_job_id("abcXYZ019"));
  EXPECT_FALSE(valid_job_id(""));
  EXPECT_FALSE(valid_job_id("a-b"));
  EXPECT_FALSE(valid_job_id("a b"));
  EXPECT_FALSE(valid_job_id("a/b"));
  EXPECT_FALSE(valid_job_id("a_b"));
  EXPECT_FALSE(valid_job_id("\xc3\xa9"));
}

TEST(CliRunOptions, GeneratedJobIdsAreValidAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 50; ++i) {
    std::string id = generate_job_id();
    EXPECT_TRUE(valid_job_id(id)) << id;
    EXPECT_NE(id.find('x'), std::string::npos) << id;
    seen.insert(id);
  }
  // 32 random bits each: 50 draws collide with probability ~3e-7.
  EXPECT_EQ(seen.size(), 50u);
}

}  // namespace
}  // namespace collie::cli
