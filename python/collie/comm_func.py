"""collie.comm_func — MindSpore's functional communication API on numpy arrays.

Every function keeps the name, argument order, defaults, return convention and
exception types of ``mindspore.communication.comm_func``:

* tensors are numpy arrays — or any object with ``__dlpack__`` (CPU) or the buffer
  protocol; any dtype among bool, int8, uint8, int16, int32, int64, float16,
  bfloat16 (through DLPack), float32, float64; any strides (views are fine);
* inputs are never modified; results are new numpy arrays (their memory is the
  C++ result's storage, no copy);
* ``(output, None)`` for a synchronous call, ``(output, CommHandle)`` with
  ``async_op=True`` (the output is valid after ``handle.wait()``);
* ``dst``/``src``/``peer`` are world ranks; ``group`` defaults to
  ``"hccl_world_group"``, which means the current world.

Differences from MindSpore (see docs/python.md): ``CommHandle.wait()`` blocks the
host until the operation is complete; p2p ``tag`` is supported; send/recv use the
same world->group rank map as every other function (the order given to
create_group); all_to_all_single_with_output_shape takes split sizes from the input
tensor (MindSpore 2.5+ wrongly uses output_shape); batch_isend_irecv uses each
op's own group.

Example (``collie run -n 2 /usr/bin/python3 script.py``):
    >>> import numpy as np
    >>> import collie as comm
    >>> comm.init()
    >>> output, _ = comm.comm_func.all_reduce(np.ones([2, 8], np.float32))
    >>> print(output)
    [[2. 2. 2. 2. 2. 2. 2. 2.]
     [2. 2. 2. 2. 2. 2. 2. 2.]]
"""

import numpy as _np

from collie import _collie
from collie._dtypes import dtype_name as _dtype_name
from collie._dtypes import is_dtype as _is_dtype
from collie.errors import IrecvTypeError, ReduceOpValueError
from collie.management import GlobalComm, _check_inited, _get_group
from collie.ops import REDUCE_OPS, ReduceOp

__all__ = [
    "all_reduce",
    "all_gather_into_tensor",
    "all_to_all_with_output_shape",
    "all_to_all_single_with_output_shape",
    "all_to_all_v_c",
    "barrier",
    "broadcast",
    "gather_into_tensor",
    "isend",
    "irecv",
    "reduce_scatter_tensor",
    "reduce",
    "scatter_tensor",
    "send",
    "recv",
    "P2POp",
    "batch_isend_irecv",
]


# The handle of an asynchronous operation: a C type of the extension, which the
# bindings return directly (python/src/comm_handle.cc). Its docstring, as
# MindSpore's, is help(CommHandle).
CommHandle = _collie.CommHandle

default_handle = CommHandle()


# The hot calls (all_reduce, all_gather_into_tensor, reduce_scatter_tensor,
# broadcast, reduce, send, recv, isend, irecv, batch_isend_irecv) go to _collie
# first with their arguments as given: it takes the common types (numpy.ndarray
# itself, int ranks and tags, a str group and op, a bool async_op) at once and
# returns NotImplemented for anything else, having done nothing. Only then do the
# checks here run, raising MindSpore's errors, before the call is made again with
# checked=True (python/src/fast_call.h). The checks in Python cost a small call
# about as much as the C++ operation.
_ndarray = _np.ndarray


def _is_tensor(obj):
    # numpy arrays without the call into _collie (most of a small call's checks).
    return obj.__class__ is _ndarray or _collie._is_tensor(obj)


def _group(group, func):
    """The group argument of comm_func's functions (default "hccl_world_group")."""
    if not isinstance(group, str):
        raise TypeError(f"For {func}, the argument 'group' must be type of string, "
                        f"but got 'group' type : {type(group)}.")
    return _get_group(group)


def _optional_group(group, func):
    """The group argument of the all_to_all functions (default None: the world)."""
    if group is None:
        return GlobalComm.WORLD_COMM_GROUP
    return _group(group, func)


