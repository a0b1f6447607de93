"""collie.autograd: the C++ gradient rules from Python.

In-process (a world of one): every op of rule_table() and every alias is callable with
sensible attributes and gives the expected cotangent; the attribute conversion (types,
empty lists, numpy scalars) and its TypeErrors; the mapping of C++ errors (ValueError,
TypeError, RuntimeError); the single-tensor and list call forms; dtypes (float16,
bfloat16, float32); views; results that never alias inputs; the GIL released while a
rule blocks. Multi-rank (2 and 4 ranks, one launch each): workers/worker_autograd.py
runs the adjoint tests, exact values at zeros and ties, sub-groups and the comparison
with the collectives the C++ rules call.
"""

import threading
import weakref

import numpy as np
import pytest

import collie
from collie import autograd as ag
from conftest import WORKERS


@pytest.fixture
def world():
    if not collie.GlobalComm.INITED:
        collie.init()
    yield
    assert collie.GlobalComm.INITED


def data(shape=(4, 3), offset=1.0, dtype=np.float64):
    return (np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) + offset).astype(dtype)


X = data()                 # a forward input
DY = data(offset=10.0)     # a cotangent of X's shape


def same(actual, expected, what=""):
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert np.array_equal(actual, expected), f"{what}:\n{actual}\n!=\n{expected}"


def dense_rows(indices, values, rows):
    out = np.zeros((rows,) + values.shape[1:], values.dtype)
    np.add.at(out, indices.astype(np.int64), values)
    return out


# ---------------------------------------------------------------- every rule, world of one
#
# name -> list of (attrs, call(bprop) -> result, expected). In a world of one every
# adjoint is the identity up to reshapes, so the expected values are closed-form.

def _mini_step(name):
    def call(b):
        first = b(X, X, DY)
        same(first, np.zeros_like(DY), f"{name}: first micro-batch")
        return b(X, X, 2 * DY)

    return call


def _send_recv_pair(b_send):
    """send's rule receives dx from dst (here: this rank); recv's rule sends it."""
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("dx", b_send(X, None, None)))
    t.start()
    back = ag.get_bprop("recv", src=0, tag=5)(X, DY, DY)
    same(back, np.zeros_like(X), "recv's template gets zeros")
    t.join(30)
    assert not t.is_alive(), "send's rule did not receive"
    return result["dx"]


def _recv_send_pair(b_recv):
    """recv's rule sends dy to src (this rank) in a thread; send's rule receives it."""
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("dx", b_recv(X, DY, DY)))
    t.start()
    same(ag.get_bprop("send", dst=0, tag=7)(X, None, None), DY, "send's rule receives recv's dy")
    t.join(30)
    assert not t.is_alive(), "recv's rule did not finish"
    return result["dx"]


def _halo_world_of_one(b):
    x = data((1, 2, 3, 4))
    dy = data((1, 2, 3, 4), offset=5.0)
    return b(x, x, dy)


PRIOR = data((6, 3), offset=-20.0)
DY6 = data((6, 3), offset=30.0)
DPRIOR = DY6.copy()
DPRIOR[:4] = 0
SPARSE_I = np.array([3, 0, 3], dtype=np.int64)
SPARSE_V = data((3, 3), offset=7.0)
V2 = (1, 2, 3, 4)

