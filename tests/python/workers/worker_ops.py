"""Every comm_func operation on N ranks: dtypes, placeholders, views, async handles, sub-groups, p2p, GIL.

Each section checks exact results (small integers in every dtype, so even float16
sums are exact), that inputs are never modified and that results are new arrays.

Run: collie run -n N /usr/bin/python3 worker_ops.py      (N >= 2; the suite uses 3 and 4)
"""

import gc
import pathlib
import sys
import threading
import time

import numpy as np

import collie as comm
from collie import comm_func as cf

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from wutil import NUMPY_DTYPES, is_new_array, raises, run_sections, same  # noqa: E402

REDUCERS = {
    "sum": lambda s: np.sum(s, axis=0) if s.dtype != np.bool_ else np.any(s, axis=0),
    "prod": lambda s: np.prod(s, axis=0) if s.dtype != np.bool_ else np.all(s, axis=0),
    "max": lambda s: np.max(s, axis=0),
    "min": lambda s: np.min(s, axis=0),
}


def data(rank, shape, dtype, offset=0):
    """Rank-specific small values, exactly representable in every dtype (products too)."""
    n = int(np.prod(shape))
    if dtype == np.bool_:
        return ((np.arange(n) + rank + offset) % 3 != 0).reshape(shape)
    return ((np.arange(n) + rank + offset) % 3 + (rank % 2)).astype(dtype).reshape(shape)


def stack(size, shape, dtype, offset=0):
    return np.stack([data(r, shape, dtype, offset) for r in range(size)])


def reduced(size, shape, dtype, op, offset=0):
    return REDUCERS[op](stack(size, shape, dtype, offset)).astype(dtype)


def dtypes_section(rank, size):
    """All numpy dtypes through every collective; exact values, dtype kept, inputs intact."""
    shape = (2 * size, 3)
    for dtype in NUMPY_DTYPES:
        x = data(rank, shape, dtype)
        x.flags.writeable = False  # read-only inputs are fine (and would catch writes)
        keep = x.copy()
        for op in ("sum", "prod", "max", "min"):
            out, handle = cf.all_reduce(x, op)
            assert handle is None
            same(out, reduced(size, shape, dtype, op), f"all_reduce {op} {dtype.__name__}")
            is_new_array(out, x)
            out, _ = cf.reduce_scatter_tensor(x, op)
            same(out, reduced(size, shape, dtype, op)[rank * 2:(rank + 1) * 2], f"reduce_scatter {op} {dtype.__name__}")
            out = cf.reduce(x, size - 1, op)
            if rank == size - 1:
                same(out, reduced(size, shape, dtype, op), f"reduce {op} {dtype.__name__}")
            else:
                same(out, np.zeros([1], dtype), f"reduce non-root {dtype.__name__}")
        out, _ = cf.all_gather_into_tensor(x)
        same(out, stack(size, shape, dtype).reshape(-1, 3), f"all_gather {dtype.__name__}")
        out = cf.gather_into_tensor(x, dst=1)
        expect = stack(size, shape, dtype).reshape(-1, 3) if rank == 1 else np.zeros([1], dtype)
        same(out, expect, f"gather_into_tensor {dtype.__name__}")
        out = cf.broadcast(x, src=size - 1)
        same(out, data(size - 1, shape, dtype), f"broadcast {dtype.__name__}")
        out = cf.scatter_tensor(x, src=1)
        same(out, data(1, shape, dtype)[rank * 2:(rank + 1) * 2], f"scatter_tensor {dtype.__name__}")
        # p2p ring: send to next, receive from previous
        nxt, prv = (rank + 1) % size, (rank - 1) % size
        recv_out, h = cf.irecv(np.empty(shape, dtype), prv)
        cf.send(x, nxt)
        h.wait()
        same(recv_out, data(prv, shape, dtype), f"send/irecv {dtype.__name__}")
        res = cf.batch_isend_irecv([cf.P2POp("irecv", shape, prv, recv_dtype=dtype),
                                    cf.P2POp("isend", x, nxt)])
        same(res[0], data(prv, shape, dtype), f"batch irecv by shape {dtype.__name__}")
        same(res[1], np.array(0.0, np.float32), "batch isend placeholder")
        out, _ = cf.all_to_all_single_with_output_shape(shape, x)
        expect = np.concatenate([data(i, shape, dtype)[rank * 2:(rank + 1) * 2] for i in range(size)])
        same(out, expect, f"all_to_all_single {dtype.__name__}")
        same(x, keep, f"input unchanged {dtype.__name__}")