def _check_rank_arg(value, func, name):
    if not isinstance(value, int):
        raise TypeError(f"For {func}, the {name} must be int, but got {type(value)}")


def _check_tag(tag, func):
    if not isinstance(tag, int):
        raise TypeError(f"For {func}, the tag must be int, but got {type(tag)}")


def _check_op(op, func, value_error):
    if not isinstance(op, str):
        raise TypeError(f"For {func}, the input op type must be str")
    if op not in REDUCE_OPS:
        raise value_error(f"For {func}, the input op value must be one of sum, prod, min, max, but got {op!r}")


def _p2p_args(func, tensor, peer, what, tag, group, tensor_error=TypeError):
    """Checks send/recv/isend/irecv's arguments; returns the group.

    Called when the binding declined the call (NotImplemented): its arguments are
    not the common types (a numpy array, int peer and tag, a str group), which it
    takes without these checks (python/src/p2p_calls.cc)."""
    if not _is_tensor(tensor):
        raise tensor_error(f"For {func}, the input tensor must be tensor")
    if peer.__class__ is not int:
        _check_rank_arg(peer, func, what)
    if tag.__class__ is not int:
        _check_tag(tag, func)
    return _group(group, func)


def _p2p_group(group, func, peer, what):
    """Group of send/recv/isend/irecv, checked as MindSpore's rank cache does: KeyError for
    a group never created and for a peer (world rank) that is not a member of it.

    Called only once the operation has failed (RuntimeError or KeyError): collie checks
    both before anything starts, and asking for a group's ranks up front cost each call
    more than a small transfer."""
    group = _group(group, func)
    if not _collie.is_initialized():
        return group  # the operation raises "not initialised"
    try:
        ranks = _collie.get_process_group_ranks(group)
    except RuntimeError:
        raise KeyError(f"For {func}, the argument 'group' {group!r} is not found: "
                       f"create it with create_group() first") from None
    if peer not in ranks:
        raise KeyError(f"For {func}, {what} {peer} is not a member of group {group!r} {ranks} (ranks are world ranks)")
    return group


def _shape_of(obj):
    if obj.__class__ is _ndarray:
        return obj.shape
    shape = getattr(obj, "shape", None)
    if isinstance(shape, tuple) and all(isinstance(d, int) for d in shape):
        return shape
    return _collie.Tensor(obj).shape


def _shape_arg(shape, what):
    out = tuple(shape)
    for d in out:
        if not isinstance(d, int):
            raise TypeError(f"{what} must hold int dimensions, but got {type(d)} in {shape!r}")
    return out


def _split_sizes(sizes, name):
    if sizes is None:
        return []
    if not isinstance(sizes, (list, tuple)):
        raise TypeError(f"{name} must be a list or tuple of int, but got {type(sizes)}")
    for s in sizes:
        if not isinstance(s, int):
            raise TypeError(f"{name} must be a list or tuple of int, but got an element of {type(s)}")
    return list(sizes)


def all_reduce(tensor, op=ReduceOp.SUM, group=GlobalComm.WORLD_COMM_GROUP, async_op=False):
    """Reduces `tensor` element-wise over the group; every rank gets the result.

    Args:
        tensor: the input, shape (x_1, ..., x_R).
        op (str): "sum", "prod", "min" or "max". Default: ReduceOp.SUM.
        group (str): Default: "hccl_world_group" (the world).
        async_op (bool): return at once with a handle. Default: False.

    Returns:
        (numpy.ndarray, CommHandle or None): the result, same shape and dtype.

    Raises:
        TypeError: tensor is not a tensor or has a dtype collie lacks; op is not a
            str or not one of sum, prod, min, max; group is not a str.
        RuntimeError: not initialised, unknown group, this rank not in it.
    """
    result = _collie.all_reduce(tensor, op, group, async_op)
    if result is NotImplemented:  # not the common argument types: check them (see _ndarray)
        if not _is_tensor(tensor):
            raise TypeError("For all_reduce, the input tensor must be tensor")
        if not isinstance(op, str):
            raise TypeError("For all_reduce, the input op type must be str")
        if op not in REDUCE_OPS:
            raise TypeError("For all_reduce, the input op value must be one of sum, prod, min, max")
        group = _group(group, "all_reduce")
        result = _collie.all_reduce(tensor, op, group, bool(async_op), True)
    return result