CASES = {
    "all_reduce": [
        ({}, lambda b: b(X, X, DY), DY),
        ({"op": "sum", "group": "hccl_world_group"}, lambda b: b(X, X, DY), DY),
        ({"op": "prod"}, lambda b: b(X, X, DY), DY),
        ({"op": "max"}, lambda b: b(X, X, DY), DY),
        ({"op": collie.ReduceOp.MIN}, lambda b: b(X, X, DY), DY),
        # a row-sparse cotangent [indices, values]: the rows of every rank, duplicates summed
        ({}, lambda b: dense_rows(*b([X], [X], [SPARSE_I, SPARSE_V]), 4), dense_rows(SPARSE_I, SPARSE_V, 4)),
    ],
    "all_reduce_invariant": [({}, lambda b: b(X, X, DY), DY)],
    "all_gather_into_tensor": [({"mean_flag": True}, lambda b: b(X, X, DY), DY), ({}, lambda b: b(X, X, DY), DY)],
    "reduce_scatter_tensor": [({"op": "sum"}, lambda b: b(X, X, DY), DY)],
    "all_gather_v": [({}, lambda b: b(X, X, DY), DY), ({"rows_per_rank": [4]}, lambda b: b(X, X, DY), DY)],
    "reduce_scatter_v": [({"rows_per_rank": (4,)}, lambda b: b(X, X, DY), DY)],
    "broadcast": [({"src": 0}, lambda b: b(X, X, DY), DY)],
    "reduce": [({"dst": 0, "op": op}, lambda b: b(X, X, DY), DY) for op in ("sum", "prod", "max", "min")],
    "gather_into_tensor": [({"dst": 0}, lambda b: b(X, X, DY), DY)],
    "scatter_tensor": [({"src": 0}, lambda b: b(X, X, DY), DY)],
    "all_to_all": [({"split_dim": 0, "concat_dim": 1, "split_count": 1}, lambda b: b(X, X, DY), DY)],
    "all_to_all_v": [({"send_numel_list": [12], "recv_numel_list": [12]}, lambda b: b(X, DY.ravel(), DY.ravel()), DY)],
    "all_to_all_single_with_output_shape": [
        ({"output_shape": [4, 3], "output_split_sizes": [4], "input_split_sizes": [4]}, lambda b: b(X, X, DY), DY),
        ({}, lambda b: b(X, X, DY), DY),
    ],
    "all_to_all_with_output_shape": [
        ({"output_shape_list": [(4, 3)]}, lambda b: b([X], [X], [DY]), [DY]),
        ({"output_shape_list": []}, lambda b: b([X], [X], [DY]), [DY]),
    ],
    "all_to_all_v_c": [
        ({"send_count_matrix": [4]}, lambda b: b([X, PRIOR], [DY6], [DY6]), [DY6[:4], DPRIOR]),
        ({"send_count_matrix": [4]}, lambda b: b(X, DY6[:4], DY6[:4]), DY6[:4]),
    ],
    "send": [({"dst": 0, "tag": 5}, _send_recv_pair, DY)],
    "recv": [({"src": 0, "tag": 7}, _recv_send_pair, np.zeros_like(X))],
    "batch_isend_irecv": [
        ({"ops": ["isend", "irecv"], "peers": [0, 0], "tags": [1, 1]},
         lambda b: b([X, X], [np.zeros(()), X], [np.zeros(()), DY]), [DY, np.zeros_like(X)]),
        ({"ops": [], "peers": []}, lambda b: b([], [], []), []),
    ],
    "neighbor_exchange": [
        ({"send_rank_ids": [0], "recv_rank_ids": [0], "recv_shapes": [(4, 3)]}, lambda b: b([X], [X], [DY]), [DY]),
        ({"send_rank_ids": [], "recv_rank_ids": [], "recv_shapes": [], "send_shapes": []},
         lambda b: b([], [], []), []),
    ],
    "neighbor_exchange_v2": [
        ({"send_rank_ids": [-1] * 8, "recv_rank_ids": [-1] * 8, "send_lens": [0] * 4, "recv_lens": [0] * 4,
          "data_format": "NCHW"}, _halo_world_of_one, data((1, 2, 3, 4), offset=5.0)),
    ],
    "mirror": [
        ({}, lambda b: b(X, X, DY), DY),
        ({"mean_flag": True, "dev_num": 4}, lambda b: b(X, X, DY), DY / 4),
        ({}, lambda b: dense_rows(*b([X], [X], [SPARSE_I, SPARSE_V]), 4), dense_rows(SPARSE_I, SPARSE_V, 4)),
    ],
    "virtual_div": [
        ({"divisor": 4.0}, lambda b: b(X, X, DY), DY / 4),
        ({"divisor": 2}, lambda b: b([X, X], [X, X], [DY, np.arange(3)]), [DY / 2, np.arange(3)]),
    ],
    "mirror_mini_step": [({"accumulation_steps": 2, "mean_flag": True}, _mini_step("mirror_mini_step"), 3 * DY)],
    "mini_step_all_gather": [({"accumulation_steps": 2}, _mini_step("mini_step_all_gather"), 3 * DY)],
    "barrier": [({"group": "hccl_world_group"}, lambda b: b([], [], []), [])],
}


def test_every_rule_has_a_case():
    names = [row["name"] for row in ag.rule_table()]
    assert sorted(names) == sorted(CASES), set(names) ^ set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_rule_in_a_world_of_one(world, name):
    for attrs, call, expected in CASES[name]:
        b = ag.get_bprop(name, **attrs)
        assert isinstance(b, ag.Bprop) and b.op == name
        got = call(b)
        what = f"{name}({attrs})"
        if isinstance(expected, list):
            assert isinstance(got, list), f"{what}: list form returned {type(got)}"
            assert len(got) == len(expected), what
            for g, e in zip(got, expected):
                same(g, e, what)
        else:
            same(got, expected, what)


