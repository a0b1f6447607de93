"""In-process tests of the collie package (a world of one: no launcher needed).

Module layout, signatures and defaults against MindSpore's, every argument check of
the spec with its exception type, tensor conversion (numpy dtypes, views, DLPack,
buffer protocol, bfloat16), zero-copy results, in-place all_to_all_v_c, and the
mapping of C++ exceptions.
"""

import array
import gc
import importlib
import inspect
import subprocess
import sys
import time
import weakref

import numpy as np
import pytest

import collie
from collie import comm_func as cf

NUMPY_DTYPES = (np.bool_, np.int8, np.uint8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64)
W = "hccl_world_group"


@pytest.fixture
def world():
    if not collie.GlobalComm.INITED:
        collie.init()
    yield
    assert collie.GlobalComm.INITED


@pytest.fixture
def uninit():
    collie.release()
    yield
    collie.init()


# ---------------------------------------------------------------- module layout

MANAGEMENT = ["GlobalComm", "init", "release", "get_rank", "get_group_size", "get_local_rank", "get_local_rank_size",
              "get_world_rank_from_group_rank", "get_group_rank_from_world_rank", "create_group", "destroy_group",
              "get_process_group_ranks", "HCCL_WORLD_COMM_GROUP", "NCCL_WORLD_COMM_GROUP", "MCCL_WORLD_COMM_GROUP",
              "ReduceOp", "comm_func"]
COMM_FUNC_ALL = ["all_reduce", "all_gather_into_tensor", "all_to_all_with_output_shape",
                 "all_to_all_single_with_output_shape", "all_to_all_v_c", "barrier", "broadcast",
                 "gather_into_tensor", "isend", "irecv", "reduce_scatter_tensor", "reduce", "scatter_tensor", "send",
                 "recv", "P2POp", "batch_isend_irecv"]

SIGNATURES = {
    cf.all_reduce: f"(tensor, op='sum', group='{W}', async_op=False)",
    cf.all_gather_into_tensor: f"(tensor, group='{W}', async_op=False)",
    cf.reduce_scatter_tensor: f"(tensor, op='sum', group='{W}', async_op=False)",
    cf.reduce: f"(tensor, dst, op='sum', group='{W}')",
    cf.scatter_tensor: f"(tensor, src=0, group='{W}')",
    cf.gather_into_tensor: f"(tensor, dst=0, group='{W}')",
    cf.broadcast: f"(tensor, src=0, group='{W}')",
    cf.barrier: f"(group='{W}')",
    cf.send: f"(tensor, dst=0, group='{W}', tag=0)",
    cf.recv: f"(tensor, src=0, group='{W}', tag=0)",
    cf.isend: f"(tensor, dst=0, group='{W}', tag=0)",
    cf.irecv: f"(tensor, src=0, group='{W}', tag=0)",
    cf.all_to_all_with_output_shape: "(output_shape_list, input_tensor_list, group=None, async_op=False)",
    cf.all_to_all_single_with_output_shape:
        "(output_shape, tensor, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False)",
    cf.all_to_all_v_c: "(output, input, send_count_matrix, group=None, async_op=False)",
    cf.batch_isend_irecv: "(p2p_op_list)",
    cf.P2POp: "(op, tensor, peer, group=None, tag=0, *, recv_dtype=None)",
    cf.CommHandle: "(handle=None, exec_sync=False)",
    collie.init: "(backend_name=None)",
    collie.release: "()",
    collie.get_rank: f"(group='{W}')",
    collie.get_group_size: f"(group='{W}')",
    collie.get_local_rank: f"(group='{W}')",
    collie.get_local_rank_size: f"(group='{W}')",
    collie.get_world_rank_from_group_rank: "(group, group_rank_id)",
    collie.get_group_rank_from_world_rank: "(world_rank_id, group)",
    collie.create_group: "(group, rank_ids, options=None)",
    collie.destroy_group: "(group)",
    collie.get_process_group_ranks: f"(group='{W}')",
}


def test_module_layout():
    for name in MANAGEMENT:
        assert hasattr(collie, name), name
    assert sorted(cf.__all__) == sorted(COMM_FUNC_ALL)
    for name in COMM_FUNC_ALL + ["CommHandle"]:
        assert hasattr(cf, name), name
    assert collie.HCCL_WORLD_COMM_GROUP == "hccl_world_group"
    assert collie.NCCL_WORLD_COMM_GROUP == "nccl_world_group"
    assert collie.MCCL_WORLD_COMM_GROUP == "mccl_world_group"
    assert (collie.ReduceOp.SUM, collie.ReduceOp.MAX, collie.ReduceOp.MIN, collie.ReduceOp.PROD) == (
        "sum", "max", "min", "prod")
    assert issubclass(collie.CommError, RuntimeError)
    for module in ("collie.comm_func", "collie.management", "collie.ops", "collie.errors"):
        importlib.import_module(module)  # importable as modules too


@pytest.mark.parametrize("func", list(SIGNATURES), ids=lambda f: f.__name__)
def test_signature(func):
    assert str(inspect.signature(func)) == SIGNATURES[func]


def test_global_comm_defaults_in_a_fresh_process():
    code = ("import collie; g = collie.GlobalComm; "
            "print(g.BACKEND, g.WORLD_COMM_GROUP, g.INITED, g.CHECK_ENVS); collie.init(); "
            "print(g.BACKEND, g.WORLD_COMM_GROUP, g.INITED); collie.release(); print(g.INITED)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:3] == ["hccl hccl_world_group False True", "shm collie_world_group True",
                                           "False"]


# ---------------------------------------------------------------- before init / init

def test_rank_queries_before_init_read_the_environment(uninit, monkeypatch):
    assert collie.get_rank() == 0 and collie.get_group_size() == 1
    assert collie.get_local_rank() == 0 and collie.get_local_rank_size() == 1
    monkeypatch.setenv("RANK_ID", "5")
    monkeypatch.setenv("RANK_SIZE", "8")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert collie.get_rank() == 5 and collie.get_group_size() == 8 and collie.get_local_rank() == 1