def all_gather_into_tensor(tensor, group=GlobalComm.WORLD_COMM_GROUP, async_op=False):
    """Concatenates every rank's tensor along dim 0, in group-rank order.

    Returns:
        (numpy.ndarray, CommHandle or None): shape (N*x_1, x_2, ..., x_R); a 0-d
        input gives shape (N,).

    Raises:
        TypeError: tensor is not a tensor; group is not a str.
        ValueError: x_1 == 0.
    """
    result = _collie.all_gather_into_tensor(tensor, group, async_op)
    if result is NotImplemented:
        if not _is_tensor(tensor):
            raise TypeError("For all_gather_into_tensor, the input tensor must be tensor")
        group = _group(group, "all_gather_into_tensor")
        shape = _shape_of(tensor)
        if shape and shape[0] < 1:
            raise ValueError(f"For all_gather_into_tensor, the input_shape[0] must be at least 1, but got shape {shape}")
        result = _collie.all_gather_into_tensor(tensor, group, bool(async_op), True)
    return result


def reduce_scatter_tensor(tensor, op=ReduceOp.SUM, group=GlobalComm.WORLD_COMM_GROUP, async_op=False):
    """Reduces over the group, then group rank r keeps rows [r*x_1/N, (r+1)*x_1/N).

    Returns:
        (numpy.ndarray, CommHandle or None): shape (x_1/N, x_2, ..., x_R).

    Raises:
        TypeError: tensor is not a tensor; op is not a str; group is not a str.
        ReduceOpValueError: (TypeError and RuntimeError) op is not one of sum,
            prod, min, max (MindSpore fails later with RuntimeError).
        ValueError: 0-d input, or x_1 not divisible by N.
    """
    result = _collie.reduce_scatter_tensor(tensor, op, group, async_op)
    if result is NotImplemented:
        if not _is_tensor(tensor):
            raise TypeError("For reduce_scatter_tensor, the input tensor must be tensor")
        _check_op(op, "reduce_scatter_tensor", ReduceOpValueError)
        group = _group(group, "reduce_scatter_tensor")
        result = _collie.reduce_scatter_tensor(tensor, op, group, bool(async_op), True)
    return result


def reduce(tensor, dst, op=ReduceOp.SUM, group=GlobalComm.WORLD_COMM_GROUP):
    """Reduces over the group onto world rank `dst`.

    Returns:
        numpy.ndarray: on `dst`, the result (same shape); on every other rank a
        shape-[1] array of zeros, as MindSpore's comm_func.reduce.

    Raises:
        TypeError: tensor is not a tensor; dst is not an int; op is not a str;
            group is not a str.
        ReduceOpValueError: op is not one of sum, prod, min, max.
        RuntimeError: dst is not a member of the group.
    """
    output = _collie.reduce(tensor, dst, op, group)
    if output is NotImplemented:
        if not _is_tensor(tensor):
            raise TypeError("For reduce, the input tensor must be tensor")
        if not isinstance(dst, int):
            raise TypeError(f"For 'get_group_rank_from_world_rank', the argument 'world_rank_id' must be type of "
                            f"int, but got 'world_rank_id' type : {type(dst)}.")
        group = _group(group, "reduce")
        _check_op(op, "reduce", ReduceOpValueError)
        output = _collie.reduce(tensor, dst, op, group, True)
    return output