def test_recv_without_template(world):
    """recv's x may be empty (no template): the list form returns no tensors."""
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("dx", ag.get_bprop("send", dst=0, tag=6)([X], [], [])))
    t.start()
    assert ag.get_bprop("recv", src=0, tag=6)([], [X], [DY]) == []
    t.join(30)
    same(result["dx"][0], DY, "send's rule")


def test_aliases_resolve_to_the_same_rule():
    table = ag.rule_table()
    for row in table:
        attrs = CASES[row["name"]][0][0]
        for alias in row["aliases"]:
            assert ag.get_bprop(alias, **attrs).op == row["name"], alias
    for ms_name in ("AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "CollectiveGather",
                    "CollectiveScatter", "AlltoAll", "AlltoAllV", "Send", "Receive", "NeighborExchange",
                    "NeighborExchangeV2", "_MirrorOperator", "_VirtualDiv", "_MirrorMiniStepOperator",
                    "_MiniStepAllGather"):
        assert any(ms_name in row["aliases"] for row in table), ms_name


def test_rule_table_rows():
    table = ag.rule_table()
    assert table is not ag.rule_table()  # a new list each call
    assert table[0]["name"] == "all_reduce"
    for row in table:
        assert set(row) == {"name", "aliases", "attrs", "lists", "backward", "vs_mindspore"}
        assert isinstance(row["aliases"], list) and isinstance(row["attrs"], list)
        assert all(isinstance(v, str) for v in (row["name"], row["lists"], row["backward"], row["vs_mindspore"]))
        assert row["backward"]
    by_name = {row["name"]: row for row in table}
    assert "group" in by_name["all_reduce"]["attrs"] and "op" in by_name["all_reduce"]["attrs"]
    assert "identity" in by_name["broadcast"]["vs_mindspore"]


# ---------------------------------------------------------------- attributes


def test_attribute_types_are_converted():
    # numpy scalars as their Python kinds; tuples as lists; nested tuples/lists as shapes
    assert ag.get_bprop("broadcast", src=np.int64(0), group="hccl_world_group").op == "broadcast"
    assert ag.get_bprop("virtual_div", divisor=np.float32(2.5)).op == "virtual_div"
    assert ag.get_bprop("virtual_div", divisor=3).op == "virtual_div"  # int where a float is expected
    assert ag.get_bprop("mirror", mean_flag=np.bool_(True)).op == "mirror"
    assert ag.get_bprop("all_to_all_v", send_numel_list=(np.int32(1), 2), recv_numel_list=[3]).op == "all_to_all_v"
    assert ag.get_bprop("all_to_all_with_output_shape", output_shape_list=[[2, 3], (4,), ()]).op
    assert ag.get_bprop("batch_isend_irecv", ops=("isend",), peers=[0]).op == "batch_isend_irecv"
    # empty lists fit whatever list type the rule asks for
    assert ag.get_bprop("neighbor_exchange", send_rank_ids=[], recv_rank_ids=(), recv_shapes=[], send_shapes=[]).op
    assert ag.get_bprop("batch_isend_irecv", ops=[], peers=[], tags=[]).op == "batch_isend_irecv"
    assert ag.get_bprop("all_to_all_single_with_output_shape", output_shape=[], output_split_sizes=[]).op


class Opaque:
    pass


@pytest.mark.parametrize("value", [None, {"a": 1}, Opaque(), {1, 2}, 1j, b"sum", np.array([1, 2]),
                                   [1, "a"], [True, False], [1, 2.5], [(1, 2), 3], [(1, "a")], [[1.5]],
                                   [None], 2 ** 70, [2 ** 64]],
                         ids=lambda v: type(v).__name__ + (repr(v) if isinstance(v, (list, int)) else ""))
def test_unsupported_attribute_values_are_type_errors(value):
    with pytest.raises(TypeError, match="attribute 'send_numel_list'"):
        ag.get_bprop("all_to_all_v", send_numel_list=value, recv_numel_list=[1])


