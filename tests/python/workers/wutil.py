"""Helpers for the multi-rank worker scripts (run by `collie run -n N python3 <worker>`).

A worker runs named sections in order; every rank runs every section (collectives
must match). A failed check raises AssertionError: the rank exits non-zero, the
launcher stops the others and the pytest test shows the output. When all sections
pass every rank prints "WORKER OK rank <r> of <n>".
"""

import sys
import time

import numpy as np

import collie as comm
from collie import comm_func as cf

NUMPY_DTYPES = (np.bool_, np.int8, np.uint8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64)


def rank_and_size():
    return comm.get_rank(), comm.get_group_size()


def raises(exc_types, fn, *args, match=None, **kwargs):
    """Calls fn and checks that it raises one of exc_types (and `match` in the message)."""
    try:
        fn(*args, **kwargs)
    except exc_types as e:  # noqa: PERF203
        if match is not None and match not in str(e):
            raise AssertionError(f"{fn.__name__}: message {str(e)!r} lacks {match!r}") from e
        return e
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"{fn.__name__} raised {type(e).__name__}: {e}; expected {exc_types}") from e
    raise AssertionError(f"{fn.__name__} did not raise {exc_types}")


def same(actual, expected, what=""):
    """Exact equality of dtype, shape and values."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert np.array_equal(actual, expected), f"{what}:\n{actual}\n!=\n{expected}"


def is_new_array(out, *inputs):
    """A result: a numpy array that owns (via a capsule) memory not shared with any input."""
    assert isinstance(out, np.ndarray), type(out)
    for x in inputs:
        if isinstance(x, np.ndarray):
            assert not np.shares_memory(out, x), "result shares memory with an input"
    assert out.flags.writeable


def run_sections(sections):
    comm.init()
    rank, size = rank_and_size()
    for section in sections:
        start = time.monotonic()
        section(rank, size)
        cf.barrier()
        if rank == 0:
            print(f"ok {section.__name__} ({time.monotonic() - start:.2f}s)", flush=True)
    comm.release()
    print(f"WORKER OK rank {rank} of {size}", flush=True)
    sys.stdout.flush()