def scatter_tensor(tensor, src=0, group=GlobalComm.WORLD_COMM_GROUP):
    """World rank `src` splits its tensor along dim 0 into N parts; group rank r gets part r.

    Every rank passes a tensor of the same shape and dtype (only src's values are used).

    Returns:
        numpy.ndarray: shape (x_1/N, x_2, ..., x_R).

    Raises:
        TypeError: tensor is not a tensor; src is not an int; group is not a str.
        RuntimeError: src is not a member of the group.
        ValueError: 0-d input, or x_1 not divisible by N.
    """
    output = _collie.scatter_tensor(tensor, src, group)
    if output is NotImplemented:  # not the common argument types (python/src/collective_calls.cc)
        if not _is_tensor(tensor):
            raise TypeError("For scatter_tensor, the input tensor must be tensor")
        _check_rank_arg(src, "scatter_tensor", "src")
        group = _group(group, "scatter_tensor")
        output = _collie.scatter_tensor(tensor, src, group, True)
    return output


def gather_into_tensor(tensor, dst=0, group=GlobalComm.WORLD_COMM_GROUP):
    """World rank `dst` gets every rank's tensor concatenated along dim 0 (group-rank order).

    Returns:
        numpy.ndarray: on `dst`, shape (N*x_1, x_2, ..., x_R); elsewhere a shape-[1]
        array of zeros.

    Raises:
        TypeError: tensor is not a tensor; dst is not an int; group is not a str;
            x_1 == 0 (as MindSpore's shape inference).
        RuntimeError: dst is not a member of the group.
    """
    output = _collie.gather_into_tensor(tensor, dst, group)
    if output is NotImplemented:  # not the common argument types (python/src/collective_calls.cc)
        if not _is_tensor(tensor):
            raise TypeError("For gather_into_tensor, the input tensor must be tensor")
        _check_rank_arg(dst, "gather_into_tensor", "dst")
        group = _group(group, "gather_into_tensor")
        shape = _shape_of(tensor)
        if shape and shape[0] < 1:
            # MindSpore's shape inference raises TypeError here (all_gather_into_tensor: ValueError).
            raise TypeError(f"For gather_into_tensor, the input x_shape[0] must be at least 1, but got shape {shape}")
        output = _collie.gather_into_tensor(tensor, dst, group, True)
    return output


def broadcast(tensor, src=0, group=GlobalComm.WORLD_COMM_GROUP):
    """Every rank gets world rank `src`'s tensor (same shape and dtype on every rank).

    Returns:
        numpy.ndarray: a new array holding src's values.

    Raises:
        TypeError: tensor is not a tensor; src is not an int; group is not a str.
        RuntimeError: src is not a member of the group.
    """
    output = _collie.broadcast(tensor, src, group)
    if output is NotImplemented:
        if not _is_tensor(tensor):
            raise TypeError("For broadcast, the input tensor must be tensor")
        _check_rank_arg(src, "broadcast", "src")
        group = _group(group, "broadcast")
        output = _collie.broadcast(tensor, src, group, True)
    return output


def barrier(group=GlobalComm.WORLD_COMM_GROUP):
    """Returns once every member of `group` has entered the barrier.

    Raises:
        TypeError: group is not a str.
    """
    if not isinstance(group, str):
        raise TypeError(f"group must be type of string, but got {type(group)}")
    _collie.barrier(_get_group(group))


def send(tensor, dst=0, group=GlobalComm.WORLD_COMM_GROUP, tag=0):
    """Sends `tensor` to world rank `dst`; returns when it has been handed over.

    Messages are matched by (source, group, tag) in the order they were sent; the
    receiver names the same shape (element count) and dtype. Sending to oneself is
    allowed (pair it with an irecv). Handed over means the array may change again:
    a small message is in shared memory; a larger one (16 KiB and up on CPUs that
    prefer single copies) has been read by the receiver, which a busy receiver
    does soon after it arrived (within the time a copy of it takes, 1 ms at most).
    isend overlaps that wait.

    Raises:
        TypeError: tensor is not a tensor; dst or tag is not an int; group not a str.
        KeyError: the group was never created, or dst is not a member of it.
    """
    try:
        if _collie.send(tensor, dst, group, tag) is NotImplemented:
            group = _p2p_args("send", tensor, dst, "dst", tag, group)
            _collie.send(tensor, dst, group, tag, True)
    except (RuntimeError, KeyError):
        _p2p_group(group, "send", dst, "dst")
        raise


