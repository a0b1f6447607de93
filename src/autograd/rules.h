// The factories of the gradient rules; rule_table.cc lists them in one table.
//
// A factory reads an op's attributes (checked by AttrReader) and returns the rule as a
// closure. Rules run collectives, so everything that can be decided from the attributes
// alone is decided in the factory (a bad attribute fails at get_bprop, on every rank
// alike), and the closure only checks tensors.
#pragma once

#include "autograd/attrs.h"
#include "collie/autograd.h"

namespace collie::autograd::detail {

using RuleFactory = Bprop::Fn (*)(const AttrReader&);

// rules_reduction.cc
Bprop::Fn make_all_reduce(const AttrReader& a);
Bprop::Fn make_all_reduce_invariant(const AttrReader& a);
Bprop::Fn make_mirror(const AttrReader& a);
Bprop::Fn make_virtual_div(const AttrReader& a);
Bprop::Fn make_mirror_mini_step(const AttrReader& a);
Bprop::Fn make_mini_step_all_gather(const AttrReader& a);
Bprop::Fn make_barrier(const AttrReader& a);

// rules_gather.cc
Bprop::Fn make_all_gather(const AttrReader& a);
Bprop::Fn make_reduce_scatter(const AttrReader& a);
Bprop::Fn make_all_gather_v(const AttrReader& a);
Bprop::Fn make_reduce_scatter_v(const AttrReader& a);

// rules_rooted.cc
Bprop::Fn make_broadcast(const AttrReader& a);
Bprop::Fn make_reduce(const AttrReader& a);
Bprop::Fn make_gather(const AttrReader& a);
Bprop::Fn make_scatter(const AttrReader& a);

// rules_all_to_all.cc
Bprop::Fn make_all_to_all(const AttrReader& a);
Bprop::Fn make_all_to_all_v(const AttrReader& a);
Bprop::Fn make_all_to_all_single(const AttrReader& a);
Bprop::Fn make_all_to_all_list(const AttrReader& a);
Bprop::Fn make_all_to_all_v_c(const AttrReader& a);

// rules_p2p.cc
Bprop::Fn make_send(const AttrReader& a);
Bprop::Fn make_recv(const AttrReader& a);
Bprop::Fn make_batch_isend_irecv(const AttrReader& a);
Bprop::Fn make_neighbor_exchange(const AttrReader& a);
Bprop::Fn make_neighbor_exchange_v2(const AttrReader& a);

}  // namespace collie::autograd::detail
