// The rule table: every differentiable communication op, its MindSpore names, its
// attributes, and the factory of its backward rule — in one place (DESIGN.md §8).
// docs/autograd.md is this table in prose; a test checks that every name appears there.
#include <string>

#include "autograd/attrs.h"
#include "autograd/rules.h"
#include "collie/autograd.h"
#include "collie/errors.h"

namespace collie::autograd {
namespace {

struct Entry {
  RuleInfo info;
  detail::RuleFactory make;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      {{"all_reduce",
        {"AllReduce"},
        {"op", "group"},
        "x=[x] out=[y] dout=[dy] (or [indices, values]) -> [dx]",
        "sum: all_reduce(dy); prod: sum(dy) * product of the other ranks' x (all_gather, prefix/"
        "suffix products); max/min: sum(dy) split evenly among the ranks holding the extremum; "
        "row-sparse dy (sum only): indices and values gathered with uneven sizes, coalesced",
        "prod divides by x (NaN/Inf at zeros); max/min give every tied rank the full gradient; the "
        "sparse path assumes equal nnz on all ranks and keeps duplicates"},
       detail::make_all_reduce},
      {{"all_reduce_invariant",
        {},
        {"group"},
        "x=[x] out=[y] dout=[dy] -> [dx]",
        "identity: the output is one replicated value whose cotangent is counted once "
        "(Megatron g, JAX psum_invariant)",
        "no such op"},
       detail::make_all_reduce_invariant},
      {{"all_gather_into_tensor",
        {"AllGather", "_HostAllGather", "all_gather"},
        {"group", "mean_flag"},
        "x=[x] out=[y] dout=[dy] -> [dx]",
        "reduce_scatter_tensor(dy, sum), x1/N when mean_flag",
        ""},
       detail::make_all_gather},
      {{"reduce_scatter_tensor",
        {"ReduceScatter", "_HostReduceScatter", "reduce_scatter"},
        {"op", "group"},
        "x=[x] out=[y] dout=[dy] -> [dx]",
        "sum: all_gather_into_tensor(dy); other ops: RuntimeError from get_bprop",
        ""},
       detail::make_reduce_scatter},
      {{"all_gather_v",
        {},
        {"group", "rows_per_rank"},
        "x=[x] out=[y] dout=[dy] -> [dx]",
        "reduce_scatter_v(dy, rows of every rank)",
        "no such op (AllGather needs equal shapes)"},
       detail::make_all_gather_v},
      {{"reduce_scatter_v",
        {},
        {"group", "rows_per_rank"},
        "x=[x] out=[y] dout=[dy] -> [dx]",
        "all_gather_v(dy)",
        "no such op"},
       detail::make_reduce_scatter_v},
      {{"broadcast",
        {"Broadcast"},
        {"src", "group"},
        "x=[x] out=[y] dout=[dy] -> [dx]",
        "reduce(dy, dst=src, sum) on src; zeros on the other ranks",
        "returns dout unchanged (identity), which is not the adjoint"},
       detail::make_broadcast},
      {{"reduce",
        {"Reduce"},
        {"dst", "op", "group"},
        "x=[x] out=[y] dout=[dy] -> [dx]; non-dst out/dout ([1] placeholders) are ignored",
        "sum: broadcast(dy from dst); max/min: broadcast of (y, dy) then even split among the "
        "extremum holders; prod: broadcast dy times the product of the other ranks' x",
        "broadcasts dout for every op (wrong for max/min/prod)"},
       detail::make_reduce},
      {{"gather_into_tensor",
        {"CollectiveGather"},
        {"dst", "group"},
        "x=[x] out=[y] dout=[dy] -> [dx]; non-dst dout ignored",
        "scatter_tensor(dy from dst)",
        "broadcasts all of dout and slices it (N times the traffic)"},
       detail::make_gather},
      {{"scatter_tensor",
        {"CollectiveScatter"},
        {"src", "group"},
        "x=[x] out=[y] dout=[dy] -> [dx]",
        "gather_into_tensor(dy, dst=src) on src; zeros on the other ranks",
        ""},
       detail::make_scatter},
      {{"all_to_all",
        {"AlltoAll"},
        {"split_dim", "concat_dim", "split_count", "group"},
        "x=[x] out=[y] dout=[dy] -> [dx]",
        "all_to_all(dy) with split_dim and concat_dim swapped",
        ""},
       detail::make_all_to_all},
      {{"all_to_all_v",
        {"AlltoAllV"},
        {"send_numel_list", "recv_numel_list", "group"},
        "x=[x] out=[y] dout=[dy] -> [dx]",
        "all_to_all_v(dy) with the send and recv lists swapped",
        ""},
       detail::make_all_to_all_v},
      {{"all_to_all_single_with_output_shape",
        {"all_to_all_single"},
        {"output_shape", "output_split_sizes", "input_split_sizes", "group"},
        "x=[x] out=[y] dout=[dy] -> [dx]",
        "all_to_all_single_with_output_shape(x.shape, dy) with the split lists swapped",
        ""},
       detail::make_all_to_all_single},
      {{"all_to_all_with_output_shape",
        {},
        {"output_shape_list", "group"},
        "x=[N inputs] out=[N outputs] dout=[N] -> [N]",
        "all_to_all_with_output_shape(shapes of the inputs, dout)",
        ""},
       detail::make_all_to_all_list},
      {{"all_to_all_v_c",
        {"AlltoAllVC"},
        {"send_count_matrix", "group"},
        "x=[input] or [input, prior output] out=[output] dout=[dy] -> dx per x",
        "all_to_all_v_c(dy) with the count matrix transposed; unsent rows get 0; the prior output "
        "gets dy with the overwritten rows zeroed",
        ""},
       detail::make_all_to_all_v_c},
      {{"send",
        {"Send", "isend"},
        {"dst", "tag", "group"},
        "x=[x] out/dout ignored -> [dx]",
        "recv of dx from dst on a gradient tag",
        ""},
       detail::make_send},
      {{"recv",
        {"Receive", "irecv"},
        {"src", "tag", "group"},
        "x=[template] or [] out=[y] dout=[dy] -> [0]",
        "send of dy to src on a gradient tag; the template gets zeros",
        ""},
       detail::make_recv},
      {{"batch_isend_irecv",
        {},
        {"ops", "peers", "tags", "group"},
        "x/out/dout: one per op (irecv: x is the template) -> one per op",
        "batch_isend_irecv with every op reversed on gradient tags",
        "no rule"},
       detail::make_batch_isend_irecv},
      {{"neighbor_exchange",
        {"NeighborExchange"},
        {"send_rank_ids", "recv_rank_ids", "recv_shapes", "send_shapes", "group"},
        "x=[sent] out=[received] dout=[one per received] -> [one per sent]",
        "neighbor_exchange(dout) with send/recv ranks and shapes swapped",
        ""},
       detail::make_neighbor_exchange},
      {{"neighbor_exchange_v2",
        {"NeighborExchangeV2"},
        {"send_rank_ids", "send_lens", "recv_rank_ids", "recv_lens", "data_format", "group"},
        "x=[x] out=[y] dout=[dy] -> [dx]",
        "centre of dy plus the halo cotangents each neighbour sends back, added into the edges "
        "that were sent (neighbor_exchange_v2_grad)",
        ""},
       detail::make_neighbor_exchange_v2},
      {{"mirror",
        {"_MirrorOperator"},
        {"group", "mean_flag", "dev_num"},
        "x=[x] out=[y] dout=[dy] (or [indices, values]) -> [dx]",
        "all_reduce(dy, sum), x1/dev_num when mean_flag; row-sparse: gathered with uneven sizes",
        "sparse path assumes equal nnz"},
       detail::make_mirror},
      {{"virtual_div",
        {"_VirtualDiv"},
        {"divisor"},
        "x=[...] dout=[...] -> dout/divisor each",
        "dout / divisor (a loss-scaling device, not a derivative); non-floating dout unchanged",
        ""},
       detail::make_virtual_div},
      {{"mirror_mini_step",
        {"_MirrorMiniStepOperator"},
        {"group", "mean_flag", "accumulation_steps"},
        "x=[x] out=[y] dout=[dy] -> [dx], called once per micro-batch",
        "adds dy locally; on every accumulation_steps-th call returns all_reduce(sum of dy) "
        "(x1/N when mean_flag), zeros on the other calls",
        "writes the gradient into an accumulation buffer as a side effect; drops row-sparse grads "
        "silently"},
       detail::make_mirror_mini_step},
      {{"mini_step_all_gather",
        {"_MiniStepAllGather"},
        {"group", "mean_flag", "accumulation_steps"},
        "x=[shard] out=[gathered] dout=[dy] -> [dx], called once per micro-batch",
        "adds dy locally; on every accumulation_steps-th call returns reduce_scatter(sum of dy) "
        "(x1/N when mean_flag), zeros on the other calls",
        "all_reduce then slice: twice the traffic of reduce_scatter"},
       detail::make_mini_step_all_gather},
      {{"barrier", {}, {"group"}, "nothing -> nothing", "no gradient", ""}, detail::make_barrier},
  };
  return table;
}

const Entry* find_entry(std::string_view name) {
  for (const Entry& e : entries()) {
    if (e.info.name == name) return &e;
    for (const auto& alias : e.info.aliases) {
      if (alias == name) return &e;
    }
  }
  return nullptr;
}

}  // namespace