def recv(tensor, src=0, group=GlobalComm.WORLD_COMM_GROUP, tag=0):
    """Receives from world rank `src` into a new array of `tensor`'s shape and dtype.

    `tensor`'s values are ignored (and it is not modified).

    Returns:
        numpy.ndarray: the received data.

    Raises:
        TypeError: tensor is not a tensor; src or tag is not an int; group not a str.
        KeyError: the group was never created, or src is not a member of it.
        CommError: the message has another size or dtype.
    """
    try:
        output = _collie.recv(tensor, src, group, tag)
        if output is NotImplemented:
            group = _p2p_args("recv", tensor, src, "src", tag, group)
            output = _collie.recv(tensor, src, group, tag, True)
        return output
    except (RuntimeError, KeyError):
        _p2p_group(group, "recv", src, "src")
        raise


def isend(tensor, dst=0, group=GlobalComm.WORLD_COMM_GROUP, tag=0):
    """Starts sending `tensor` to world rank `dst`.

    Returns:
        CommHandle: wait() returns once the data has been handed over.

    Raises:
        as send().
    """
    try:
        handle = _collie.isend(tensor, dst, group, tag)
        if handle is NotImplemented:
            group = _p2p_args("isend", tensor, dst, "dst", tag, group)
            handle = _collie.isend(tensor, dst, group, tag, True)
        return handle
    except (RuntimeError, KeyError):
        _p2p_group(group, "isend", dst, "dst")
        raise


def irecv(tensor, src=0, group=GlobalComm.WORLD_COMM_GROUP, tag=0):
    """Starts receiving from world rank `src` into a new array of `tensor`'s shape and dtype.

    Returns:
        (numpy.ndarray, CommHandle): the array is valid after handle.wait().

    Raises:
        IrecvTypeError: (TypeError and AttributeError) tensor is not a tensor.
        TypeError: src or tag is not an int; group not a str.
        KeyError: the group was never created, or src is not a member of it.
    """
    try:
        result = _collie.irecv(tensor, src, group, tag)
        if result is NotImplemented:
            group = _p2p_args("irecv", tensor, src, "src", tag, group, IrecvTypeError)
            result = _collie.irecv(tensor, src, group, tag, True)
        return result
    except (RuntimeError, KeyError):
        _p2p_group(group, "irecv", src, "src")
        raise


def _op_name(op):
    if isinstance(op, str):
        return op
    return getattr(op, "__name__", None)


