"""Multi-rank checks of collie.autograd.get_bprop (run by test_autograd.py with 2 and 4 ranks).

Every rank derives every group rank's data from a seed (case, group rank), so each rank
knows the whole world's inputs and cotangents and can compute the exact adjoint in
numpy (a single-process reference, independent of collie). For each linear op, on the
world, the world reversed, an unsorted sub-group and a pair (4 ranks):

* the forward output of comm_func against the reference;
* the dot-product test sum_r <(A x)_r, dy_r> == sum_r <x_r, (A^T dy)_r> in float64
  (local inner products summed over the group with all_reduce);
* the rule's dx against the reference adjoint, element by element;
* where the C++ rule is one collective (all_reduce, reduce_scatter, all_gather, reduce,
  broadcast, scatter, gather, all_to_all_v), dx bitwise equal to that collective run
  from Python — the same numbers as the C++ rule computes.

Nonlinear rules with exact expected values: all_reduce/reduce prod at zeros (finite,
no division) and max/min with ties (the cotangent split evenly among tied ranks).
float16/bfloat16 through the rules. Roots are world ranks != 0 where possible.
"""

import pathlib
import sys
import zlib

import numpy as np

import collie as comm
from collie import autograd as ag
from collie import comm_func as cf

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from wutil import run_sections, same  # noqa: E402

P2POp = cf.P2POp


class Group:
    """One group as this rank sees it: name, members (world ranks), size k, own index."""

    def __init__(self, name, members, rank):
        self.name = name
        self.members = list(members)
        self.k = len(self.members)
        self.me = self.members.index(rank) if rank in self.members else None
        self.root_index = self.k - 1             # roots: the last member (world rank != 0 where possible)
        self.root = self.members[self.root_index]

    def __repr__(self):
        return f"{self.name}{self.members}"


GROUPS = []


def make_groups(rank, size):
    GROUPS.append(Group("hccl_world_group", range(size), rank))
    specs = [("ag_rev", list(reversed(range(size))))]
    if size >= 4:
        specs += [("ag_unsorted", [2, 0, 3]), ("ag_pair", [3, 1])]
    for name, members in specs:
        comm.create_group(name, members)  # every rank calls it; non-members only record it
        GROUPS.append(Group(name, members, rank))


def member_groups():
    return [g for g in GROUPS if g.me is not None]


def rand(case, i, shape, part=0):
    seed = zlib.crc32(f"{case}/{i}/{part}".encode())
    return np.random.default_rng(seed).standard_normal(shape)


def rand_ints(case, i, shape, low, high):
    seed = zlib.crc32(f"{case}/{i}/ints".encode())
    return np.random.default_rng(seed).integers(low, high, shape).astype(np.float64)


def close(actual, expected, what):
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert np.allclose(actual, expected, rtol=1e-12, atol=1e-12), f"{what}:\n{actual}\n!=\n{expected}"


def dot(a, b):
    return float(np.vdot(np.asarray(a, np.float64), np.asarray(b, np.float64)))


def adjoint(g, what, lhs, rhs):
    """sum over the group of <A x, dy> (lhs) and of <x, A^T dy> (rhs) agree."""
    tot, _ = cf.all_reduce(np.array([lhs, rhs]), group=g.name)
    left, right = tot
    assert abs(left - right) <= 1e-12 * (1 + abs(left) + abs(right)), f"{what} on {g}: {left} != {right}"


# ---------------------------------------------------------------- reductions and gathers


def all_reduce_sum(rank, size):
    for g in member_groups():
        k, me, what = g.k, g.me, f"all_reduce(sum) on {g}"
        x = [rand("ar", i, (3, 4)) for i in range(k)]
        dy = [rand("ar/dy", i, (3, 4)) for i in range(k)]
        y, _ = cf.all_reduce(x[me], group=g.name)
        close(y, sum(x), what + " forward")
        dx = ag.get_bprop("all_reduce", op="sum", group=g.name)(x[me], y, dy[me])
        close(dx, sum(dy), what)
        same(dx, cf.all_reduce(dy[me], group=g.name)[0], what + " = C++ all_reduce(dy)")
        adjoint(g, what, dot(y, dy[me]), dot(x[me], dx))
        # the list form and MindSpore's name give the same numbers
        same(ag.get_bprop("AllReduce", group=g.name)([x[me]], [y], [dy[me]])[0], dx, what + " list form")
        # mirror: the same all_reduce, divided by the group size with mean_flag
        dm = ag.get_bprop("_MirrorOperator", group=g.name, mean_flag=True)(x[me], y, dy[me])
        close(dm, sum(dy) / k, f"mirror(mean) on {g}")