TensorList Bprop::operator()(const TensorList& x, const TensorList& out,
                             const TensorList& dout) const {
  if (!fn_) throw RuntimeError("Bprop: empty rule (default-constructed)");
  return fn_(x, out, dout);
}

Tensor Bprop::operator()(const Tensor& x, const Tensor& out, const Tensor& dout) const {
  TensorList dx = (*this)(TensorList{x}, TensorList{out}, TensorList{dout});
  if (dx.size() != 1) {
    throw ValueError("Bprop of " + op_ + " returned " + std::to_string(dx.size()) +
                     " tensors; call it with lists");
  }
  return dx[0];
}

Bprop get_bprop(std::string_view op_name, const Attrs& attrs) {
  const Entry* e = find_entry(op_name);
  if (!e) {
    std::string names;
    for (const Entry& entry : entries()) names += (names.empty() ? "" : ", ") + entry.info.name;
    throw ValueError("get_bprop: no gradient rule for \"" + std::string(op_name) +
                     "\"; known ops: " + names);
  }
  detail::AttrReader reader(e->info.name, attrs, e->info.attrs);
  return Bprop(e->info.name, e->make(reader));
}

const std::vector<RuleInfo>& rule_table() {
  static const std::vector<RuleInfo> infos = [] {
    std::vector<RuleInfo> v;
    for (const Entry& e : entries()) v.push_back(e.info);
    return v;
  }();
  return infos;
}

}  // namespace collie::autograd
