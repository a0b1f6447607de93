// The rule table itself (single process, no ranks): every op and alias resolves, bad
// names and attributes fail at get_bprop with the accepted ones listed, reduce_scatter
// with a non-SUM op is refused, and docs/autograd.md documents every op of the table.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "collie/autograd.h"
#include "collie/errors.h"

namespace {

namespace ag = collie::autograd;
using collie::Shape;

// Attributes that make each rule constructible.
ag::Attrs minimal_attrs(const std::string& name) {
  if (name == "reduce") return {{"dst", int64_t{0}}};
  if (name == "all_to_all") return {{"split_dim", int64_t{0}}, {"concat_dim", int64_t{0}}};
  if (name == "all_to_all_v")
    return {{"send_numel_list", std::vector<int64_t>{1}},
            {"recv_numel_list", std::vector<int64_t>{1}}};
  if (name == "all_to_all_v_c") return {{"send_count_matrix", std::vector<int64_t>{1}}};
  if (name == "batch_isend_irecv")
    return {{"ops", std::vector<std::string>{"isend"}}, {"peers", std::vector<int64_t>{0}}};
  if (name == "neighbor_exchange") {
    return {{"send_rank_ids", std::vector<int64_t>{}},
            {"recv_rank_ids", std::vector<int64_t>{}},
            {"recv_shapes", std::vector<Shape>{}}};
  }
  if (name == "neighbor_exchange_v2") {
    return {{"send_rank_ids", std::vector<int64_t>(8, -1)},
            {"recv_rank_ids", std::vector<int64_t>(8, -1)},
            {"send_lens", std::vector<int64_t>(4, 0)},
            {"recv_lens", std::vector<int64_t>(4, 0)}};
  }
  if (name == "virtual_div") return {{"divisor", 2.0}};
  return {};
}

TEST(RuleTable, EveryOpAndAliasResolves) {
  const auto& table = ag::rule_table();
  std::set<std::string> names;
  for (const auto& rule : table) {
    EXPECT_TRUE(names.insert(rule.name).second) << "duplicate " << rule.name;
    EXPECT_FALSE(rule.backward.empty()) << rule.name;
    auto b = ag::get_bprop(rule.name, minimal_attrs(rule.name));
    EXPECT_TRUE(static_cast<bool>(b));
    EXPECT_EQ(b.op(), rule.name);
    for (const auto& alias : rule.aliases) {
      EXPECT_TRUE(names.insert(alias).second) << "alias " << alias << " is used twice";
      EXPECT_EQ(ag::get_bprop(alias, minimal_attrs(rule.name)).op(), rule.name);
    }
  }
  // The scope of the issue, by collie name.
  for (const char* op : {"all_reduce",
                         "all_gather_into_tensor",
                         "reduce_scatter_tensor",
                         "broadcast",
                         "reduce",
                         "gather_into_tensor",
                         "scatter_tensor",
                         "all_to_all",
                         "all_to_all_v",
                         "all_to_all_single_with_output_shape",
                         "all_to_all_with_output_shape",
                         "all_to_all_v_c",
                         "send",
                         "recv",
                         "batch_isend_irecv",
                         "neighbor_exchange",
                         "neighbor_exchange_v2",
                         "mirror",
                         "virtual_div",
                         "mirror_mini_step",
                         "mini_step_all_gather"}) {
    EXPECT_TRUE(names.count(op)) << op;
  }
  // MindSpore's registry names.
  for (const char* op :
       {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "CollectiveGather",
        "CollectiveScatter", "AlltoAll", "AlltoAllV", "Send", "Receive", "NeighborExchange",
        "NeighborExchangeV2", "_MirrorOperator", "_VirtualDiv", "_MirrorMiniStepOperator",
        "_MiniStepAllGather", "_HostAllGather", "_HostReduceScatter"}) {
    EXPECT_TRUE(names.count(op)) << op;
  }
}

template <typename Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const collie::Error& e) {
    return std::string(typeid(e).name()) + ": " + e.what();
  }
  return "no error";
}

