"""collie.autograd — the backward rule of every communication op, on numpy arrays.

``get_bprop(op_name, **attrs)`` returns ``bprop(x, out, dout) -> dx``: given the forward
inputs, the forward output and the output's cotangent, the input's cotangent (the
vector-Jacobian product). These are collie's C++ rules (``collie/autograd.h``), the
counterpart of MindSpore's bprop registry (``grad_comm_ops.py``) with its mathematical
faults fixed; docs/autograd.md gives the table and every difference.

Convention: the objective is the sum of the per-rank losses. A rule is collective —
every rank of the op's group calls it, in the same order as the forward ops.

Example (``collie run -n 2 /usr/bin/python3 script.py``):
    >>> import numpy as np
    >>> import collie
    >>> from collie import autograd
    >>> collie.init()
    >>> x = np.array([2.0, 0.0, 3.0]) if collie.get_rank() == 0 else np.array([5.0, 7.0, 0.0])
    >>> y, _ = collie.comm_func.all_reduce(x, op="prod")          # [10., 0., 0.]
    >>> bprop = autograd.get_bprop("all_reduce", op="prod")
    >>> bprop(x, y, np.ones(3))  # (sum of dy) * the other ranks' x: finite at the zeros
    array([10., 14.,  0.])       # on rank 0; rank 1 gets [4., 0., 6.]

Attributes (keyword arguments) are those of the op (``rule_table()`` lists them):
bool, int, float, str, a list/tuple of ints (split sizes, count matrices, ranks), a list
of strs, a list of shapes (tuples of ints). Ranks in attributes (src, dst, peers, ...)
are world ranks; ``group`` defaults to the world; ``op`` is ``"sum"``, ``"prod"``,
``"min"`` or ``"max"`` (``collie.ReduceOp``).
"""

from collie import _collie

__all__ = ["Bprop", "get_bprop", "rule_table"]

#: The type of the rules get_bprop returns: ``bprop(x, out, dout)``, ``bprop.op``.
Bprop = _collie._Bprop


def get_bprop(op_name, **attrs):
    """The backward rule of `op_name` with the op's attributes.

    Args:
        op_name (str): a collie name (``"all_reduce"``, ``"broadcast"``, ...) or
            MindSpore's primitive name (``"AllReduce"``, ``"_MirrorOperator"``, ...).
        **attrs: the op's attributes, e.g. ``op="max"``, ``group="g"``, ``src=1``,
            ``send_numel_list=[3, 0, 2]``, ``output_shape_list=[(2, 3), (4,)]``.

    Returns:
        Bprop: ``bprop(x, out, dout)``. x, out and dout are each a tensor (numpy
        array, ``collie.Tensor``, DLPack or buffer object), ``None`` (no tensor), or a
        list/tuple of tensors in the op's order. Without any list the call returns one
        numpy array (the single-tensor form; ValueError if the rule gives another
        count); with a list among them it returns a list of arrays. Results are new
        arrays (never views of the inputs); bfloat16 results follow comm_func's rules
        (``ml_dtypes`` arrays, else ``collie.Tensor``). The call releases the GIL while
        the rule communicates.

    Raises:
        TypeError: `op_name` is not a str; an attribute value is not one of the types
            above (the message names the attribute); a bad reduce op string.
        ValueError: unknown op; unknown attribute (the message lists the accepted
            ones); an attribute of the wrong kind (e.g. a float for ``src``) or value.
        RuntimeError: ops whose backward collie does not define, e.g.
            ``reduce_scatter_tensor`` with ``op`` other than ``"sum"``.

    Example:
        >>> bprop = get_bprop("broadcast", src=1)   # reduce-sum of dout to rank 1
        >>> dx = bprop(x, y, dy)                    # zeros on the other ranks
    """
    if not isinstance(op_name, str):
        raise TypeError(f"get_bprop: op_name must be a str, but got {type(op_name).__name__}")
    return _collie._get_bprop(op_name, attrs)


def rule_table():
    """Every op with a rule, in documentation order, as a list of dicts.

    Keys: ``name`` (the key of get_bprop), ``aliases`` (MindSpore names with the same
    rule), ``attrs`` (accepted attribute names), ``lists`` (what x, out, dout and dx
    hold), ``backward`` (the rule in one line), ``vs_mindspore`` (how MindSpore's rule
    differs; ``""`` if it does not). A new list on every call.
    """
    return _collie._rule_table()
