# gather_into_tensor.py — comm_func.gather_into_tensor's docstring example: every
# rank's arange(4).reshape(2, 2) is concatenated along dim 0 on rank 0; the other
# ranks get a shape-[1] array of zeros.
#
# Run:  build/bin/collie run -n 2 /usr/bin/python3 examples/python/gather_into_tensor.py
# Prints:
#   Process with rank 0: [[0. 1.]
#    [2. 3.]
#    [0. 1.]
#    [2. 3.]]
#   Process with rank 1: [0.]
import numpy as np

import collie as comm
from example_util import print_in_rank_order

# Launch 2 processes.
comm.init()
input = np.arange(4).reshape([2, 2]).astype(np.float32)  # noqa: A001 - the docstring's name
output = comm.comm_func.gather_into_tensor(tensor=input, dst=0)
print_in_rank_order(f"Process with rank {comm.get_rank()}: {output}\n")
comm.release()
