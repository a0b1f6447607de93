"""collie.ops — the reduction operators, as ``mindspore.ops.ReduceOp``.

The operators are plain lower-case strings, so ``ReduceOp.SUM == "sum"`` and every
function taking ``op`` accepts either spelling.

Example:
    >>> from collie import ReduceOp
    >>> ReduceOp.MAX
    'max'
"""

__all__ = ["ReduceOp"]


class ReduceOp:
    """Element-wise reductions of all_reduce, reduce_scatter_tensor and reduce.

    bool tensors reduce as logic: SUM and MAX are "or", PROD and MIN are "and";
    float16 and bfloat16 accumulate in float32.
    """

    SUM = "sum"
    MAX = "max"
    MIN = "min"
    PROD = "prod"


#: The values the functions accept, in MindSpore's order.
REDUCE_OPS = ("sum", "prod", "min", "max")
