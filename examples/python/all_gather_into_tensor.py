# all_gather_into_tensor.py — comm_func.all_gather_into_tensor's docstring example: each
# rank's ones([2, 8]) are concatenated along dim 0 into a [4, 8] array on every rank.
#
# Run:  build/bin/collie run -n 2 /usr/bin/python3 examples/python/all_gather_into_tensor.py
# Each rank prints (rank 0 first):
#   [[1. 1. 1. 1. 1. 1. 1. 1.]
#    [1. 1. 1. 1. 1. 1. 1. 1.]
#    [1. 1. 1. 1. 1. 1. 1. 1.]
#    [1. 1. 1. 1. 1. 1. 1. 1.]]
import numpy as np

import collie as comm
from example_util import print_in_rank_order

comm.init()
input_tensor = np.ones([2, 8]).astype(np.float32)
output, _ = comm.comm_func.all_gather_into_tensor(input_tensor)
print_in_rank_order(f"{output}\n")
comm.release()