class P2POp(_collie._P2POpBase):
    """One point-to-point operation for batch_isend_irecv.

    Args:
        op: "isend" or "irecv", or the functions collie.comm_func.isend / irecv.
        tensor: the data to send; for irecv a template tensor (its shape and dtype)
            or a shape tuple together with `recv_dtype`.
        peer (int): the world rank to send to / receive from.
        group (str, optional): Default: None (the world).
        tag (int, optional): matched with the peer's tag (collie supports tags;
            MindSpore raises NotImplementedError for tag != 0). Default: 0.
        recv_dtype (keyword only): the dtype of an irecv given by shape: a numpy
            dtype or scalar type (numpy.float32, collie.float32, collie.bfloat16).

    Raises:
        TypeError: op is neither a str nor a function; tensor neither a tensor nor a
            tuple; peer not an int; recv_dtype not a dtype.
        ValueError: op is not isend/irecv.

    Example:
        >>> send_op = comm.comm_func.P2POp('isend', np.array(1., np.float32), 1)
        >>> recv_op = comm.comm_func.P2POp(comm.comm_func.irecv, np.array(0., np.float32), 0)
        >>> recv_op = comm.comm_func.P2POp('irecv', (), 0, recv_dtype=np.float32)
    """

    # The attributes (op, tensor, peer, group, tag, recv_dtype) live in the C base,
    # plain and writable as MindSpore's (batch_isend_irecv checks them again). Its
    # __init__(op, tensor, peer, group=None, tag=0, *, recv_dtype=None) takes the
    # common arguments (a str op, a numpy array or a shape tuple, int peer and tag)
    # at once and calls _check_args for the others (python/src/p2p_op.cc): the
    # Python __init__ of the two ops of an exchange cost as much as the exchange.
    __slots__ = ()

    @staticmethod
    def _check_args(op, tensor, peer, tag, recv_dtype):
        """P2POp()'s checks, in MindSpore's order and words (raises on a bad argument)."""
        if isinstance(op, str):
            name = op
        elif callable(op):
            name = _op_name(op)
        else:
            raise TypeError(f"op must be type of string or function, but got type of {type(op)}")
        if name != "isend" and name != "irecv":
            raise ValueError(f"Expected ``op`` to be of type ``isend`` or ``irecv``, but got {name}")
        if not (isinstance(tensor, tuple) or _is_tensor(tensor)):
            raise TypeError(f"Expected ``tensor`` to be type of tuple or Tensor, but got {type(tensor)}.")
        if not isinstance(peer, int):
            raise TypeError(f"peer must be type of int, but got type of {type(peer)}")
        if recv_dtype is not None and not _is_dtype(recv_dtype):
            raise TypeError(f"recv_dtype must be type of mindspore dtype, but got type of {type(recv_dtype)}")
        if not isinstance(tag, int):
            raise TypeError(f"tag must be type of int, but got type of {type(tag)}")

    def __repr__(self):
        shape = self.tensor if isinstance(self.tensor, tuple) else _shape_of(self.tensor)
        return (f"P2POp(op={_op_name(self.op)!r}, shape={shape}, peer={self.peer}, "
                f"group={self.group!r}, tag={self.tag})")


def batch_isend_irecv(p2p_op_list):
    """Starts every operation of the list at once and waits for all of them.

    Any order of sends and receives completes, whatever the sizes.

    Returns:
        tuple: one array per op, in list order: the received array for an irecv, a
        0-d float32 zero placeholder for an isend.

    Raises:
        TypeError: not a list; empty; an element not a P2POp; a bad op or tensor.
        ValueError: an irecv by shape without recv_dtype.
        RuntimeError: a peer is not a member of its op's group.
    """
    # A list of P2POps with the common attributes (a str op, numpy arrays, int
    # peer and tag, a str group or None) runs in C (python/src/p2p_op.cc); the
    # rest, and every error, takes the checks below.
    try:
        out = _collie._batch_p2p_ops(p2p_op_list, P2POp)
    except KeyError:
        _raise_missing_peer((op.group, op.peer) for op in p2p_op_list)
        raise
    if out is not NotImplemented:
        return out
    if not isinstance(p2p_op_list, list):
        raise TypeError(f"p2p_op_list must be type of list, but got type of {type(p2p_op_list)}.")
    if not p2p_op_list:
        raise TypeError("p2p_op_list can not be empty list.")
    for i, p2p_op in enumerate(p2p_op_list):
        if not isinstance(p2p_op, P2POp):
            raise TypeError(f"must be type of P2POp, but got {type(p2p_op)} at index {i} of p2p_op_list")
    _check_inited()
    # Every op is checked again (its attributes may have changed since it was
    # made), exact types first, as in P2POp().
    world = GlobalComm.WORLD_COMM_GROUP
    ops = []
    for i, p2p_op in enumerate(p2p_op_list):
        op = p2p_op.op
        name = op if op.__class__ is str else _op_name(op)
        if name != "isend" and name != "irecv":
            raise TypeError("p2p_op.op must be isend or irecv")
        group = p2p_op.group
        group = world if group is None else _group(group, "batch_isend_irecv")
        tag = p2p_op.tag
        if tag.__class__ is not int:
            _check_tag(tag, "batch_isend_irecv")
        peer = p2p_op.peer
        if peer.__class__ is not int and not isinstance(peer, int):
            raise TypeError(f"peer must be type of int, but got type of {type(peer)}")
        tensor = p2p_op.tensor
        if tensor.__class__ is _ndarray:
            ops.append((name, tensor, None, None, peer, group, tag))
        elif name == "irecv" and isinstance(tensor, tuple):
            if p2p_op.recv_dtype is None:
                raise ValueError(f"'recv_dtype' of {i}th P2POp in p2p_op_list is None but op_types is'irecv' "
                                 f"and P2POp.tensor is a tuple type.")
            shape = _shape_arg(tensor, "p2p_op.tensor")
            ops.append(("irecv", None, shape, _dtype_name(p2p_op.recv_dtype), peer, group, tag))
        elif _is_tensor(tensor):
            ops.append((name, tensor, None, None, peer, group, tag))
        elif name == "irecv":
            raise TypeError("p2p_op.tensor must be tensor or shape")
        else:
            raise TypeError("p2p_op.tensor must be tensor for isend")
    try:
        return _collie.batch_isend_irecv(ops)
    except KeyError:
        _raise_missing_peer((op[5], op[4]) for op in ops)
        raise


