"""Arrays in shared memory, for single-copy collectives (collie/shared.h in C++).

An array from ``empty_shared`` lives in this rank's shared arena, which every other
rank of the job can map. When every rank of a collective passes such an array, the
shm backend skips the staging copies (each rank reads its peers' inputs and writes
their outputs in place), and the results are shared arrays too:

    import numpy as np
    import collie as comm

    comm.init()
    x = comm.empty_shared([1 << 24], np.float32)   # 64 MiB; contents unspecified
    x[:] = 1
    y, _ = comm.comm_func.all_reduce(x)            # single-copy; comm.is_shared(y) is True

Every rank passes shared arrays to a call, or none does: mixing them raises CommError
on every rank. On the mpi backend ``empty_shared`` returns an ordinary array.
"""

import numbers

import numpy as np

from collie import _collie


def empty_shared(shape, dtype=np.float32):
    """A new contiguous array of `shape` and `dtype` in the shared arena (contents unspecified).

    `shape` is an int or a sequence of ints; `dtype` a numpy dtype (or collie.bfloat16, which
    gives a collie.Tensor without ml_dtypes). RuntimeError before init()."""
    if isinstance(shape, numbers.Integral):
        shape = (int(shape),)
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"empty_shared: negative dimension in shape {shape}")
    return _collie.empty_shared(shape, dtype)


def is_shared(array):
    """True when `array`'s elements lie in this rank's shared arena (contiguous arrays only)."""
    return bool(_collie.is_shared(array))


__all__ = ["empty_shared", "is_shared"]
