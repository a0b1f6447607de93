"""collie.errors — the exceptions collie raises beyond Python's own.

C++ errors map one to one: collie::TypeError -> TypeError, ValueError -> ValueError,
KeyError -> KeyError, TimeoutError -> TimeoutError (the builtin), CommError ->
:class:`CommError` (a RuntimeError), RuntimeError -> RuntimeError.

Where MindSpore and collie's C++ API report the same condition with different
types, the Python layer raises a class derived from both, so code written for either
catches it:

* :class:`InitError` (RuntimeError and ValueError): ``init()`` with an unknown
  backend or a bad launch environment (MindSpore: RuntimeError; C++: ValueError).
* :class:`CreateGroupError` (RuntimeError and ValueError): ``create_group`` with a
  rank outside the world (MindSpore: RuntimeError; C++: ValueError).
* :class:`ReduceOpValueError` (TypeError and RuntimeError): an unknown ``op`` string
  for reduce_scatter_tensor/reduce (MindSpore fails late in the kernel with
  RuntimeError; all_reduce raises TypeError for the same mistake).
* :class:`IrecvTypeError` (TypeError and AttributeError): ``irecv`` of a non-tensor
  (MindSpore has no check and fails with AttributeError).

Example:
    >>> try:
    ...     collie.comm_func.all_reduce(x)
    ... except collie.CommError as e:    # a peer died or called another operation
    ...     print(e)
"""

from collie import _collie

__all__ = ["CommError", "InitError", "CreateGroupError", "ReduceOpValueError", "IrecvTypeError"]

#: A peer died or called a different operation, or a system call failed (a RuntimeError).
CommError = _collie.CommError


class InitError(RuntimeError, ValueError):
    """init() failed: unknown backend or bad launch environment."""


class CreateGroupError(RuntimeError, ValueError):
    """create_group() was given ranks outside the world."""


class ReduceOpValueError(TypeError, RuntimeError):
    """An op string that is not one of sum, prod, min, max."""


class IrecvTypeError(TypeError, AttributeError):
    """irecv() was given something that is not a tensor."""