def all_gather_reduce_scatter(rank, size):
    for g in member_groups():
        k, me = g.k, g.me
        # all_gather: its adjoint is reduce_scatter(sum)
        what = f"all_gather on {g}"
        x = [rand("ag", i, (2, 3)) for i in range(k)]
        dy = [rand("ag/dy", i, (2 * k, 3)) for i in range(k)]
        y, _ = cf.all_gather_into_tensor(x[me], group=g.name)
        close(y, np.concatenate(x), what + " forward")
        dx = ag.get_bprop("all_gather_into_tensor", group=g.name)(x[me], y, dy[me])
        expected = sum(d[2 * me:2 * me + 2] for d in dy)
        close(dx, expected, what)
        same(dx, cf.reduce_scatter_tensor(dy[me], group=g.name)[0], what + " = C++ reduce_scatter(dy)")
        adjoint(g, what, dot(y, dy[me]), dot(x[me], dx))
        dmean = ag.get_bprop("AllGather", group=g.name, mean_flag=True)(x[me], y, dy[me])
        close(dmean, expected / k, what + " mean_flag")

        # reduce_scatter(sum): its adjoint is all_gather
        what = f"reduce_scatter on {g}"
        x = [rand("rs", i, (2 * k, 3)) for i in range(k)]
        dy = [rand("rs/dy", i, (2, 3)) for i in range(k)]
        y, _ = cf.reduce_scatter_tensor(x[me], group=g.name)
        close(y, sum(xi[2 * me:2 * me + 2] for xi in x), what + " forward")
        dx = ag.get_bprop("ReduceScatter", op="sum", group=g.name)(x[me], y, dy[me])
        close(dx, np.concatenate(dy), what)
        same(dx, cf.all_gather_into_tensor(dy[me], group=g.name)[0], what + " = C++ all_gather(dy)")
        adjoint(g, what, dot(y, dy[me]), dot(x[me], dx))


def uneven_gathers(rank, size):
    """all_gather_v <-> reduce_scatter_v with uneven rows (some ranks contribute none)."""
    for g in member_groups():
        k, me = g.k, g.me
        rows = [(2 * i + 1) % 3 for i in range(k)]   # 1, 0, 2, 1
        off = np.concatenate([[0], np.cumsum(rows)]).astype(int)
        total = int(off[-1])
        what = f"all_gather_v on {g}"
        x = [rand("agv", i, (rows[i], 2)) for i in range(k)]
        dy = [rand("agv/dy", i, (total, 2)) for i in range(k)]
        y = np.concatenate(x)                             # the forward, from the reference
        expected = sum(d[off[me]:off[me + 1]] for d in dy)
        for attrs in ({}, {"rows_per_rank": rows}):
            dx = ag.get_bprop("all_gather_v", group=g.name, **attrs)(x[me], y, dy[me])
            close(dx, expected, f"{what} {attrs}")
        adjoint(g, what, dot(y, dy[me]), dot(x[me], dx))

        what = f"reduce_scatter_v on {g}"
        x = [rand("rsv", i, (total, 2)) for i in range(k)]
        dy = [rand("rsv/dy", i, (rows[i], 2)) for i in range(k)]
        y = sum(xi[off[me]:off[me + 1]] for xi in x)
        dx = ag.get_bprop("reduce_scatter_v", group=g.name, rows_per_rank=rows)(x[me], y, dy[me])
        close(dx, np.concatenate(dy), what)
        adjoint(g, what, dot(y, dy[me]), dot(x[me], dx))


# ---------------------------------------------------------------- rooted ops


