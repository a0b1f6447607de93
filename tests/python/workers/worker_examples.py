"""Every docstring example of comm_func, checked against its expected output.

Runs each script of examples/python (they are the docstring examples, written for
collie) with its output captured per rank, and compares it with the docstring's
text. For 2 ranks the expected text is the docstring's literally; for other sizes
it is the docstring example's result generalised to N ranks. The examples written
for exactly 2 ranks (the all_to_all ones) get N-rank variants here instead.

Run: collie run -n N /usr/bin/python3 worker_examples.py <examples/python dir>   (N = 2 or 4)
"""

import contextlib
import io
import pathlib
import runpy
import sys

import numpy as np

import collie as comm
from collie import comm_func as cf

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from wutil import same  # noqa: E402

EXAMPLES = pathlib.Path(sys.argv[1]).resolve()
sys.path.insert(0, str(EXAMPLES))  # for the examples' `from example_util import ...`

# The docstrings' expected text for 2 ranks (MindSpore prints float tensors like numpy).
DOC_2S = "[[2. 2. 2. 2. 2. 2. 2. 2.]\n [2. 2. 2. 2. 2. 2. 2. 2.]]"
DOC_GATHERED_ONES = ("[[1. 1. 1. 1. 1. 1. 1. 1.]\n [1. 1. 1. 1. 1. 1. 1. 1.]\n"
                     " [1. 1. 1. 1. 1. 1. 1. 1.]\n [1. 1. 1. 1. 1. 1. 1. 1.]]")
DOC_REDUCE_SCATTER = ("[[2. 2. 2. 2. 2. 2. 2. 2.]\n [2. 2. 2. 2. 2. 2. 2. 2.]\n"
                      " [2. 2. 2. 2. 2. 2. 2. 2.]\n [2. 2. 2. 2. 2. 2. 2. 2.]]")
DOC_REDUCE_4 = {0: "Process with rank 0: [0.]",
                1: "Process with rank 1: [[4. 4. 4. 4. 4. 4. 4. 4.]\n [4. 4. 4. 4. 4. 4. 4. 4.]]",
                2: "Process with rank 2: [0.]",
                3: "Process with rank 3: [0.]"}
DOC_BATCH = {0: "rank 0:\n(0.0, 2.0)", 1: "rank 1:\n(0.0, 1.0)"}
DOC_SCATTER = {0: "# rank_0\n[[0. 1.]\n [2. 3.]]", 1: "# rank_1\n[[4. 5.]\n [6. 7.]]"}
DOC_GATHER = {0: "Process with rank 0: [[0. 1.]\n [2. 3.]\n [0. 1.]\n [2. 3.]]", 1: "Process with rank 1: [0.]"}
DOC_BROADCAST = "[[0. 1. 2. 3.]\n [4. 5. 6. 7.]]"
DOC_SEND_RECV = {0: "", 1: "rank1:\n[[0.01 0.01]\n [0.01 0.01]]"}
DOC_ALL_TO_ALL = {0: "rank 0:\n(1.0,\n [2. 2.])", 1: "rank 1:\n([[2. 3.]\n [4. 5.]],\n [4. 5. 6. 7.])"}
DOC_ALL_TO_ALL_SINGLE = {0: "rank 0:\n[0. 2.]", 1: "rank 1:\n[1. 3.]"}
DOC_ALL_TO_ALL_V_C = {0: "rank 0:\n[0. 1. 2.]", 1: "rank 1:\n[0. 0. 0.]"}
DOC_P2P_OP = ("send_op: P2POp(op='isend', shape=(), peer=1, group=None, tag=0)\n"
              "recv_op: P2POp(op='irecv', shape=(), peer=0, group=None, tag=0)\n"
              "recv_op (by shape): P2POp(op='irecv', shape=(), peer=0, group=None, tag=0) float32\n")


def block(text):
    return f"{text}\n" if text else ""