def placeholders_section(rank, size):
    """A non-root's placeholder array is a zero of its own, though collie hands the
    one nobody holds any more out again: written to and dropped, it comes back
    zeroed; held, it is neither handed out again nor zeroed."""
    x = data(rank, (2,), np.float64)
    for round_ in range(3):
        r = cf.reduce(x, 0)
        g = cf.gather_into_tensor(x, dst=0)
        if rank == 0:
            continue
        same(r, np.zeros([1], np.float64), f"reduce placeholder round {round_}")
        same(g, np.zeros([1], np.float64), f"gather placeholder round {round_}")
        assert not np.shares_memory(r, g), "two held placeholders share memory"
        r[0] = 5.0  # written to, then dropped below
        g[0] = 6.0
        del r, g
        gc.collect()
    held = cf.reduce(x, 0)
    if rank != 0:
        held[0] = 7.0
    later = cf.gather_into_tensor(x, dst=0)
    if rank != 0:
        assert not np.shares_memory(held, later), "a held placeholder was handed out again"
        same(later, np.zeros([1], np.float64), "placeholder after a held one")
        same(held, np.array([7.0]), "a held placeholder was zeroed")


def bfloat16_section(rank, size):
    """bfloat16 enters through DLPack (collie.Tensor here) and comes back as bfloat16."""
    base = np.arange(8, dtype=np.float32) + rank
    x = comm.Tensor(base).astype("bfloat16")
    assert x.dtype == "bfloat16"
    out, _ = cf.all_reduce(x)
    result_dtype = getattr(out, "dtype", None)
    assert str(result_dtype) == "bfloat16", result_dtype
    same(np.asarray(comm.Tensor(out).astype("float32")), sum(np.arange(8, dtype=np.float32) + r for r in range(size)),
         "bfloat16 all_reduce")
    gathered, _ = cf.all_gather_into_tensor(x)
    same(np.asarray(comm.Tensor(gathered).astype("float32")),
         np.concatenate([np.arange(8, dtype=np.float32) + r for r in range(size)]), "bfloat16 all_gather")
    same(np.asarray(x), base, "bfloat16 input unchanged")


def views_section(rank, size):
    """Non-contiguous inputs: slices, transposes, negative and zero strides, Fortran order."""
    def base(r):
        return np.arange(4 * size * 6, dtype=np.float64).reshape(4 * size, 6) + 1000 * r

    views = {
        "rows step 2": lambda b: b[::2],
        "columns step 2": lambda b: b[:, 1::2],
        "transpose": lambda b: b[:2 * size].T,
        "negative strides": lambda b: b[::-1, ::-1],
        "zero strides": lambda b: np.broadcast_to(b[0], (2 * size, 6)),
        "fortran": lambda b: np.asfortranarray(b[:2 * size]),
        "offset slice": lambda b: b[size:, 2:5],
        "transposed negative": lambda b: b[:, :2 * size].T[::-1],
    }
    big = base(rank)
    for name, view in views.items():
        v = view(big)
        assert name in ("fortran",) or not v.flags.c_contiguous, name
        before = np.array(v, copy=True)
        refs = [np.ascontiguousarray(view(base(r))) for r in range(size)]
        out, _ = cf.all_reduce(v)
        same(out, sum(refs), f"all_reduce {name}")
        out, _ = cf.all_gather_into_tensor(v)
        same(out, np.concatenate(refs), f"all_gather {name}")
        out = cf.broadcast(v, src=0)
        same(out, refs[0], f"broadcast {name}")
        if v.shape[0] % size == 0:
            out, _ = cf.reduce_scatter_tensor(v)
            rows = v.shape[0] // size
            same(out, sum(refs)[rank * rows:(rank + 1) * rows], f"reduce_scatter {name}")
            out = cf.scatter_tensor(v, src=1)
            same(out, refs[1][rank * rows:(rank + 1) * rows], f"scatter {name}")
        out = cf.gather_into_tensor(v, dst=0)
        if rank == 0:
            same(out, np.concatenate(refs), f"gather {name}")
        nxt, prv = (rank + 1) % size, (rank - 1) % size
        h = cf.isend(v, nxt, tag=7)
        got = cf.recv(v, prv, tag=7)
        h.wait()
        same(got, refs[prv], f"isend/recv {name}")
        same(v, before, f"view {name} unchanged")
    same(big, base(rank), "base unchanged")