def rooted(rank, size):
    for g in member_groups():
        k, me, root, ri = g.k, g.me, g.root, g.root_index
        is_root = me == ri
        placeholder = np.array([0.5])  # comm_func's non-root output; its cotangent is ignored

        # broadcast -> reduce-sum of dy to the root, zeros elsewhere
        what = f"broadcast(src={root}) on {g}"
        x = [rand("bc", i, (3, 2)) for i in range(k)]
        dy = [rand("bc/dy", i, (3, 2)) for i in range(k)]
        y = cf.broadcast(x[me], src=root, group=g.name)
        close(y, x[ri], what + " forward")
        dx = ag.get_bprop("broadcast", src=root, group=g.name)(x[me], y, dy[me])
        reduced = cf.reduce(dy[me], root, group=g.name)
        if is_root:
            close(dx, sum(dy), what)
            same(dx, reduced, what + " = C++ reduce(dy)")
        else:
            same(dx, np.zeros((3, 2)), what + " (non-root)")
        adjoint(g, what, dot(y, dy[me]), dot(x[me], dx))

        # reduce(sum) -> broadcast of the root's dy
        what = f"reduce(dst={root}) on {g}"
        x = [rand("rd", i, (3, 2)) for i in range(k)]
        dy_root = rand("rd/dy", ri, (3, 2))
        y = cf.reduce(x[me], root, group=g.name)
        dy = dy_root if is_root else placeholder
        if is_root:
            close(y, sum(x), what + " forward")
        dx = ag.get_bprop("Reduce", dst=root, op="sum", group=g.name)(x[me], y, dy)
        close(dx, dy_root, what)
        same(dx, cf.broadcast(dy_root if is_root else np.zeros((3, 2)), src=root, group=g.name),
             what + " = C++ broadcast(dy)")
        adjoint(g, what, dot(y, dy) if is_root else 0.0, dot(x[me], dx))

        # gather -> scatter of the root's dy
        what = f"gather(dst={root}) on {g}"
        x = [rand("ga", i, (2, 3)) for i in range(k)]
        dy_root = rand("ga/dy", ri, (2 * k, 3))
        y = cf.gather_into_tensor(x[me], dst=root, group=g.name)
        dy = dy_root if is_root else placeholder
        if is_root:
            close(y, np.concatenate(x), what + " forward")
        dx = ag.get_bprop("CollectiveGather", dst=root, group=g.name)(x[me], y, dy)
        close(dx, dy_root[2 * me:2 * me + 2], what)
        same(dx, cf.scatter_tensor(dy_root if is_root else np.zeros((2 * k, 3)), src=root, group=g.name),
             what + " = C++ scatter(dy)")
        adjoint(g, what, dot(y, dy) if is_root else 0.0, dot(x[me], dx))

        # scatter -> gather of dy to the root, zeros elsewhere
        what = f"scatter(src={root}) on {g}"
        x = [rand("sc", i, (2 * k, 3)) for i in range(k)]  # only the root's is read
        dy = [rand("sc/dy", i, (2, 3)) for i in range(k)]
        y = cf.scatter_tensor(x[me], src=root, group=g.name)
        close(y, x[ri][2 * me:2 * me + 2], what + " forward")
        dx = ag.get_bprop("scatter_tensor", src=root, group=g.name)(x[me], y, dy[me])
        gathered = cf.gather_into_tensor(dy[me], dst=root, group=g.name)
        if is_root:
            close(dx, np.concatenate(dy), what)
            same(dx, gathered, what + " = C++ gather(dy)")
        else:
            same(dx, np.zeros((2 * k, 3)), what + " (non-root)")
        adjoint(g, what, dot(y, dy[me]), dot(x[me], dx))


# ---------------------------------------------------------------- all-to-alls


