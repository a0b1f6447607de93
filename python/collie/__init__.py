"""collie — collective communication for numpy arrays, laid out like ``mindspore.communication``.

Code written for MindSpore's functional communication API runs with one change,
``import collie as comm`` instead of ``import mindspore.communication as comm``, and
numpy arrays instead of MindSpore tensors:

    import numpy as np
    import collie as comm

    comm.init()                                   # joins the job `collie run` started
    x = np.ones([2, 8], dtype=np.float32)
    y, _ = comm.comm_func.all_reduce(x)           # every element == group size
    g, _ = comm.comm_func.all_gather_into_tensor(x)
    comm.create_group("pair", [0, 1])
    comm.release()

Run it with ``collie run -n 4 /usr/bin/python3 script.py`` (the launcher makes this
package importable for its ranks).

Contents: management functions (init, release, get_rank, get_group_size, groups ...),
GlobalComm, the world-group names, ReduceOp, empty_shared/is_shared (arrays in shared
memory for single-copy collectives), collie.comm_func (the operations and
CommHandle), the exceptions (CommError, ...), dtype aliases for recv_dtype
(collie.float32, collie.bfloat16, ...) and collie.Tensor (for bfloat16 data).
"""

from collie import _collie
from collie._dtypes import (bfloat16, bool_, float16, float32, float64, int8, int16, int32, int64,
                            uint8)
from collie.errors import CommError, CreateGroupError, InitError, IrecvTypeError, ReduceOpValueError
from collie.management import (COLLIE_WORLD_COMM_GROUP, HCCL_WORLD_COMM_GROUP, MCCL_WORLD_COMM_GROUP,
                               NCCL_WORLD_COMM_GROUP, GlobalComm, GroupOptions, create_group, destroy_group,
                               get_comm_name, get_group_rank_from_world_rank, get_group_size, get_local_rank,
                               get_local_rank_size, get_process_group_ranks, get_rank,
                               get_world_rank_from_group_rank, init, release)
from collie.ops import ReduceOp
from collie.shared import empty_shared, is_shared
from collie import comm_func  # noqa: E402 - after management, which it imports
from collie import autograd  # noqa: E402 - collie.autograd: gradient rules (get_bprop, rule_table)

#: collie.Tensor: a C++ tensor (bfloat16 results without ml_dtypes; bfloat16 inputs).
Tensor = _collie.Tensor

__version__ = _collie.version()

__all__ = [
    "GlobalComm",
    "GroupOptions",
    "init",
    "release",
    "get_rank",
    "get_group_size",
    "get_local_rank",
    "get_local_rank_size",
    "get_world_rank_from_group_rank",
    "get_group_rank_from_world_rank",
    "create_group",
    "destroy_group",
    "get_process_group_ranks",
    "get_comm_name",
    "HCCL_WORLD_COMM_GROUP",
    "NCCL_WORLD_COMM_GROUP",
    "MCCL_WORLD_COMM_GROUP",
    "COLLIE_WORLD_COMM_GROUP",
    "ReduceOp",
    "empty_shared",
    "is_shared",
    "comm_func",
    "CommError",
    "InitError",
    "CreateGroupError",
    "ReduceOpValueError",
    "IrecvTypeError",
    "Tensor",
    "bool_",
    "int8",
    "uint8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
]