def async_section(rank, size):
    """async_op=True: handles, several in flight, waits in any order, inputs dropped early."""
    x = np.full([1 << 16], rank + 1, dtype=np.float32)
    out, h = cf.all_reduce(x, async_op=True)
    assert isinstance(h, cf.CommHandle), type(h)
    h.wait()
    h.wait()  # again: returns at once
    assert h.is_completed()
    same(out, np.full([1 << 16], size * (size + 1) // 2, np.float32), "async all_reduce")

    # several in flight on one group; waited in reverse order
    pending = []
    for i in range(5):
        y = np.full([1000 + i], rank + i, dtype=np.int32)
        pending.append((i, *cf.all_reduce(y, "max", async_op=True)))
        del y  # the operation keeps its input alive
    g, gh = cf.all_gather_into_tensor(np.array([rank], np.int16), async_op=True)
    rs, rh = cf.reduce_scatter_tensor(np.ones([size, 2], np.float64), async_op=True)
    a2a, ah = cf.all_to_all_with_output_shape([(1,)] * size, [np.array([rank * 10 + j], np.int64) for j in range(size)],
                                              async_op=True)
    single, sh = cf.all_to_all_single_with_output_shape((size,), np.arange(size, dtype=np.uint8) + rank,
                                                        async_op=True)
    gc.collect()
    ah.wait()
    sh.wait()
    rh.wait()
    gh.wait()
    for i, o, handle in reversed(pending):
        handle.wait()
        same(o, np.full([1000 + i], size - 1 + i, np.int32), f"in-flight all_reduce {i}")
    same(g, np.arange(size, dtype=np.int16), "async all_gather")
    same(rs, np.full([1, 2], size, np.float64), "async reduce_scatter")
    for j in range(size):
        same(a2a[j], np.array([j * 10 + rank], np.int64), "async all_to_all")
    same(single, np.array([rank + i for i in range(size)], np.uint8), "async all_to_all_single")

    # all_to_all_v_c async: output written in place after wait
    out = np.zeros([size], np.float32)
    handle = cf.all_to_all_v_c(out, np.full([size], rank, np.float32), [1] * (size * size), async_op=True)
    assert isinstance(handle, cf.CommHandle)
    handle.wait()
    same(out, np.arange(size, dtype=np.float32), "async all_to_all_v_c")
    assert cf.all_to_all_v_c(out, np.full([size], rank, np.float32), [1] * (size * size)) is None

    # isend/irecv in both directions, handles waited in the "wrong" order
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    r_out, r_h = cf.irecv(np.zeros([3], np.int64), prv, tag=3)
    s_h = cf.isend(np.arange(3, dtype=np.int64) + rank, nxt, tag=3)
    r_h.wait()
    s_h.wait()
    same(r_out, np.arange(3, dtype=np.int64) + prv, "isend/irecv")
    # wait_for: complete handles report True
    assert r_h.wait_for(0.0) is True


def groups_section(rank, size):
    """Sub-groups with unsorted rank lists: one world<->group map for every op and query."""
    a, b = members = [size - 1, 1] if size > 2 else [1, 0]  # unsorted: group rank 0 is world rank a
    comm.create_group("unsorted", members)  # every rank calls it; non-members only record it
    comm.create_group("unsorted", members)  # same again: a no-op
    assert comm.get_process_group_ranks("unsorted") == members
    assert comm.get_world_rank_from_group_rank("unsorted", 0) == a
    assert comm.get_group_rank_from_world_rank(b, "unsorted") == 1
    assert comm.get_group_size("unsorted") == 2
    if rank in members:
        me = members.index(rank)
        assert comm.get_rank("unsorted") == me
        x = np.array([rank, rank], np.int32)
        g, _ = cf.all_gather_into_tensor(x, group="unsorted")
        same(g, np.array([a, a, b, b], np.int32), "group all_gather order")
        r = cf.reduce(x, b, group="unsorted")
        same(r, np.array([a + b, a + b], np.int32) if rank == b else np.zeros([1], np.int32), "group reduce dst=b")
        bc = cf.broadcast(x, src=a, group="unsorted")
        same(bc, np.array([a, a], np.int32), "group broadcast")
        s = cf.scatter_tensor(np.arange(4, dtype=np.float32) + rank, src=a, group="unsorted")
        same(s, np.arange(4, dtype=np.float32)[me * 2:me * 2 + 2] + a, "group scatter")
        gi = cf.gather_into_tensor(np.array([rank], np.uint8), dst=b, group="unsorted")
        same(gi, np.array([a, b], np.uint8) if rank == b else np.zeros([1], np.uint8), "group gather")
        rs, _ = cf.reduce_scatter_tensor(np.arange(2, dtype=np.float32), group="unsorted")
        same(rs, np.array([2.0 * me], np.float32), "group reduce_scatter")
        single, _ = cf.all_to_all_single_with_output_shape((2,), np.array([10 * rank, 10 * rank + 1]), group="unsorted")
        same(single, np.array([10 * a + me, 10 * b + me]), "group all_to_all_single")
        peer = members[1 - me]
        if me == 0:
            cf.send(np.array([rank], np.float32), peer, group="unsorted")
            got = cf.recv(np.zeros([1], np.float32), peer, group="unsorted")
        else:
            got = cf.recv(np.zeros([1], np.float32), peer, group="unsorted")
            cf.send(np.array([rank], np.float32), peer, group="unsorted")
        same(got, np.array([peer], np.float32), "group send/recv by world rank")
        res = cf.batch_isend_irecv([cf.P2POp("isend", np.array([rank]), peer, "unsorted"),
                                    cf.P2POp("irecv", np.zeros([1], np.int64), peer, "unsorted")])
        same(res[1], np.array([peer]), "group batch")
        cf.barrier("unsorted")
        # a world rank outside the group
        if size > 2:
            raises(RuntimeError, cf.reduce, x, 0, group="unsorted")
            raises(KeyError, cf.send, x, 0, group="unsorted")
            raises(RuntimeError, cf.batch_isend_irecv, [cf.P2POp("isend", x, 0, "unsorted")])
    else:
        raises(RuntimeError, comm.get_rank, "unsorted")
        raises(RuntimeError, cf.all_reduce, np.ones([1]), group="unsorted")
        raises(RuntimeError, cf.barrier, "unsorted")
    raises(ValueError, comm.create_group, "unsorted", sorted(members))  # same name, other ranks
    cf.barrier()
    comm.destroy_group("unsorted")
    raises(ValueError, comm.destroy_group, "unsorted")
    raises(KeyError, cf.send, np.ones([1]), b, group="unsorted")  # p2p: group not found -> KeyError
    # re-created after destruction, now sorted
    comm.create_group("unsorted", sorted(members))
    if rank in members:
        g, _ = cf.all_gather_into_tensor(np.array([rank]), group="unsorted")
        same(g, np.array(sorted(members)), "recreated group")
    cf.barrier()
    comm.destroy_group("unsorted")
    # a group with only this rank
    comm.create_group(f"solo{rank}", [rank])
    out, _ = cf.all_reduce(np.array([rank + 1.0]), group=f"solo{rank}")
    same(out, np.array([rank + 1.0]), "single-rank group")
    comm.destroy_group(f"solo{rank}")
    # the world under all its names
    for world in ("hccl_world_group", "nccl_world_group", "mccl_world_group", "collie_world_group",
                  comm.GlobalComm.WORLD_COMM_GROUP):
        assert comm.get_rank(world) == rank and comm.get_group_size(world) == size
        out, _ = cf.all_reduce(np.array([1]), group=world)
        same(out, np.array([size]), f"world as {world}")
    assert comm.get_local_rank() == rank and comm.get_local_rank_size() == size
    assert comm.get_process_group_ranks() == list(range(size))


def p2p_section(rank, size):
    """Tags pick messages; self-sends; any order in batch_isend_irecv."""
    if rank == 0:
        cf.send(np.array([1.0]), 1, tag=1)
        cf.send(np.array([2.0]), 1, tag=2)
    elif rank == 1:
        second = cf.recv(np.zeros([1]), 0, tag=2)  # tag 2 first: tags select, not arrival order
        first = cf.recv(np.zeros([1]), 0, tag=1)
        same(first, np.array([1.0]), "tag 1")
        same(second, np.array([2.0]), "tag 2")
    # self-send paired with an irecv
    out, h = cf.irecv(np.zeros([2], np.int16), rank, tag=5)
    cf.isend(np.array([rank, -rank], np.int16), rank, tag=5).wait()
    h.wait()
    same(out, np.array([rank, -rank], np.int16), "self send")
    # a batch with receives first, larger than any internal ring chunk
    big = np.arange(1 << 20, dtype=np.float32) + rank
    ops = [cf.P2POp(cf.irecv, (1 << 20,), (rank - 1) % size, recv_dtype=comm.float32),
           cf.P2POp(cf.irecv, np.zeros([3], np.int8), (rank + 1) % size, tag=9),
           cf.P2POp(cf.isend, np.array([rank] * 3, np.int8), (rank - 1) % size, tag=9),
           cf.P2POp(cf.isend, big, (rank + 1) % size)]
    res = cf.batch_isend_irecv(ops)
    assert isinstance(res, tuple) and len(res) == 4
    same(res[0], np.arange(1 << 20, dtype=np.float32) + (rank - 1) % size, "batch big")
    same(res[1], np.array([(rank + 1) % size] * 3, np.int8), "batch tagged")


def gil_section(rank, size):
    """Blocking calls and CommHandle.wait release the GIL: a Python thread keeps running."""
    counter = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            counter[0] += 1

    if rank == 0:
        thread = threading.Thread(target=spin)
        thread.start()
        time.sleep(0.05)
        before = counter[0]
        cf.barrier()  # rank 1 enters it late
        during_barrier = counter[0] - before
        before = counter[0]
        out, h = cf.irecv(np.zeros([1]), 1)
        h.wait()  # rank 1 sends late
        during_wait = counter[0] - before
        stop.set()
        thread.join()
        same(out, np.array([1.0]), "late message")
        assert during_barrier > 0, "barrier held the GIL"
        assert during_wait > 0, "CommHandle.wait held the GIL"
    else:
        if rank == 1:
            time.sleep(0.3)
        cf.barrier()
        if rank == 1:
            time.sleep(0.3)
            cf.send(np.array([1.0]), 0)


def errors_section(rank, size):
    """Error conditions that need a real group (raised before any communication)."""
    x = np.ones([size + 1, 2], np.float32)
    raises(ValueError, cf.reduce_scatter_tensor, x)  # rows not divisible by N
    raises(ValueError, cf.scatter_tensor, x)
    raises(ValueError, cf.all_to_all_single_with_output_shape, (size, 2), x)  # input rows
    raises(ValueError, cf.all_to_all_single_with_output_shape, (size + 1, 2), np.ones([size, 2]))  # output rows
    raises(ValueError, cf.all_to_all_single_with_output_shape, (size, 2), np.ones([size, 2]), [1] * size, [1])
    raises(TypeError, cf.all_to_all_with_output_shape, [(1,)], [np.ones([1])])  # one entry, N ranks
    raises(TypeError, cf.all_to_all_with_output_shape, [(1,)] * size,
           [np.ones([1], np.float32)] + [np.ones([1], np.float64)] * (size - 1), match="dtype must be the same")
    raises(TypeError, cf.all_to_all_v_c, np.zeros([2]), np.zeros([2]), [1, 1, 1])
    raises(ValueError, cf.all_to_all_v_c, np.zeros([size, 2]), np.zeros([size, 3]), [1] * size * size)
    raises(ValueError, cf.all_to_all_v_c, np.zeros([1]), np.zeros([size]), [1] * size * size)  # output too short
    ro = np.zeros([size])
    ro.flags.writeable = False
    raises(ValueError, cf.all_to_all_v_c, ro, np.zeros([size]), [1] * size * size)
    raises(ValueError, cf.all_to_all_v_c, np.zeros([size, 2])[:, 0], np.zeros([size]), [1] * size * size)
    raises(RuntimeError, cf.reduce, x, size + 3)  # dst outside the world
    raises(RuntimeError, cf.broadcast, x, size)
    raises(KeyError, cf.send, x, size + 1)  # p2p: dst not in the world
    raises(KeyError, cf.irecv, x, -1)
    raises(RuntimeError, cf.batch_isend_irecv, [cf.P2POp("isend", x, size)])
    raises(comm.CreateGroupError, comm.create_group, "too_big", [0, size])
    raises(RuntimeError, comm.get_world_rank_from_group_rank, comm.GlobalComm.WORLD_COMM_GROUP, size)
    raises(RuntimeError, comm.get_group_rank_from_world_rank, size, comm.GlobalComm.WORLD_COMM_GROUP)


if __name__ == "__main__":
    run_sections([dtypes_section, placeholders_section, bfloat16_section, views_section, async_section,
                  groups_section, p2p_section, gil_section, errors_section])