def all_to_alls(rank, size):
    for g in member_groups():
        k, me = g.k, g.me

        # all_to_all_v, flat, uneven counts with zeros: counts[i][j] elements from i to j
        what = f"all_to_all_v on {g}"
        counts = [[(3 * i + 5 * j + 1) % 4 for j in range(k)] for i in range(k)]
        send = counts[me]
        recv = [counts[i][me] for i in range(k)]
        x = [rand("a2av", i, (sum(counts[i]),)) for i in range(k)]
        dy = [rand("a2av/dy", j, (sum(counts[i][j] for i in range(k)),)) for j in range(k)]

        def piece(t, row_counts, idx):
            start = sum(row_counts[:idx])
            return t[start:start + row_counts[idx]]

        y, _ = cf.all_to_all_single_with_output_shape((sum(recv),), x[me], output_split_sizes=recv,
                                                      input_split_sizes=send, group=g.name)
        close(y, np.concatenate([piece(x[i], counts[i], me) for i in range(k)]), what + " forward")
        dx = ag.get_bprop("AlltoAllV", send_numel_list=send, recv_numel_list=recv, group=g.name)(x[me], y, dy[me])
        col = [[counts[i][j] for i in range(k)] for j in range(k)]  # col[j][i]: what j got from i
        close(dx, np.concatenate([piece(dy[j], col[j], me) for j in range(k)]), what)
        back, _ = cf.all_to_all_single_with_output_shape(x[me].shape, dy[me], output_split_sizes=send,
                                                         input_split_sizes=recv, group=g.name)
        same(dx, back, what + " = C++ all_to_all_v(dy) with the lists swapped")
        adjoint(g, what, dot(y, dy[me]), dot(x[me], dx))

        # all_to_all_single_with_output_shape, uneven rows of a 2-D tensor
        what = f"all_to_all_single on {g}"
        rows = [[(i + 2 * j) % 3 for j in range(k)] for i in range(k)]
        send = rows[me]
        recv = [rows[i][me] for i in range(k)]
        x = [rand("a2as", i, (sum(rows[i]), 2)) for i in range(k)]
        dy = [rand("a2as/dy", j, (sum(rows[i][j] for i in range(k)), 2)) for j in range(k)]
        y, _ = cf.all_to_all_single_with_output_shape((sum(recv), 2), x[me], output_split_sizes=recv,
                                                      input_split_sizes=send, group=g.name)
        dx = ag.get_bprop("all_to_all_single_with_output_shape", output_shape=list(y.shape),
                          output_split_sizes=recv, input_split_sizes=send, group=g.name)(x[me], y, dy[me])
        col = [[rows[i][j] for i in range(k)] for j in range(k)]
        close(dx, np.concatenate([piece(dy[j], col[j], me) for j in range(k)]), what)
        adjoint(g, what, dot(y, dy[me]), dot(x[me], dx))

        # all_to_all_with_output_shape: lists of tensors (list form of the rule)
        what = f"all_to_all_with_output_shape on {g}"
        x = [[rand("a2al", i, (i + j + 1, 2), part=j) for j in range(k)] for i in range(k)]
        dy = [[rand("a2al/dy", j, (i + j + 1, 2), part=i) for i in range(k)] for j in range(k)]
        shapes = [(i + me + 1, 2) for i in range(k)]
        y, _ = cf.all_to_all_with_output_shape(shapes, x[me], group=g.name)
        y = list(y)
        for i in range(k):
            close(y[i], x[i][me], what + " forward")
        dx = ag.get_bprop("all_to_all_with_output_shape", output_shape_list=shapes, group=g.name)(x[me], y, dy[me])
        assert isinstance(dx, list) and len(dx) == k, what
        for j in range(k):
            close(dx[j], dy[j][me], f"{what} [{j}]")
        adjoint(g, what, sum(dot(a, b) for a, b in zip(y, dy[me])), sum(dot(a, b) for a, b in zip(x[me], dx)))

        # all_to_all(split_dim=1, concat_dim=0): backward swaps the dims
        what = f"all_to_all(split 1, concat 0) on {g}"
        x = [rand("a2a", i, (2, 2 * k)) for i in range(k)]
        dy = [rand("a2a/dy", i, (2 * k, 2)) for i in range(k)]
        parts, _ = cf.all_to_all_with_output_shape([(2, 2)] * k, [x[me][:, 2 * j:2 * j + 2] for j in range(k)],
                                                   group=g.name)
        y = np.concatenate(parts, axis=0)
        close(y, np.concatenate([x[i][:, 2 * me:2 * me + 2] for i in range(k)], axis=0), what + " forward")
        dx = ag.get_bprop("AlltoAll", split_dim=1, concat_dim=0, split_count=k, group=g.name)(x[me], y, dy[me])
        close(dx, np.concatenate([dy[j][2 * me:2 * me + 2] for j in range(k)], axis=1), what)
        adjoint(g, what, dot(y, dy[me]), dot(x[me], dx))


# ---------------------------------------------------------------- point to point