def test_op_name_must_be_a_string():
    with pytest.raises(TypeError, match="op_name must be a str"):
        ag.get_bprop(b"all_reduce")
    with pytest.raises(TypeError):
        ag.get_bprop(None)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: ag.get_bprop("AllReduceX"), ValueError, "known ops: all_reduce"),
    (lambda: ag.get_bprop("broadcast", root=1), ValueError, "unknown attribute 'root'; accepted: src, group"),
    (lambda: ag.get_bprop("broadcast", src="1"), ValueError, "attribute 'src' must be an integer"),
    (lambda: ag.get_bprop("broadcast", src=1.0), ValueError, "attribute 'src' must be an integer"),
    (lambda: ag.get_bprop("mirror", mean_flag=1), ValueError, "attribute 'mean_flag' must be a bool"),
    (lambda: ag.get_bprop("reduce"), ValueError, "attribute 'dst' is required"),
    (lambda: ag.get_bprop("all_to_all_v", send_numel_list=["a"], recv_numel_list=[1]), ValueError,
     "must be a list of integers"),
    (lambda: ag.get_bprop("all_to_all_with_output_shape", output_shape_list=[1, 2]), ValueError,
     "must be a list of shapes"),
    (lambda: ag.get_bprop("batch_isend_irecv", ops=[], peers=[0]), ValueError, "the same length"),
    (lambda: ag.get_bprop("batch_isend_irecv", ops=["send"], peers=[0]), ValueError, "\"isend\" or \"irecv\""),
    (lambda: ag.get_bprop("virtual_div", divisor=0.0), ValueError, "divisor must not be 0"),
    (lambda: ag.get_bprop("send", tag=2 ** 29), ValueError, "tag must be in"),
    (lambda: ag.get_bprop("neighbor_exchange_v2", send_rank_ids=[-1] * 8, recv_rank_ids=[-1] * 8,
                          send_lens=[0] * 4, recv_lens=[0] * 4, data_format="NHWC"), ValueError, "NCHW"),
    (lambda: ag.get_bprop("all_reduce", op="avg"), TypeError, "avg"),
    (lambda: ag.get_bprop("reduce_scatter_tensor", op="max"), RuntimeError, "op=sum only"),
    (lambda: ag.get_bprop("ReduceScatter", op="prod"), RuntimeError, "op=sum only"),
    (lambda: ag.get_bprop("reduce_scatter", op="min"), RuntimeError, "op=sum only"),
])
def test_lookup_errors_map_to_python_classes(call, exc, match):
    with pytest.raises(exc, match=match) as info:
        call()
    assert type(info.value) is exc or issubclass(type(info.value), exc)


# ---------------------------------------------------------------- calls


def test_call_forms_and_errors(world):
    b = ag.get_bprop("all_reduce")
    assert isinstance(b(X, X, DY), np.ndarray)                       # single-tensor form
    assert isinstance(b([X], [X], [DY]), list)                       # list form
    assert isinstance(b((X,), X, DY), list)                          # any tuple/list -> list form
    same(b(None, None, DY), DY, "None counts as no tensor")
    same(b(X, X, DY), b([X], [X], [DY])[0], "both forms")
    with pytest.raises(TypeError, match="x must be a tensor"):
        b(1.0, X, DY)
    with pytest.raises(TypeError, match=r"dout\[1\] must be a tensor"):
        b([X], [X], [DY, "a"])
    with pytest.raises(TypeError, match="not differentiable for dtype int64"):
        b(X, X, np.arange(3))
    with pytest.raises(ValueError, match="expected one tensor in dout, got 3"):
        b([X], [X], [DY, DY, DY])
    with pytest.raises(ValueError, match="returned 0 tensors; call it with lists"):
        ag.get_bprop("barrier")(X, X, DY)                            # C++'s single form refuses too
    with pytest.raises(ValueError, match="has shape"):
        ag.get_bprop("all_reduce", op="prod")(X, X, DY[:2])
    with pytest.raises(TypeError):
        b(X, X)                                                      # all three are required
    assert "all_reduce" in repr(b)


def test_dtypes(world):
    for dtype in (np.float16, np.float32, np.float64):
        x, dy = X.astype(dtype), DY.astype(dtype)
        for attrs in ({}, {"op": "prod"}, {"op": "max"}):
            same(ag.get_bprop("all_reduce", **attrs)(x, x, dy), dy, f"{dtype.__name__} {attrs}")
        same(ag.get_bprop("virtual_div", divisor=4)(x, x, dy), (dy.astype(np.float32) / 4).astype(dtype))
        same(ag.get_bprop("all_gather", mean_flag=True)(x, x, dy), dy)
    # bfloat16 through collie.Tensor (and back as ml_dtypes arrays or collie.Tensor)
    xb = collie.Tensor(X, dtype=collie.bfloat16)
    dyb = collie.Tensor(DY, dtype=collie.bfloat16)
    for attrs in ({}, {"op": "prod"}, {"op": "min"}):
        got = ag.get_bprop("all_reduce", **attrs)(xb, xb, dyb)
        assert (got.dtype == "bfloat16") or (str(got.dtype) == "bfloat16"), got.dtype
        same(np.asarray(got, dtype=np.float32), np.asarray(dyb, dtype=np.float32), f"bfloat16 {attrs}")