def _raise_missing_peer(groups_and_peers):
    """batch_isend_irecv's KeyError as MindSpore's: collie checks every peer before
    anything starts, with its own KeyError; MindSpore's C++ rank converter raises
    this RuntimeError. Looked up only after a KeyError: asking for a group's ranks
    costs more than the exchange itself."""
    for group, peer in groups_and_peers:
        group = GlobalComm.WORLD_COMM_GROUP if group is None else _get_group(group)
        if peer not in _collie.get_process_group_ranks(group):
            raise RuntimeError(f"Group {group} doesn't contain the global rank {peer}") from None


def all_to_all_with_output_shape(output_shape_list, input_tensor_list, group=None, async_op=False):
    """input_tensor_list[i] goes to group rank i; output i comes from group rank i.

    Args:
        output_shape_list: one shape (tuple/list, or a tensor whose shape is used) per rank.
        input_tensor_list: one tensor per rank, all of one dtype.
        group (str, optional): Default: None (the world).
        async_op (bool): Default: False.

    Returns:
        (tuple of numpy.ndarray, CommHandle or None): output i has shape
        output_shape_list[i] and the inputs' dtype.

    Raises:
        TypeError: not lists/tuples; an input not a tensor; a shape neither a tuple
            nor a tensor; different input dtypes; lists without one entry per rank.
        CommError: a sender's and receiver's element counts disagree.
    """
    result = _collie.all_to_all_with_output_shape(output_shape_list, input_tensor_list, group, async_op)
    if result is not NotImplemented:  # the common argument types (python/src/all_to_all_calls.cc)
        return result
    if not isinstance(input_tensor_list, (list, tuple)):
        raise TypeError(f"Expected list or tuple, but got {type(input_tensor_list)}.")
    for t in input_tensor_list:
        if not _is_tensor(t):
            raise TypeError(f"Expected tensor, but got {type(t)}")
    if not isinstance(output_shape_list, (list, tuple)):
        raise TypeError(f"Expected list or tuple, but got {type(output_shape_list)}.")
    shapes = []
    for s in output_shape_list:
        if isinstance(s, (tuple, list)):
            shapes.append(_shape_arg(s, "output_shape_list"))
        elif _is_tensor(s):
            shapes.append(_shape_of(s))
        else:
            raise TypeError(f"Expected tensor or tuple, but got {type(s)}")
    dtypes = [_collie.Tensor(t).dtype for t in input_tensor_list]
    for d in dtypes[1:]:
        if d != dtypes[0]:
            raise TypeError(f"all_to_all input dtype must be the same, but got {dtypes[0]} and {d}.")
    group = _optional_group(group, "all_to_all_with_output_shape")
    return _collie.all_to_all_with_output_shape(shapes, list(input_tensor_list), group, bool(async_op), True)