def point_to_point(rank, size):
    for g in member_groups():
        k, me = g.k, g.me
        if k < 2:
            continue
        nxt, prv = g.members[(me + 1) % k], g.members[(me - 1) % k]

        # batch_isend_irecv around the ring: every edge reversed
        what = f"batch_isend_irecv ring on {g}"
        x = [rand("ring", i, (2, 3)) for i in range(k)]
        dy = [rand("ring/dy", i, (2, 3)) for i in range(k)]
        template = np.zeros((2, 3))
        token, y = cf.batch_isend_irecv([P2POp("isend", x[me], nxt, group=g.name, tag=3),
                                         P2POp("irecv", template, prv, group=g.name, tag=3)])
        close(y, x[(me - 1) % k], what + " forward")
        dx = ag.get_bprop("batch_isend_irecv", ops=["isend", "irecv"], peers=[nxt, prv], tags=(3, 3),
                          group=g.name)([x[me], template], [token, y], [np.zeros(()), dy[me]])
        close(dx[0], dy[(me + 1) % k], what + " (isend's x)")
        same(dx[1], np.zeros((2, 3)), what + " (irecv's template)")
        adjoint(g, what, dot(y, dy[me]), dot(x[me], dx[0]))

        # send / recv between the first two members
        what = f"send/recv on {g}"
        sender, receiver = g.members[0], g.members[1]
        x = rand("sr", 0, (4,))
        dy = rand("sr/dy", 1, (4,))
        lhs = rhs = 0.0
        if rank == sender:
            cf.send(x, receiver, group=g.name, tag=4)
            dx = ag.get_bprop("Send", dst=receiver, tag=4, group=g.name)(x, None, None)
            close(dx, dy, what + " (send's dx)")
            rhs = dot(x, dx)
        elif rank == receiver:
            y = cf.recv(np.zeros(4), sender, group=g.name, tag=4)
            close(y, x, what + " forward")
            dx = ag.get_bprop("recv", src=sender, tag=4, group=g.name)(np.zeros(4), y, dy)
            same(dx, np.zeros(4), what + " (recv's template)")
            lhs = dot(y, dy)
        adjoint(g, what, lhs, rhs)

        # neighbor_exchange: to the next member (and to the previous with 3+), other shapes
        what = f"neighbor_exchange on {g}"
        both = k > 2
        send_ids = [nxt] + ([prv] if both else [])
        recv_ids = [prv] + ([nxt] if both else [])
        send_shapes = [(2, 3), (1, 4)][:len(send_ids)]
        recv_shapes = send_shapes  # from prv what it sent to its next; from nxt what it sent to its prev
        x = [[rand("ne", i, s, part=p) for p, s in enumerate(send_shapes)] for i in range(k)]
        dy = [[rand("ne/dy", i, s, part=p) for p, s in enumerate(recv_shapes)] for i in range(k)]
        ops = [P2POp("isend", x[me][p], peer, group=g.name, tag=11 + p) for p, peer in enumerate(send_ids)]
        ops += [P2POp("irecv", np.zeros(s), peer, group=g.name, tag=11 + p)
                for p, (peer, s) in enumerate(zip(recv_ids, recv_shapes))]
        y = list(cf.batch_isend_irecv(ops)[len(send_ids):])
        close(y[0], x[(me - 1) % k][0], what + " forward")
        dx = ag.get_bprop("NeighborExchange", send_rank_ids=send_ids, recv_rank_ids=recv_ids,
                          recv_shapes=recv_shapes, send_shapes=send_shapes, group=g.name)(x[me], y, dy[me])
        assert isinstance(dx, list) and len(dx) == len(send_ids), what
        close(dx[0], dy[(me + 1) % k][0], what + " (to next)")
        if both:
            close(y[1], x[(me + 1) % k][1], what + " forward (from next)")
            close(dx[1], dy[(me - 1) % k][1], what + " (to prev)")
        adjoint(g, what, sum(dot(a, b) for a, b in zip(y, dy[me])), sum(dot(a, b) for a, b in zip(x[me], dx)))


# ---------------------------------------------------------------- nonlinear, exact values


def prod_at_zeros(rank, size):
    for g in member_groups():
        k, me, root, ri = g.k, g.me, g.root, g.root_index
        what = f"all_reduce(prod) at zeros on {g}"
        x = [rand_ints("prod", i, (6,), 1, 4) * np.where(np.arange(6) % 2, -1.0, 1.0) for i in range(k)]
        x[0][0] = 0.0                       # one zero
        x[0][1] = x[k - 1][1] = 0.0         # two zeros (one when k == 1)
        for xi in x:
            xi[2] = 0.0                     # a zero on every rank
        dy = [rand_ints("prod/dy", i, (6,), -3, 4) for i in range(k)]
        y, _ = cf.all_reduce(x[me], op="prod", group=g.name)
        same(y, np.prod(x, axis=0), what + " forward")
        others = np.prod([x[j] for j in range(k) if j != me], axis=0) if k > 1 else np.ones(6)
        dx = ag.get_bprop("all_reduce", op="prod", group=g.name)(x[me], y, dy[me])
        assert np.isfinite(dx).all(), f"{what}: {dx}"
        same(dx, sum(dy) * others, what)

        what = f"reduce(prod, dst={root}) at zeros on {g}"
        y = cf.reduce(x[me], root, op="prod", group=g.name)
        is_root = me == ri
        dx = ag.get_bprop("reduce", dst=root, op="prod", group=g.name)(
            x[me], y, dy[me] if is_root else np.array([0.0]))
        assert np.isfinite(dx).all(), f"{what}: {dx}"
        same(dx, dy[ri] * others, what)


