"""collie's dtype names, for ``recv_dtype`` of P2POp (like ``mindspore.float32``).

They are numpy's scalar types, plus :data:`bfloat16`: ``ml_dtypes.bfloat16`` when the
ml_dtypes package is installed, else a collie marker object (numpy has no bfloat16).

Example:
    >>> collie.comm_func.P2POp('irecv', (2, 2), 0, recv_dtype=collie.float32)
"""

import numpy as _np

from collie import _collie

bool_ = _np.bool_
int8 = _np.int8
uint8 = _np.uint8
int16 = _np.int16
int32 = _np.int32
int64 = _np.int64
float16 = _np.float16
float32 = _np.float32
float64 = _np.float64


class _BFloat16Type:
    """collie.bfloat16 when ml_dtypes is not installed (numpy has no bfloat16)."""

    _collie_dtype_name = "bfloat16"
    name = "bfloat16"

    def __repr__(self):
        return "collie.bfloat16"


try:  # pragma: no cover - depends on the environment
    import ml_dtypes as _ml_dtypes

    bfloat16 = _ml_dtypes.bfloat16
except ImportError:
    bfloat16 = _BFloat16Type()

DTYPES = (bool_, int8, uint8, int16, int32, int64, float16, bfloat16, float32, float64)


def is_dtype(obj):
    """True for numpy dtypes, numpy scalar types and collie.bfloat16 (not for strings)."""
    if isinstance(obj, _np.dtype) or isinstance(obj, _BFloat16Type):
        return True
    return isinstance(obj, type) and issubclass(obj, _np.generic) or obj is bfloat16


def dtype_name(obj):
    """collie's name of a dtype ("float32", "bfloat16", ...); TypeError if collie lacks it."""
    return _collie._dtype_name(obj)