@pytest.mark.parametrize("call", [
    lambda: collie.create_group("g", [0]),
    lambda: collie.destroy_group("g"),
    lambda: collie.get_process_group_ranks(),
    lambda: collie.get_world_rank_from_group_rank(W, 0),
    lambda: collie.get_group_rank_from_world_rank(0, W),
    lambda: collie.get_comm_name(),
    lambda: cf.all_reduce(np.ones(2)),
    lambda: cf.barrier(),
    lambda: cf.send(np.ones(2), 0),
    lambda: cf.batch_isend_irecv([cf.P2POp("isend", np.ones(2), 0)]),
    lambda: collie.empty_shared([2]),
])
def test_needs_init(uninit, call):
    with pytest.raises(RuntimeError, match="init"):
        call()


def test_init_errors(uninit):
    collie.release()  # a no-op before init
    with pytest.raises(TypeError, match="backend_name"):
        collie.init(3)
    with pytest.raises(RuntimeError) as e:
        collie.init("bogus")
    assert isinstance(e.value, ValueError) and isinstance(e.value, collie.InitError)
    assert not collie.GlobalComm.INITED


def test_init_with_mindspore_backend_names(uninit):
    collie.init("mccl")
    try:
        assert collie.GlobalComm.BACKEND == "mccl"
        assert collie.GlobalComm.WORLD_COMM_GROUP == "mccl_world_group"
        out, _ = cf.all_reduce(np.ones(2))  # default "hccl_world_group" -> the current world
        assert (out == 1).all()
        assert collie.get_rank("mccl_world_group") == 0 and collie.get_rank() == 0
        collie.init()  # again: a no-op
    finally:
        collie.release()


# ---------------------------------------------------------------- management

def test_management_queries(world):
    assert collie.get_rank() == 0 and collie.get_group_size() == 1
    assert collie.get_process_group_ranks() == [0]
    assert collie.get_world_rank_from_group_rank(W, 0) == 0
    assert collie.get_group_rank_from_world_rank(0, "collie_world_group") == 0
    assert collie.get_comm_name() == collie.GlobalComm.WORLD_COMM_GROUP
    collie.create_group("solo", [0], collie.GroupOptions(timeout_seconds=5))
    collie.create_group("solo", [0])  # same ranks again: no-op
    assert collie.get_process_group_ranks("solo") == [0] and collie.get_rank("solo") == 0
    out, _ = cf.all_reduce(np.ones(2), group="solo")
    assert (out == 1).all()
    collie.destroy_group("solo")