def test_views_give_the_results_of_contiguous_copies(world):
    big = data((8, 6), offset=3.0)
    views = [big[::2, ::2], big.T[:3, :4], big[::-2, 1:4], np.asfortranarray(big)[:4, :3],
             np.broadcast_to(np.arange(3.0), (4, 3)), big[:4, :3].astype(">f8")]
    for v in views:
        for attrs in ({}, {"op": "prod"}, {"op": "max"}):
            b = ag.get_bprop("all_reduce", **attrs)
            c = np.ascontiguousarray(v, "=f8")
            same(b(v, v, v), b(c, c, c), f"view {v.shape} {v.strides} {attrs}")


def test_results_are_new_arrays(world):
    dy = DY.copy()
    dy.flags.writeable = False
    for b in (ag.get_bprop("all_reduce_invariant"), ag.get_bprop("mirror"), ag.get_bprop("all_reduce")):
        for out in (b(X, X, dy), b([X], [X], [dy])[0]):
            assert isinstance(out, np.ndarray)
            assert not np.shares_memory(out, dy) and not np.shares_memory(out, X), b.op
            assert out.flags.writeable
            same(out, DY, b.op)
    ints = np.arange(3)
    out = ag.get_bprop("virtual_div", divisor=2)([X], [X], [ints])[0]   # passed through unchanged
    assert not np.shares_memory(out, ints)
    t = collie.Tensor(DY)
    out = ag.get_bprop("all_reduce_invariant")(X, X, t)                 # a collie.Tensor input
    same(out, DY)
    out[0, 0] = -1
    assert np.asarray(t)[0, 0] == DY[0, 0]


def test_inputs_are_released(world):
    x, y, dy = data(), data(), data()
    refs = [weakref.ref(a) for a in (x, y, dy)]
    for attrs in ({}, {"op": "prod"}, {"op": "max"}):
        ag.get_bprop("all_reduce", **attrs)(x, y, dy)
    ag.get_bprop("all_reduce_invariant")([x], [y], [dy])
    del x, y, dy
    assert all(r() is None for r in refs)


def test_rule_state_is_shared_by_the_python_object(world):
    """Mini-step rules keep their accumulation across calls of the same object."""
    b = ag.get_bprop("_MirrorMiniStepOperator", accumulation_steps=3)
    assert not b(X, X, DY).any() and not b(X, X, DY).any()
    same(b(X, X, DY), 3 * DY)
    assert not b(X, X, DY).any()  # the next accumulation starts


def test_gil_is_released_while_a_rule_blocks(world):
    """A rule waiting for its peer (here: send's rule waiting for the gradient from this
    same rank) leaves the interpreter to other threads: the main thread runs Python and
    then the matching recv rule; with the GIL held this would deadlock."""
    started = threading.Event()
    result = {}

    def blocked():
        started.set()
        result["dx"] = ag.get_bprop("send", dst=0, tag=9)(X, None, None)

    t = threading.Thread(target=blocked)
    t.start()
    assert started.wait(10)
    counter = sum(i for i in range(200000))  # Python runs while the other thread waits in C++
    assert counter > 0 and "dx" not in result
    ag.get_bprop("recv", src=0, tag=9)(X, DY, DY)
    t.join(30)
    assert not t.is_alive()
    same(result["dx"], DY)


# ---------------------------------------------------------------- multi-rank


@pytest.mark.parametrize("n", [2, 4])
def test_rules_on_ranks(run_ranks, n):
    """Adjoint (dot-product) tests in float64 for the linear ops on the world, the world
    reversed and unsorted sub-groups; exact values at prod zeros and max/min ties; every
    result bitwise equal to the collective the C++ rule runs."""
    proc = run_ranks(n, WORKERS / "worker_autograd.py", timeout=240)
    report = f"exit code {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == 0, report
    for rank in range(n):
        assert f"WORKER OK rank {rank} of {n}" in proc.stdout, report