def all_to_all_single_with_output_shape(output_shape, tensor, output_split_sizes=None,
                                        input_split_sizes=None, group=None, async_op=False):
    """Splits `tensor` along dim 0 and sends part i to group rank i; concatenates what arrives.

    Args:
        output_shape: the result's shape (tuple/list, or a tensor whose shape is used).
        tensor: the input.
        output_split_sizes (list[int], optional): rows received from each rank;
            None or empty: N equal parts of output_shape[0].
        input_split_sizes (list[int], optional): rows sent to each rank; None or
            empty: N equal parts of tensor.shape[0].
        group (str, optional): Default: None (the world).
        async_op (bool): Default: False.

    Returns:
        (numpy.ndarray, CommHandle or None): shape output_shape.

    Raises:
        TypeError: tensor not a tensor; output_shape neither a tuple nor a tensor.
        ValueError: sizes not divisible by N; split lists of the wrong length or sum.
    """
    result = _collie.all_to_all_single_with_output_shape(output_shape, tensor, output_split_sizes,
                                                         input_split_sizes, group, async_op)
    if result is not NotImplemented:  # the common argument types (python/src/all_to_all_calls.cc)
        return result
    if not _is_tensor(tensor):
        raise TypeError(f"Expected tensor, but got {type(tensor)}")
    if isinstance(output_shape, (tuple, list)):
        shape = _shape_arg(output_shape, "output_shape")
    elif _is_tensor(output_shape):
        shape = _shape_of(output_shape)
    else:
        raise TypeError(f"Expected tensor or tuple, but got {type(output_shape)}")
    out_splits = _split_sizes(output_split_sizes, "output_split_sizes")
    in_splits = _split_sizes(input_split_sizes, "input_split_sizes")
    group = _optional_group(group, "all_to_all_single_with_output_shape")
    return _collie.all_to_all_single_with_output_shape(shape, tensor, out_splits, in_splits, group,
                                                       bool(async_op), True)


def all_to_all_v_c(output, input, send_count_matrix, group=None, async_op=False):  # noqa: A002 - MindSpore's name
    """All-to-all with counts: send_count_matrix[i*N + j] rows go from group rank i to j.

    The rows received are written into `output` in source-rank order (`output` must
    be a writeable, C-contiguous array with enough rows). The matrix is the same on
    every rank.

    Returns:
        CommHandle with async_op=True (output is valid after wait()), else None.

    Raises:
        TypeError: output/input not tensors; group not a str; async_op not a bool;
            send_count_matrix not a list of int, or not N*N long.
        ValueError: input and output rows of different size or dtype; output not
            writeable/contiguous or too short.
    """
    result = _collie.all_to_all_v_c(output, input, send_count_matrix, group, async_op)
    if result is not NotImplemented:  # the common argument types (python/src/all_to_all_calls.cc)
        return result
    if not _is_tensor(input):
        raise TypeError(f"Expected tensor, but got {type(input)}")
    if not _is_tensor(output):
        raise TypeError(f"Expected tensor, but got {type(output)}")
    if group is None:
        group = GlobalComm.WORLD_COMM_GROUP
    elif not isinstance(group, str):
        raise TypeError(f"The argument 'group' must be type of string, but got 'group' type : {type(group)}.")
    else:
        group = _get_group(group)
    if not isinstance(async_op, bool):
        raise TypeError(f"The argument 'async_op' must be a bool, but got {type(async_op)}.")
    if not isinstance(send_count_matrix, list):
        raise TypeError(f"send_count_matrix must be list, but got {type(send_count_matrix)}")
    if not all(isinstance(v, int) for v in send_count_matrix):
        raise TypeError("send_count_matrix elements must be of type int")
    return _collie.all_to_all_v_c(output, input, send_count_matrix, group, async_op, True)