@pytest.mark.parametrize("call,exc,match", [
    (lambda: collie.get_rank(5), TypeError, "For 'get_rank', the argument 'group' must be type of string"),
    (lambda: collie.get_group_size(None), TypeError, "get_group_size"),
    (lambda: collie.get_local_rank(1), TypeError, "get_local_rank"),
    (lambda: collie.get_local_rank_size(1), TypeError, "get_local_rank_size"),
    (lambda: collie.get_rank("nope"), RuntimeError, "does not exist"),
    (lambda: collie.get_world_rank_from_group_rank(5, 0), TypeError, "group"),
    (lambda: collie.get_world_rank_from_group_rank(W, "0"), TypeError, "group_rank_id"),
    (lambda: collie.get_world_rank_from_group_rank(W, 1), RuntimeError, "doesn't contain the group rank 1"),
    (lambda: collie.get_group_rank_from_world_rank("0", W), TypeError, "world_rank_id"),
    (lambda: collie.get_group_rank_from_world_rank(3, W), RuntimeError, "doesn't contain the global rank 3"),
    (lambda: collie.create_group(5, [0]), TypeError, "For 'create_group', the argument 'group'"),
    (lambda: collie.create_group("g", (0,)), TypeError, "must be type of list"),
    (lambda: collie.create_group("g", ["0"]), TypeError, "rank_ids"),
    (lambda: collie.create_group("g", []), ValueError, "rank_ids"),
    (lambda: collie.create_group("g", [0, 0]), ValueError, "duplicate"),
    (lambda: collie.create_group("g", [0], options={}), TypeError, "GroupOptions"),
    (lambda: collie.create_group("", [0]), ValueError, "empty"),
    (lambda: collie.create_group(W, [0]), ValueError, "world"),
    (lambda: collie.create_group("g", [0, 1]), RuntimeError, "Failed to create communication group"),
    (lambda: collie.create_group("g", [0, 1]), ValueError, "outside the world"),
    (lambda: collie.destroy_group(W), ValueError, "world_group does not support destruction"),
    (lambda: collie.destroy_group("collie_world_group"), ValueError, "world"),
    (lambda: collie.destroy_group("nope"), ValueError, "does not exist"),
    (lambda: collie.destroy_group(5), TypeError, "destroy_group"),
    (lambda: collie.get_process_group_ranks(5), TypeError, "get_process_group_ranks"),
    (lambda: collie.get_process_group_ranks("nope"), RuntimeError, "does not exist"),
])
def test_management_errors(world, call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_create_group_same_name_other_ranks(world):
    collie.create_group("once", [0])
    try:
        with pytest.raises(ValueError, match="has been created"):
            collie.create_group("once", [0, 1])  # other ranks (even out of range): ValueError first
    finally:
        collie.destroy_group("once")


# ---------------------------------------------------------------- argument checks of comm_func

X = np.ones([2, 2], np.float32)


@pytest.mark.parametrize("call,exc,match", [
    (lambda: cf.all_reduce([1, 2]), TypeError, "^For all_reduce, the input tensor must be tensor$"),
    (lambda: cf.all_reduce(3.0), TypeError, "For all_reduce, the input tensor must be tensor"),
    (lambda: cf.all_reduce(np.ndarray), TypeError, "For all_reduce, the input tensor must be tensor"),
    (lambda: cf.all_reduce(X, 5), TypeError, "^For all_reduce, the input op type must be str$"),
    (lambda: cf.all_reduce(X, "avg"), TypeError, "For all_reduce, the input op value must be one of sum, prod, min, max"),
    (lambda: cf.all_reduce(X, "SUM"), TypeError, "op value"),
    (lambda: cf.all_reduce(X, group=5), TypeError, "group"),
    (lambda: cf.all_reduce(X, group=None), TypeError, "group"),
    (lambda: cf.all_gather_into_tensor("x"), TypeError, "For all_gather_into_tensor, the input tensor must be tensor"),
    (lambda: cf.all_gather_into_tensor(np.ones([0, 2])), ValueError, "input_shape\\[0\\]"),
    (lambda: cf.all_gather_into_tensor(X, group=1), TypeError, "group"),
    (lambda: cf.reduce_scatter_tensor(None), TypeError, "For reduce_scatter_tensor, the input tensor must be tensor"),
    (lambda: cf.reduce_scatter_tensor(X, 1), TypeError, "input op type must be str"),
    (lambda: cf.reduce_scatter_tensor(X, "avg"), RuntimeError, "op value"),
    (lambda: cf.reduce_scatter_tensor(X, "avg"), TypeError, "op value"),
    (lambda: cf.reduce_scatter_tensor(np.float32(1)), ValueError, "input_shape"),
    (lambda: cf.reduce(1, 0), TypeError, "For reduce, the input tensor must be tensor"),
    (lambda: cf.reduce(X, "0"), TypeError, "world_rank_id"),
    (lambda: cf.reduce(X, 0, 3), TypeError, "op type"),
    (lambda: cf.reduce(X, 0, "mean"), RuntimeError, "op value"),
    (lambda: cf.reduce(X, 0, group=0), TypeError, "group"),
    (lambda: cf.reduce(X, 4), RuntimeError, "not a member"),
    (lambda: cf.scatter_tensor({}), TypeError, "For scatter_tensor, the input tensor must be tensor"),
    (lambda: cf.scatter_tensor(X, 0.0), TypeError, "For scatter_tensor, the src must be int"),
    (lambda: cf.scatter_tensor(np.float64(2)), ValueError, "empty"),
    (lambda: cf.scatter_tensor(X, 2), RuntimeError, "not a member"),
    (lambda: cf.gather_into_tensor(()), TypeError, "For gather_into_tensor, the input tensor must be tensor"),
    (lambda: cf.gather_into_tensor(X, "0"), TypeError, "For gather_into_tensor, the dst must be int"),
    (lambda: cf.gather_into_tensor(np.ones([0, 3])), TypeError, "x_shape\\[0\\]"),
    (lambda: cf.broadcast(object()), TypeError, "For broadcast, the input tensor must be tensor"),
    (lambda: cf.broadcast(X, None), TypeError, "For broadcast, the src must be int"),
    (lambda: cf.broadcast(X, 7), RuntimeError, "not a member"),
    (lambda: cf.barrier(5), TypeError, "group must be type of string"),
    (lambda: cf.barrier("nope"), RuntimeError, "does not exist"),
    (lambda: cf.send([1]), TypeError, "For send, the input tensor must be tensor"),
    (lambda: cf.send(X, "1"), TypeError, "dst"),
    (lambda: cf.send(X, 0, tag=1.5), TypeError, "tag"),
    (lambda: cf.send(X, 0, group=3), TypeError, "group"),
    (lambda: cf.send(X, 0, group="nope"), KeyError, "nope"),
    (lambda: cf.send(X, 3), KeyError, "not a member"),
    (lambda: cf.recv(1), TypeError, "For recv, the input tensor must be tensor"),
    (lambda: cf.recv(X, "0"), TypeError, "For recv, the src must be int"),
    (lambda: cf.recv(X, 0, group="nope"), KeyError, "nope"),
    (lambda: cf.recv(X, 2), KeyError, "not a member"),
    (lambda: cf.isend("x"), TypeError, "For isend, the input tensor must be tensor"),
    (lambda: cf.isend(X, 1.0), TypeError, "dst"),
    (lambda: cf.isend(X, 9), KeyError, "not a member"),
    (lambda: cf.irecv(5), TypeError, "For irecv, the input tensor must be tensor"),
    (lambda: cf.irecv(5), AttributeError, "irecv"),
    (lambda: cf.irecv(X, "0"), TypeError, "src"),
    (lambda: cf.irecv(X, 0, group="nope"), KeyError, "nope"),
    (lambda: cf.all_to_all_with_output_shape([(2,)], X), TypeError, "^Expected list or tuple, but got"),
    (lambda: cf.all_to_all_with_output_shape([(2,)], [1.0]), TypeError, "^Expected tensor, but got"),
    (lambda: cf.all_to_all_with_output_shape(5, [X]), TypeError, "^Expected list or tuple, but got"),
    (lambda: cf.all_to_all_with_output_shape([5], [X]), TypeError, "^Expected tensor or tuple, but got"),
    (lambda: cf.all_to_all_with_output_shape([(2,), (2,)], [X, X]), TypeError, "one entry per rank"),
    (lambda: cf.all_to_all_with_output_shape([(2,)], [X], group=5), TypeError, "group"),
    (lambda: cf.all_to_all_single_with_output_shape((2, 2), [1, 2]), TypeError, "^Expected tensor, but got"),
    (lambda: cf.all_to_all_single_with_output_shape(5, X), TypeError, "^Expected tensor or tuple, but got"),
    (lambda: cf.all_to_all_single_with_output_shape((2, 2), X, 2), TypeError, "output_split_sizes"),
    (lambda: cf.all_to_all_single_with_output_shape((2, 2), X, None, [1.0]), TypeError, "input_split_sizes"),
    (lambda: cf.all_to_all_single_with_output_shape((2, 2), X, [1]), ValueError, "output_split_sizes"),
    (lambda: cf.all_to_all_single_with_output_shape((2, 2), np.float32(1)), ValueError, "dimension"),
    (lambda: cf.all_to_all_v_c(X, [1], [2]), TypeError, "^Expected tensor, but got"),
    (lambda: cf.all_to_all_v_c(5, X, [2]), TypeError, "^Expected tensor, but got"),
    (lambda: cf.all_to_all_v_c(X.copy(), X, [2], group=5), TypeError, "The argument 'group' must be type of string"),
    (lambda: cf.all_to_all_v_c(X.copy(), X, [2], async_op=1), TypeError, "The argument 'async_op' must be a bool"),
    (lambda: cf.all_to_all_v_c(X.copy(), X, (2,)), TypeError, "send_count_matrix must be list"),
    (lambda: cf.all_to_all_v_c(X.copy(), X, [2.0]), TypeError, "send_count_matrix elements must be of type int"),
    (lambda: cf.all_to_all_v_c(X.copy(), X, [1, 1]), TypeError, "send_count_matrix must be square matrix"),
    (lambda: cf.all_to_all_v_c(np.zeros([2, 3]), X, [2]), ValueError, "except 0 must be of equal size"),
    (lambda: cf.all_to_all_v_c(np.zeros([2, 2], np.float64), X, [2]), ValueError, "dtype"),
    (lambda: cf.all_to_all_v_c(np.zeros([1, 2], np.float32), X, [2]), ValueError, "rows"),
])
def test_argument_errors(world, call, exc, match):
    with pytest.raises(exc, match=match):
        call()


@pytest.mark.parametrize("call,exc,match", [
    (lambda: cf.P2POp(5, X, 0), TypeError, "op must be type of string or function"),
    (lambda: cf.P2POp("send", X, 0), ValueError, "isend"),
    (lambda: cf.P2POp(print, X, 0), ValueError, "isend"),
    (lambda: cf.P2POp("isend", [1.0], 0), TypeError, "Expected ``tensor`` to be type of tuple or Tensor"),
    (lambda: cf.P2POp("isend", X, 1.0), TypeError, "peer must be type of int"),
    (lambda: cf.P2POp("irecv", (2,), 0, recv_dtype="float32"), TypeError, "recv_dtype must be type of"),
    (lambda: cf.P2POp("irecv", (2,), 0, recv_dtype=float), TypeError, "recv_dtype must be type of"),
    (lambda: cf.P2POp("irecv", (2,), 0, None, 0, np.float32), TypeError, "positional"),
    (lambda: cf.P2POp("isend", X, 0, tag="a"), TypeError, "tag"),
    (lambda: cf.batch_isend_irecv((cf.P2POp("isend", X, 0),)), TypeError, "p2p_op_list must be type of list"),
    (lambda: cf.batch_isend_irecv([]), TypeError, "p2p_op_list can not be empty list."),
    (lambda: cf.batch_isend_irecv([1]), TypeError, "must be type of P2POp"),
    (lambda: cf.batch_isend_irecv([cf.P2POp("irecv", (2,), 0)]), ValueError,
     "'recv_dtype' of 0th P2POp in p2p_op_list is None"),
    (lambda: cf.batch_isend_irecv([cf.P2POp("isend", (2,), 0)]), TypeError, "tensor"),
    (lambda: cf.batch_isend_irecv([cf.P2POp("isend", X, 3)]), RuntimeError, "doesn't contain the global rank 3"),
    (lambda: cf.batch_isend_irecv([cf.P2POp("isend", X, 0, group=5)]), TypeError, "group"),
])
def test_p2p_op_errors(world, call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_batch_takes_tensors_other_than_arrays(world):
    # Not numpy arrays: collie.Tensor and a bytearray (the buffer protocol); a bool
    # tag is an int (True == 1), as in MindSpore.
    sent = collie.Tensor(np.array([4, 5, 6], np.uint8))
    res = cf.batch_isend_irecv([cf.P2POp("isend", sent, 0, tag=True),
                                cf.P2POp("irecv", bytearray(3), 0, tag=1)])
    assert res[1].dtype == np.uint8 and res[1].tolist() == [4, 5, 6]


def test_batch_revalidates_mutated_ops(world):
    op = cf.P2POp("irecv", X, 0)
    op.op = "bcast"
    with pytest.raises(TypeError, match="p2p_op.op must be isend or irecv"):
        cf.batch_isend_irecv([op])
    op = cf.P2POp("isend", X, 0)
    op.peer = 0.0
    with pytest.raises(TypeError, match="peer must be type of int"):
        cf.batch_isend_irecv([op])
    op = cf.P2POp("isend", X, 0)
    op.tag = "a"
    with pytest.raises(TypeError, match="tag must be int"):
        cf.batch_isend_irecv([op])
    op = cf.P2POp("irecv", X, 0)
    op.tensor = [1, 2]
    with pytest.raises(TypeError, match="p2p_op.tensor must be tensor or shape"):
        cf.batch_isend_irecv([op])


def test_reduce_op_strings_and_constants(world):
    x = np.array([3, 1, 2], np.int32)
    for op in (collie.ReduceOp.SUM, "prod", collie.ReduceOp.MIN, "max"):
        for func in (cf.all_reduce, cf.reduce_scatter_tensor):
            out, handle = func(x, op)
            assert handle is None and out.tolist() == [3, 1, 2]
        assert cf.reduce(x, 0, op).tolist() == [3, 1, 2]


# ---------------------------------------------------------------- world of one: results

def test_results_in_a_world_of_one(world):
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    assert cf.all_reduce(x)[0].tolist() == x.tolist()
    assert cf.all_gather_into_tensor(x)[0].tolist() == x.tolist()
    assert cf.all_gather_into_tensor(np.float32(4))[0].tolist() == [4.0]  # 0-d -> shape (N,)
    assert cf.reduce_scatter_tensor(x)[0].tolist() == x.tolist()
    assert cf.reduce(x, 0).tolist() == x.tolist()
    assert cf.broadcast(x).tolist() == x.tolist()
    assert cf.scatter_tensor(x).tolist() == x.tolist()
    assert cf.gather_into_tensor(x).tolist() == x.tolist()
    assert cf.barrier() is None
    out, h = cf.all_to_all_with_output_shape([(3, 2)], [x])
    assert h is None and isinstance(out, tuple) and out[0].tolist() == x.tolist()
    out, h = cf.all_to_all_with_output_shape([x], (x,))  # a tensor in the shape list gives its shape
    assert out[0].shape == (3, 2)
    out, h = cf.all_to_all_single_with_output_shape(x, x, [3], [3])
    assert h is None and out.tolist() == x.tolist()
    out, h = cf.all_to_all_single_with_output_shape([3, 2], x, [], ())
    assert out.tolist() == x.tolist()
    # self p2p, with tags, in any order
    r1, h1 = cf.irecv(np.zeros(2), 0, tag=1)
    r2, h2 = cf.irecv(np.zeros(3), 0, tag=2)
    cf.isend(np.ones(3), 0, tag=2).wait()
    cf.send(np.full(2, 5.0), 0, tag=1)
    h2.wait()
    h1.wait()
    assert r1.tolist() == [5.0, 5.0] and r2.tolist() == [1.0] * 3
    res = cf.batch_isend_irecv([cf.P2POp("irecv", (2,), 0, recv_dtype=collie.int16),
                                cf.P2POp(cf.isend, np.array([7, 8], np.int16), 0),
                                cf.P2POp(cf.irecv, np.zeros([1], np.uint8), 0, tag=4),
                                cf.P2POp("isend", np.array([9], np.uint8), 0, tag=4)])
    assert isinstance(res, tuple) and len(res) == 4
    assert res[0].dtype == np.int16 and res[0].tolist() == [7, 8]
    assert res[1].shape == () and res[1].dtype == np.float32 and float(res[1]) == 0.0
    assert res[2].tolist() == [9]


def test_batch_of_common_ops_and_of_others_agree(world):
    # The same exchange through the C path (plain P2POps: a str op, numpy arrays,
    # int peer and tag) and through the Python checks (a subclass, a function as
    # op, a group by name, a shape tuple): the same values either way.
    class MyOp(cf.P2POp):
        __slots__ = ()

    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    plain = cf.batch_isend_irecv([cf.P2POp("isend", x, 0, tag=3), cf.P2POp("irecv", x, 0, None, 3)])
    other = cf.batch_isend_irecv([MyOp(cf.isend, x, 0, collie.HCCL_WORLD_COMM_GROUP, 3),
                                  cf.P2POp("irecv", (2, 3), 0, tag=3, recv_dtype=np.int32)])
    for res in (plain, other):
        assert isinstance(res, tuple) and len(res) == 2
        assert res[0].shape == () and res[0].dtype == np.float32 and float(res[0]) == 0.0
        assert res[1].dtype == np.int32 and res[1].tolist() == x.tolist()


def test_all_to_all_single_common_arguments_and_others_agree(world):
    # Ints in a tuple or list, a numpy array, None or lists of ints for the
    # splits, None or a str group and a bool take the C path at once
    # (python/src/all_to_all_calls.cc); anything else (a tuple subclass, a str
    # subclass, a tensor as the shape) declines it and goes through comm_func's
    # checks: the same values either way.
    from collie import _collie

    class Dims(tuple):
        pass

    class Name(str):
        pass

    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    assert _collie.all_to_all_single_with_output_shape((3, 2), x, None, None, None, False)[1] is None
    assert _collie.all_to_all_single_with_output_shape([3, 2], x, [3], (3,), "hccl_world_group",
                                                       False)[0].tolist() == x.tolist()
    for declined in [(Dims((3, 2)), x, None, None, None, False),
                     ((3, True), x, None, None, None, False),
                     ((3, 2), x.tolist(), None, None, None, False),
                     ((3, 2), x, 3, None, None, False),
                     ((3, 2), x, None, [np.int64(3)], None, False),
                     ((3, 2), x, None, None, Name("hccl_world_group"), False),
                     ((3, 2), x, None, None, None, 0),
                     ((2**70, 2), x, None, None, None, False)]:
        assert _collie.all_to_all_single_with_output_shape(*declined) is NotImplemented
    for args in [((3, 2), x), ([3, 2], x, [3], (3,), "hccl_world_group"),
                 (Dims((3, 2)), x, [3], [3], Name("hccl_world_group")), (x, x, (), None, None, 0),
                 ((3, 2), x, None, None, None, True)]:
        out, handle = cf.all_to_all_single_with_output_shape(*args)
        if handle is not None:
            handle.wait()
        assert out.dtype == np.float32 and out.tolist() == x.tolist()
    # Checked, a dimension beyond 64 bits is a TypeError (comm_func lets any int through).
    with pytest.raises(TypeError, match="output_shape must hold ints of 64 bits"):
        cf.all_to_all_single_with_output_shape((2**70, 2), x)
    with pytest.raises(TypeError, match="input_split_sizes must hold ints of 64 bits"):
        cf.all_to_all_single_with_output_shape((3, 2), x, None, [-2**64])


def test_all_to_all_list_common_arguments_and_others_agree(world):
    # As the single form: shapes of ints and numpy arrays of one dtype in tuples
    # or lists, None or a str group and a bool take the C path; anything else
    # goes through comm_func's checks first.
    from collie import _collie

    class Inputs(list):
        pass

    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    assert _collie.all_to_all_with_output_shape([(3, 2)], [x], None, False)[1] is None
    assert _collie.all_to_all_with_output_shape(([3, 2],), (x,), "hccl_world_group",
                                                False)[0][0].tolist() == x.tolist()
    for declined in [([(3, 2)], Inputs([x]), None, False),
                     ([x], [x], None, False),
                     ([(3, 2)], [x.tolist()], None, False),
                     ([(3, np.int64(2))], [x], None, False),
                     ([(3, 2)], [x], None, 1),
                     ([(2**70, 2)], [x], None, False),
                     ([(3, 2), (3, 2)], [x, x.astype(np.int32)], None, False)]:
        assert _collie.all_to_all_with_output_shape(*declined) is NotImplemented
    with pytest.raises(TypeError, match="^all_to_all input dtype must be the same"):
        cf.all_to_all_with_output_shape([(3, 2), (3, 2)], [x, x.astype(np.int32)])
    for args in [([(3, 2)], [x]), (((3, 2),), (x,), "hccl_world_group"), ([x], Inputs([x])),
                 ([(3, 2)], [x], None, True), ([[6]], [x])]:
        outs, handle = cf.all_to_all_with_output_shape(*args)
        if handle is not None:
            handle.wait()
        assert isinstance(outs, tuple) and len(outs) == 1
        assert outs[0].dtype == np.float32 and outs[0].ravel().tolist() == x.ravel().tolist()
    with pytest.raises(ValueError, match=r"output_shape_list\[0\] \[-3, 2\] has a negative dimension"):
        cf.all_to_all_with_output_shape([(-3, 2)], [x])
    with pytest.raises(TypeError, match="output_shape_list must hold ints of 64 bits"):
        cf.all_to_all_with_output_shape([(2**70, 2)], [x])


@pytest.mark.parametrize("name", ["gather_into_tensor", "scatter_tensor"])
def test_rooted_common_arguments_and_others_agree(world, name):
    # A numpy array, an int root and a str group take the C path; a subclass, a
    # bool root or a str subclass goes through comm_func's checks: same values.
    from collie import _collie

    class Name(str):
        pass

    class Array(np.ndarray):
        pass

    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    assert _collie.__dict__[name](x, 0, "hccl_world_group").tolist() == x.tolist()
    for declined in [(x.view(Array), 0, "hccl_world_group"), (x, True, "hccl_world_group"),
                     (x, 0, Name("hccl_world_group")), (x.tolist(), 0, "hccl_world_group")]:
        assert _collie.__dict__[name](*declined) is NotImplemented
    for args in [(x,), (x, 0, "hccl_world_group"), (x.view(Array), 0), (x, False), (x, 0, Name("hccl_world_group"))]:
        out = getattr(cf, name)(*args)
        assert type(out) is np.ndarray and out.dtype == np.float32 and out.tolist() == x.tolist()
    if name == "gather_into_tensor":
        assert _collie.gather_into_tensor(np.zeros((0, 2)), 0, "hccl_world_group") is NotImplemented
        with pytest.raises(TypeError, match="x_shape\\[0\\] must be at least 1"):
            cf.gather_into_tensor(np.zeros((0, 2)))


def test_all_to_all_v_c_common_arguments_and_others_agree(world):
    # numpy arrays, a list of ints, None or a str group and a bool take the C
    # path; anything else goes through comm_func's checks (which reject a tuple
    # matrix and a non-bool async_op, as MindSpore does).
    from collie import _collie

    class Counts(list):
        pass

    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = np.zeros_like(x)
    assert _collie.all_to_all_v_c(out, x, [3], None, False) is None and out.tolist() == x.tolist()
    for declined in [(out, x, (3,), None, False), (out, x, Counts([3]), None, False),
                     (out, x, [3], None, 0), (out, x.tolist(), [3], None, False),
                     (out, x, [True], None, False)]:
        assert _collie.all_to_all_v_c(*declined) is NotImplemented
    for args in [(x, [3]), (x, Counts([3]), "hccl_world_group"), (x, [3], None, True)]:
        out = np.zeros_like(x)
        handle = cf.all_to_all_v_c(out, *args)
        if handle is not None:
            handle.wait()
        assert out.tolist() == x.tolist()
    read_only = np.zeros_like(x)
    read_only.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        cf.all_to_all_v_c(read_only, x, [3])


def test_p2p_op_attributes_are_plain_and_checked_again(world):
    op = cf.P2POp("isend", X, 0)
    assert (op.op, op.tensor is X, op.peer, op.group, op.tag, op.recv_dtype) == ("isend", True, 0, None, 0, None)
    assert isinstance(op, cf.P2POp) and not hasattr(op, "__dict__")
    op.tag = 7  # written after construction: batch_isend_irecv reads the new value
    recv = cf.P2POp("irecv", np.zeros_like(X), 0, tag=7)
    assert cf.batch_isend_irecv([op, recv])[1].tolist() == X.tolist()
    op.tag = "a"
    with pytest.raises(TypeError, match="tag"):
        cf.batch_isend_irecv([op])
    op.tag, op.peer = 0, 3
    with pytest.raises(RuntimeError, match="doesn't contain the global rank 3"):
        cf.batch_isend_irecv([op])
    for peer in (2**40, -2**70):  # beyond collie's int (and beyond 64 bits): nobody's
        op.peer = peer
        with pytest.raises(RuntimeError, match=f"doesn't contain the global rank {peer}"):
            cf.batch_isend_irecv([op])
    op.peer, op.tag = 0, 2**31
    with pytest.raises(ValueError, match="tag must fit in 32 bits, but got 2147483648"):
        cf.batch_isend_irecv([op])
    op.tag = 0
    op.peer, op.op = 0, "send"
    with pytest.raises(TypeError, match="isend or irecv"):
        cf.batch_isend_irecv([op])
    del op.op
    with pytest.raises(AttributeError):
        cf.batch_isend_irecv([op])
    with pytest.raises(TypeError, match="must be type of P2POp"):
        cf.batch_isend_irecv([cf.P2POp("isend", X, 0), object()])


@pytest.mark.parametrize("func", [cf.send, cf.recv, cf.isend, cf.irecv])
def test_p2p_ranks_and_tags_beyond_32_bits(world, func):
    what = "dst" if func in (cf.send, cf.isend) else "src"
    with pytest.raises(KeyError, match=f"{what} {2**40} is not a member of group"):
        func(X, 2**40)
    with pytest.raises(ValueError, match="tag must fit in 32 bits"):
        func(X, 0, tag=-2**31 - 1)


def test_p2p_op_in_a_reference_cycle_is_collected(world):
    class Holder:
        pass

    holder = Holder()
    op = cf.P2POp("isend", X, 0, group=holder)
    holder.op = op
    gone = weakref.ref(holder)
    del op, holder
    gc.collect()
    assert gone() is None


def test_shared_arrays_in_a_world_of_one(world):
    x = collie.empty_shared([4, 5000], np.float64)
    x[...] = np.arange(20000.0).reshape(4, 5000)
    assert collie.is_shared(x) and not collie.is_shared(np.ones(3))
    y, _ = cf.all_reduce(x)
    assert collie.is_shared(y)
    np.testing.assert_array_equal(y, x)
    z, _ = cf.reduce_scatter_tensor(x)
    np.testing.assert_array_equal(z, x)


def test_async_returns_handles(world):
    x = np.ones([4], np.float64)
    for func in (cf.all_reduce, cf.all_gather_into_tensor, cf.reduce_scatter_tensor):
        out, h = func(x, async_op=True)
        assert isinstance(h, cf.CommHandle)
        h.wait()
        assert h.is_completed() and h.wait_for(0.1)
        assert out.tolist() == [1.0] * 4
        assert func(x, async_op=0)[1] is None  # truthiness, as MindSpore
    out, h = cf.all_to_all_with_output_shape([(4,)], [x], async_op=True)
    h.wait()
    out, h = cf.all_to_all_single_with_output_shape((4,), x, async_op=True)
    h.wait()
    assert out.tolist() == [1.0] * 4
    empty = cf.CommHandle()
    empty.wait()
    assert empty.is_completed() and cf.default_handle.is_completed()
    assert repr(empty) == "<collie CommHandle completed>" and empty.wait_for(0) is True


class _Name(str):
    """A str subclass: valid wherever comm_func takes a str, but not the common type."""


@pytest.mark.parametrize("variant", ["common", "uncommon"])
def test_hot_calls_with_common_and_uncommon_argument_types(world, variant):
    # The hot calls take numpy arrays, int ranks, str ops and groups and bool flags
    # in C at once; anything else valid goes through comm_func's checks and then
    # the same C function (python/src/fast_call.h). Both give the same results.
    x = np.arange(6, dtype=np.float64).reshape(3, 2)
    if variant == "common":
        t, op, group, flag, rank = x, "sum", cf.GlobalComm.WORLD_COMM_GROUP, False, 0
    else:
        t, op, group, flag, rank = (collie.Tensor(x), _Name("sum"), _Name(cf.GlobalComm.WORLD_COMM_GROUP),
                                    0, False)
    out, h = cf.all_reduce(t, op, group, flag)
    assert h is None and out.tolist() == x.tolist()
    out, h = cf.all_reduce(t, op, group, not flag)
    h.wait()
    assert out.tolist() == x.tolist()
    assert cf.all_gather_into_tensor(t, group, flag)[0].tolist() == x.tolist()
    assert cf.reduce_scatter_tensor(t, op, group, flag)[0].tolist() == x.tolist()
    assert cf.broadcast(t, rank, group).tolist() == x.tolist()
    assert cf.reduce(t, rank, op, group).tolist() == x.tolist()
    handle = cf.isend(t, rank, group, rank + 3)
    assert cf.recv(t, rank, group, rank + 3).tolist() == x.tolist()
    handle.wait()
    received, handle = cf.irecv(t, rank, group, rank + 4)
    cf.send(t, rank, group, rank + 4)
    handle.wait()
    assert received.tolist() == x.tolist()


def test_comm_handle_of_a_pending_receive(world):
    out, h = cf.irecv(np.zeros(3, np.float32), 0, tag=5)
    assert isinstance(h, cf.CommHandle) and cf.CommHandle.__module__ == "collie.comm_func"
    assert not h.is_completed() and repr(h) == "<collie CommHandle pending>"
    assert h.wait_for(0.01) is False and h.wait_for(0) is False  # an int is a number of seconds
    same = cf.CommHandle(h, exec_sync=True)  # MindSpore's signature: the same operation
    cf.send(np.arange(3, dtype=np.float32), 0, tag=5)
    same.wait()
    assert h.is_completed() and h.wait_for(1) is True and out.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(TypeError, match="CommHandle's handle must be a CommHandle or None"):
        cf.CommHandle(5)
    with pytest.raises(TypeError):
        h.wait_for("soon")


def test_all_dtypes(world):
    for dtype in NUMPY_DTYPES:
        x = (np.arange(6) % 2).astype(dtype).reshape(2, 3)
        out, _ = cf.all_reduce(x)
        assert out.dtype == dtype and np.array_equal(out, x), dtype
        assert cf.broadcast(x).dtype == dtype


@pytest.mark.parametrize("bad", [np.ones(2, np.complex64), np.ones(2, np.uint16), np.ones(2, np.uint32),
                                 np.ones(2, np.uint64), np.array(["a"]), np.array([object()]),
                                 np.array(["2020-01-01"], dtype="datetime64[D]")], ids=lambda a: str(a.dtype))
def test_unsupported_dtypes_are_type_errors(world, bad):
    with pytest.raises(TypeError, match="dtype"):
        cf.all_reduce(bad)


# ---------------------------------------------------------------- tensors in and out

class DLPackOnly:
    """An object that exposes only DLPack (wrapping a producer)."""

    def __init__(self, inner):
        self.inner = inner

    def __dlpack__(self, stream=None):
        return self.inner.__dlpack__()

    def __dlpack_device__(self):
        return self.inner.__dlpack_device__()


def test_other_tensor_kinds(world):
    assert cf.all_reduce(np.float32(2.5))[0].tolist() == 2.5  # numpy scalar -> 0-d
    out, _ = cf.all_reduce(b"\x01\x02")  # buffer protocol: bytes are uint8
    assert out.dtype == np.uint8 and out.tolist() == [1, 2]
    out, _ = cf.all_reduce(bytearray(b"\x03"))
    assert out.tolist() == [3]
    out, _ = cf.all_reduce(array.array("d", [1.5, 2.5]))
    assert out.dtype == np.float64 and out.tolist() == [1.5, 2.5]
    out, _ = cf.all_reduce(memoryview(array.array("i", [4, 5])))
    assert out.dtype == np.int32 and out.tolist() == [4, 5]
    out, _ = cf.all_reduce(collie.Tensor(np.arange(3, dtype=np.int64)))
    assert out.tolist() == [0, 1, 2]
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    out, _ = cf.all_reduce(DLPackOnly(base.T))  # DLPack with strides
    assert np.array_equal(out, base.T)
    out, _ = cf.all_reduce(DLPackOnly(collie.Tensor(base)))
    assert np.array_equal(out, base)
    big_endian = np.arange(4, dtype=">i4")
    out, _ = cf.all_reduce(big_endian)
    assert out.tolist() == [0, 1, 2, 3] and out.dtype == np.int32
    assert cf.all_reduce(np.ones([0, 3]))[0].shape == (0, 3)


def test_views_give_correct_results(world):
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    keep = base.copy()
    for view in (base[::2], base[:, 1::2], base.T, base[::-1, ::-1], np.broadcast_to(base[0], (3, 6)),
                 np.asfortranarray(base), base[1:, 2:5], base.T[::-2]):
        out, _ = cf.all_reduce(view)
        assert np.array_equal(out, view) and out.flags.c_contiguous
        assert np.array_equal(cf.gather_into_tensor(view), view)
    assert np.array_equal(base, keep)


def test_results_are_new_zero_copy_arrays(world):
    x = np.arange(8, dtype=np.float32)
    x.flags.writeable = False
    out, _ = cf.all_reduce(x)
    assert isinstance(out, np.ndarray) and out.flags.writeable and out.flags.c_contiguous
    assert not np.shares_memory(out, x)
    assert type(out.base).__name__ == "PyCapsule"  # the C++ result's storage, not a copy
    out[0] = 100  # results are the caller's
    assert x[0] == 0
    outs, _ = cf.all_to_all_with_output_shape([(2, 4)], [x])
    assert outs[0].base is not None


def test_inputs_are_released(world):
    """collie drops its references to inputs once done (sync and async)."""
    x = np.ones(16)
    ref = weakref.ref(x)
    cf.all_reduce(x)
    del x
    gc.collect()
    assert ref() is None
    y = np.ones(16)
    ref = weakref.ref(y)
    out, h = cf.all_reduce(y, async_op=True)
    del y
    h.wait()
    del h
    deadline = time.monotonic() + 5
    while ref() is not None and time.monotonic() < deadline:  # the progress thread may drop it a bit later
        gc.collect()
        time.sleep(0.01)
    assert ref() is None
    assert out.tolist() == [1.0] * 16
    z = np.ones(4)
    ref = weakref.ref(z)
    cf.all_reduce(DLPackOnly(z))
    del z
    gc.collect()
    assert ref() is None


def test_all_to_all_v_c_writes_output_in_place(world):
    inp = np.arange(6, dtype=np.int32).reshape(3, 2)
    out = np.full([4, 2], -1, np.int32)
    assert cf.all_to_all_v_c(out, inp, [3]) is None
    assert out[:3].tolist() == inp.tolist() and out[3].tolist() == [-1, -1]
    out2 = np.zeros([3, 2], np.int32)
    h = cf.all_to_all_v_c(out2, inp.T.T[::1], [3], async_op=True)
    h.wait()
    assert out2.tolist() == inp.tolist()
    buf = bytearray(4)
    cf.all_to_all_v_c(buf, b"\x01\x02\x03\x04", [4])  # a writeable buffer-protocol output
    assert bytes(buf) == b"\x01\x02\x03\x04"
    with pytest.raises(ValueError, match="contiguous"):
        cf.all_to_all_v_c(np.zeros([3, 4], np.int32)[:, ::2], inp, [3])
    with pytest.raises(ValueError, match="contiguous"):
        cf.all_to_all_v_c(np.asfortranarray(np.zeros([3, 2], np.int32)), inp, [3])
    with pytest.raises(ValueError, match="read-only"):
        cf.all_to_all_v_c(b"\x00" * 4, b"\x01" * 4, [4])
    readonly = np.zeros([3, 2], np.int32)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        cf.all_to_all_v_c(readonly, inp, [3])


def test_collie_tensor_and_bfloat16(world):
    t = collie.Tensor(np.arange(4, dtype=np.float32), dtype=collie.bfloat16)
    assert t.dtype == "bfloat16" and t.shape == (4,) and t.ndim == 1 and len(t) == 4
    assert np.asarray(t).dtype == np.float32 and np.asarray(t).tolist() == [0, 1, 2, 3]
    out, _ = cf.all_reduce(t)
    if isinstance(out, collie.Tensor):  # no ml_dtypes
        assert out.dtype == "bfloat16"
        with pytest.raises(TypeError, match="bfloat16"):
            out.numpy()
    assert np.asarray(collie.Tensor(out).astype("float32")).tolist() == [0, 1, 2, 3]
    assert "bfloat16" in repr(t)
    f = collie.Tensor(np.arange(3, dtype=np.float32))
    back = np.from_dlpack(f)  # collie.Tensor -> numpy through DLPack
    assert back.tolist() == [0.0, 1.0, 2.0]
    assert f.numpy().tolist() == [0.0, 1.0, 2.0] and f.astype(np.int8).dtype == "int8"
    with pytest.raises(TypeError):
        collie.Tensor([1, 2])
    assert collie._dtypes.dtype_name(np.dtype("float16")) == "float16"


# ---------------------------------------------------------------- C++ exception mapping

def test_cpp_exceptions_map_to_python_classes(world):
    with pytest.raises(KeyError, match="not a member"):  # collie::KeyError (comm_func checks first)
        collie._collie.isend(X, 5, "collie_world_group", 0)
    with pytest.raises(ValueError):  # collie::ValueError
        cf.reduce_scatter_tensor(np.float32(1))
    with pytest.raises(TypeError):  # collie::TypeError
        cf.all_to_all_with_output_shape([(1,), (1,)], [X, X])
    with pytest.raises(RuntimeError) as e:  # collie::RuntimeError
        cf.broadcast(X, 3)
    assert type(e.value) is RuntimeError
    collie.create_group("bad_p2p", [0])
    try:
        h = cf.isend(np.ones(4, np.float32), 0, group="bad_p2p")
        with pytest.raises(collie.CommError, match="expects"):  # collie::CommError
            cf.recv(np.ones(5, np.float32), 0, group="bad_p2p")
        del h
    finally:
        collie.destroy_group("bad_p2p")
