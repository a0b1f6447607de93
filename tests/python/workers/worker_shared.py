"""Shared arrays (collie.empty_shared): every collective on arrays in the shared arena,
large enough for the single-copy path, with exact expected values on every rank."""

import numpy as np

import collie as comm
from collie import comm_func as cf
from wutil import raises, run_sections, same

COUNT = 50001  # odd, and above the 16 KiB single-copy threshold for every dtype below


def shared_like(values):
    x = comm.empty_shared(values.shape, values.dtype)
    assert comm.is_shared(x), "empty_shared must give a shared array"
    assert x.flags.c_contiguous and x.flags.writeable
    x[...] = values
    return x


def collectives_section(rank, size):
    idx = np.arange(COUNT)
    for dtype in (np.float32, np.float64, np.int32, np.int64, np.float16, np.uint8):
        x = shared_like(((idx + rank) % 7).astype(dtype))
        y, h = cf.all_reduce(x)
        assert h is None
        assert comm.is_shared(y), "the result of a call on shared arrays is shared"
        same(y, sum((idx + r) % 7 for r in range(size)).astype(dtype), f"all_reduce {np.dtype(dtype)}")
        same(x, ((idx + rank) % 7).astype(dtype), "the input is not modified")

        y, h = cf.all_reduce(x, comm.ReduceOp.MAX, async_op=True)
        h.wait()
        same(y, np.max([(idx + r) % 7 for r in range(size)], axis=0).astype(dtype), "async all_reduce max")

        g, _ = cf.all_gather_into_tensor(x.reshape(1, COUNT))
        same(g, np.stack([((idx + r) % 7).astype(dtype) for r in range(size)]), "all_gather")

        b = cf.broadcast(x, size - 1)
        same(b, ((idx + size - 1) % 7).astype(dtype), "broadcast")

        rs_in = shared_like(np.tile(((idx + rank) % 7).astype(dtype), size).reshape(size, COUNT))
        rs, _ = cf.reduce_scatter_tensor(rs_in)
        same(rs, sum((idx + r) % 7 for r in range(size)).astype(dtype).reshape(1, COUNT), "reduce_scatter")

        red = cf.reduce(x, 0)
        if rank == 0:
            same(red, sum((idx + r) % 7 for r in range(size)).astype(dtype), "reduce")


def all_to_all_section(rank, size):
    rows = 4000
    x = shared_like(np.full((size * rows, 2), rank, np.int64) * 100 + np.arange(size).repeat(rows)[:, None])
    y, _ = cf.all_to_all_single_with_output_shape((size * rows, 2), x)
    assert comm.is_shared(y)
    expected = np.arange(size).repeat(rows)[:, None] * 100 + rank
    same(y, np.broadcast_to(expected, (size * rows, 2)).astype(np.int64), "all_to_all_single")


def p2p_section(rank, size):
    """Sends of shared arrays of 8 KiB or more are read by the receiver from the sender's arena."""
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    for count in (3, 5000, 300001):  # streamed, pulled, pulled and beyond the 1 MiB ring
        x = shared_like(np.arange(count, dtype=np.float32) + 1000 * rank)
        out, h = cf.irecv(np.empty(count, np.float32), prv)
        cf.send(x, nxt)
        h.wait()
        same(out, np.arange(count, dtype=np.float32) + 1000 * prv, f"send/irecv of {count}")
        res = cf.batch_isend_irecv([cf.P2POp("irecv", (count - 1,), prv, recv_dtype=np.float32),
                                    cf.P2POp("isend", x[1:], nxt)])  # a view one element in
        same(res[0], np.arange(1, count, dtype=np.float32) + 1000 * prv, f"batch of a view of {count}")
        same(x, np.arange(count, dtype=np.float32) + 1000 * rank, "the sent array is not modified")


def arena_section(rank, size):
    same(comm.empty_shared(3, np.int16).shape, np.zeros(3).shape, "int shape")
    same(comm.empty_shared([2, 0], np.float32).shape, np.zeros([2, 0]).shape, "empty shape")
    assert not comm.is_shared(np.ones(4)), "ordinary arrays are not shared"
    assert not comm.is_shared("not an array")
    raises(ValueError, comm.empty_shared, [2, -1])
    a = comm.empty_shared([1000])
    assert comm.is_shared(a[10:20]), "a contiguous slice of a shared array is shared"


if __name__ == "__main__":
    run_sections([collectives_section, all_to_all_section, p2p_section, arena_section])