def expected_output(name, rank, n):
    """What `rank` prints when examples/python/<name>.py runs on n ranks."""
    f32 = np.float32
    if name in ("all_reduce", "comm_handle_wait"):
        return block(DOC_2S if n == 2 else str(np.full([2, 8], n, f32)))
    if name == "all_gather_into_tensor":
        return block(DOC_GATHERED_ONES if n == 2 else str(np.ones([2 * n, 8], f32)))
    if name == "reduce_scatter_tensor":
        return block(DOC_REDUCE_SCATTER if n == 2 else str(np.full([8 // n, 8], n, f32)))
    if name == "reduce":
        if n == 4:
            return block(DOC_REDUCE_4[rank])
        value = str(np.full([2, 8], n, f32)) if rank == 1 else "[0.]"
        return block(f"Process with rank {rank}: {value}")
    if name == "batch_isend_irecv":
        return block(DOC_BATCH[rank] if n == 2 else f"rank {rank}:\n(0.0, {float((rank - 1) % n + 1)})")
    if name == "scatter_tensor":
        if n == 2:
            return block(DOC_SCATTER[rank])
        part = np.arange(8).reshape([4, 2]).astype(f32)[rank * 4 // n:(rank + 1) * 4 // n]
        return block(f"# rank_{rank}\n{part}")
    if name == "gather_into_tensor":
        if n == 2:
            return block(DOC_GATHER[rank])
        value = np.tile(np.arange(4).reshape([2, 2]).astype(f32), (n, 1)) if rank == 0 else "[0.]"
        return block(f"Process with rank {rank}: {value}")
    if name == "broadcast":
        return block(DOC_BROADCAST)
    if name == "barrier":
        return "barrier finish!\n"
    if name in ("send_recv", "isend_irecv"):
        if n == 2:
            return block(DOC_SEND_RECV[rank])
        if rank < n / 2:
            return ""
        src = rank - n // 2
        return block(f"rank{rank}:\n{np.ones([2, 2]).astype(f32) * 0.01 * (src + 1)}")
    if name == "all_to_all_with_output_shape":
        return block(DOC_ALL_TO_ALL[rank])
    if name == "all_to_all_single_with_output_shape":
        return block(DOC_ALL_TO_ALL_SINGLE[rank])
    if name == "all_to_all_v_c":
        return block(DOC_ALL_TO_ALL_V_C[rank])
    if name == "p2p_op":
        return DOC_P2P_OP
    raise KeyError(name)


ANY_SIZE = ["all_reduce", "comm_handle_wait", "all_gather_into_tensor", "reduce_scatter_tensor", "reduce",
            "batch_isend_irecv", "scatter_tensor", "gather_into_tensor", "broadcast", "barrier", "send_recv",
            "isend_irecv", "p2p_op"]
TWO_RANKS_ONLY = ["all_to_all_with_output_shape", "all_to_all_single_with_output_shape", "all_to_all_v_c"]


def run_example(name):
    """Runs examples/python/<name>.py here (it calls init() and release() itself)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name="__main__")
    return out.getvalue()


def generalised_all_to_all(rank, n):
    """all_to_all_with_output_shape on n ranks: rank r sends rank j an (r+1, j+1) block."""
    send = [np.arange((rank + 1) * (j + 1), dtype=np.float32).reshape(rank + 1, j + 1) + 100 * rank
            for j in range(n)]
    shapes = [(i + 1, rank + 1) for i in range(n)]
    output, handle = cf.all_to_all_with_output_shape(shapes, send)
    assert handle is None and isinstance(output, tuple) and len(output) == n
    for i in range(n):
        same(output[i], np.arange((i + 1) * (rank + 1), dtype=np.float32).reshape(i + 1, rank + 1) + 100 * i,
             f"all_to_all_with_output_shape from {i}")


def generalised_all_to_all_single(rank, n):
    """The docstring example on n ranks: input arange(n) + n*rank, output_shape (n,)."""
    result, handle = cf.all_to_all_single_with_output_shape((n,), np.arange(n, dtype=np.float32) + n * rank)
    assert handle is None
    same(result, np.arange(n, dtype=np.float32) * n + rank, "all_to_all_single_with_output_shape")


def generalised_all_to_all_v_c(rank, n):
    """Rank i sends (i + 2j) % 3 rows to rank j; rows are tagged 1000*src + 100*dst + k."""
    m = [[(i + 2 * j) % 3 for j in range(n)] for i in range(n)]
    rows = [1000 * rank + 100 * j + k for j in range(n) for k in range(m[rank][j])]
    inp = np.array(rows, dtype=np.int64).reshape(-1, 1).repeat(2, axis=1)
    expect = [1000 * i + 100 * rank + k for i in range(n) for k in range(m[i][rank])]
    out = np.full((len(expect) + 1, 2), -1, dtype=np.int64)  # one spare row stays untouched
    handle = cf.all_to_all_v_c(out, inp, [c for row in m for c in row])
    assert handle is None
    same(out[:len(expect)], np.array(expect, dtype=np.int64).reshape(-1, 1).repeat(2, axis=1), "all_to_all_v_c")
    same(out[len(expect):], np.full((1, 2), -1, dtype=np.int64), "all_to_all_v_c spare row")


def main():
    size = int(comm.get_group_size())  # from the environment, before init
    names = ANY_SIZE + (TWO_RANKS_ONLY if size == 2 else [])
    for name in names:
        text = run_example(name)
        rank = comm.get_rank()  # after release(): from the environment again
        expect = expected_output(name, rank, size)
        assert text == expect, f"example {name} on rank {rank} of {size} printed\n{text!r}\nexpected\n{expect!r}"
        if rank == 0:
            print(f"ok example {name}", flush=True)
    comm.init()
    rank = comm.get_rank()
    for check in (generalised_all_to_all, generalised_all_to_all_single, generalised_all_to_all_v_c):
        check(rank, size)
        cf.barrier()
        if rank == 0:
            print(f"ok {check.__name__}", flush=True)
    comm.release()
    print(f"WORKER OK rank {rank} of {size}", flush=True)


if __name__ == "__main__":
    main()