TEST(RuleTable, BadNamesAndAttributesFailAtLookup) {
  EXPECT_THROW(ag::get_bprop("AllReduceX"), collie::ValueError);
  EXPECT_NE(error_of([] { ag::get_bprop("nope"); }).find("known ops: all_reduce"),
            std::string::npos);
  // A typo in an attribute name lists the accepted ones.
  const auto typo = error_of([] { ag::get_bprop("broadcast", {{"root", int64_t{1}}}); });
  EXPECT_NE(typo.find("unknown attribute 'root'"), std::string::npos) << typo;
  EXPECT_NE(typo.find("src, group"), std::string::npos) << typo;
  EXPECT_THROW(ag::get_bprop("broadcast", {{"src", std::string("1")}}), collie::ValueError);
  EXPECT_THROW(ag::get_bprop("reduce", {}), collie::ValueError);  // dst is required
  EXPECT_THROW(ag::get_bprop("all_reduce", {{"op", std::string("avg")}}), collie::TypeError);
  EXPECT_THROW(ag::get_bprop("virtual_div", {{"divisor", 0.0}}), collie::ValueError);
  EXPECT_THROW(ag::get_bprop("mirror_mini_step", {{"accumulation_steps", int64_t{0}}}),
               collie::ValueError);
  EXPECT_THROW(ag::get_bprop("neighbor_exchange_v2",
                             [] {
                               auto a = minimal_attrs("neighbor_exchange_v2");
                               a["data_format"] = std::string("NHWC");
                               return a;
                             }()),
               collie::ValueError);
  EXPECT_THROW(ag::get_bprop("batch_isend_irecv", {{"ops", std::vector<std::string>{"send"}},
                                                   {"peers", std::vector<int64_t>{0}}}),
               collie::ValueError);
  // Gradient tags live above the user's range.
  EXPECT_THROW(ag::get_bprop("send", {{"tag", int64_t{1} << 29}}), collie::ValueError);
  EXPECT_THROW(ag::get_bprop("recv", {{"tag", int64_t{-1}}}), collie::ValueError);
  EXPECT_NO_THROW(ag::get_bprop("send", {{"tag", (int64_t{1} << 29) - 1}}));
}

TEST(RuleTable, ReduceScatterWithoutSumIsRefusedAtLookup) {
  for (const char* op : {"prod", "max", "min"}) {
    const auto msg = error_of([op] {
      ag::get_bprop("reduce_scatter_tensor", {{"op", std::string(op)}});
    });
    EXPECT_NE(msg.find("RuntimeError"), std::string::npos) << msg;
    EXPECT_NE(msg.find("op=sum only"), std::string::npos) << msg;
    EXPECT_THROW(ag::get_bprop("ReduceScatter", {{"op", std::string(op)}}), collie::RuntimeError);
  }
  EXPECT_NO_THROW(ag::get_bprop("reduce_scatter_tensor", {{"op", std::string("sum")}}));
}

TEST(RuleTable, EmptyBpropAndWrongArity) {
  ag::Bprop empty;
  EXPECT_FALSE(static_cast<bool>(empty));
  EXPECT_THROW(empty(ag::TensorList{}, {}, {}), collie::RuntimeError);
  // barrier has no gradient: the single-tensor call form refuses its empty answer.
  auto barrier = ag::get_bprop("barrier");
  EXPECT_TRUE(barrier(ag::TensorList{}, {}, {}).empty());
  collie::Tensor t = collie::Tensor::ones({1});
  EXPECT_THROW(barrier(t, t, t), collie::ValueError);
}

TEST(RuleTable, DocsDescribeEveryRule) {
  std::ifstream in(std::string(COLLIE_SOURCE_DIR) + "/docs/autograd.md");
  ASSERT_TRUE(in.good()) << "docs/autograd.md is missing";
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  for (const auto& rule : ag::rule_table()) {
    EXPECT_NE(doc.find("`" + rule.name + "`"), std::string::npos)
        << rule.name << " is not in docs/autograd.md";
    for (const auto& alias : rule.aliases) {
      EXPECT_NE(doc.find(alias), std::string::npos) << alias << " is not in docs/autograd.md";
    }
  }
  EXPECT_NE(doc.find("sum of the per-rank losses"), std::string::npos);
}

}  // namespace