def max_min_ties(rank, size):
    for g in member_groups():
        k, me, root, ri = g.k, g.me, g.root, g.root_index
        is_root = me == ri
        for op, pick in (("max", np.max), ("min", np.min)):
            what = f"all_reduce({op}) with ties on {g}"
            x = [rand_ints(op, i, (8,), 0, 3) for i in range(k)]  # values 0..2: many ties
            for xi in x:
                xi[0] = 1.0                                           # all ranks tie
            x[k - 1][1] = 10.0 if op == "max" else -10.0              # one extremum holder
            dy = [rand_ints(op + "/dy", i, (8,), -5, 6) for i in range(k)]
            y, _ = cf.all_reduce(x[me], op=op, group=g.name)
            ext = pick(x, axis=0)
            same(y, ext, what + " forward")
            count = sum((xi == ext).astype(np.float64) for xi in x)
            expected = np.where(x[me] == ext, sum(dy) / count, 0.0)
            dx = ag.get_bprop("all_reduce", op=op, group=g.name)(x[me], y, dy[me])
            same(dx, expected, what)
            # mass is conserved: the tied ranks' shares add up to the summed cotangent
            total, _ = cf.all_reduce(dx, group=g.name)
            close(total, sum(dy), what + " (shares add up)")

            what = f"reduce({op}, dst={root}) with ties on {g}"
            y = cf.reduce(x[me], root, op=op, group=g.name)
            dx = ag.get_bprop("reduce", dst=root, op=op, group=g.name)(
                x[me], y if is_root else np.array([0.0]), dy[me] if is_root else np.array([0.0]))
            same(dx, np.where(x[me] == ext, dy[ri] / count, 0.0), what)


# ---------------------------------------------------------------- dtypes and accumulation


def half_precision_and_mini_step(rank, size):
    for g in member_groups():
        k, me = g.k, g.me
        for dtype in (np.float16, np.float32):
            what = f"all_reduce(sum) {dtype.__name__} on {g}"
            x = rand("h", me, (5,)).astype(dtype)
            dy = rand("h/dy", me, (5,)).astype(dtype)
            y, _ = cf.all_reduce(x, group=g.name)
            dx = ag.get_bprop("all_reduce", group=g.name)(x, y, dy)
            same(dx, cf.all_reduce(dy, group=g.name)[0], what)
            dx = ag.get_bprop("all_gather", group=g.name)(x, None, np.tile(dy, k))
            same(dx, cf.reduce_scatter_tensor(np.tile(dy, k), group=g.name)[0], what + " all_gather")
        what = f"all_reduce(sum) bfloat16 on {g}"
        dyb = comm.Tensor(rand("b/dy", me, (5,)), dtype=comm.bfloat16)
        dx = ag.get_bprop("all_reduce", group=g.name)(dyb, dyb, dyb)
        ref, _ = cf.all_reduce(dyb, group=g.name)
        assert str(dx.dtype) == "bfloat16", what
        same(np.asarray(dx, dtype=np.float32), np.asarray(ref, dtype=np.float32), what)

        # gradient accumulation: k micro-batches add locally, one all_reduce at the end
        what = f"mirror_mini_step on {g}"
        b = ag.get_bprop("_MirrorMiniStepOperator", accumulation_steps=3, group=g.name)
        dys = [[rand("ms", i, (4,), part=s) for i in range(k)] for s in range(3)]
        outs = [b(None, None, dys[s][me]) for s in range(3)]
        same(outs[0], np.zeros(4), what + " step 1")
        same(outs[1], np.zeros(4), what + " step 2")
        close(outs[2], sum(sum(step) for step in dys), what + " step 3")


def main():
    rank, size = comm.get_rank(), comm.get_group_size()
    make_groups(rank, size)
    run_sections([all_reduce_sum, all_gather_reduce_scatter, uneven_gathers, rooted, all_to_alls, point_to_point,
                  prod_at_zeros, max_min_ties, half_precision_and_mini_step])


if __name__ == "__main__":
    comm.init()
    main()
