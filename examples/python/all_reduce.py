# all_reduce.py — comm_func.all_reduce's docstring example: every rank contributes
# ones([2, 8]) and every rank receives the element-wise sum.
#
# Run:  build/bin/collie run -n 2 /usr/bin/python3 examples/python/all_reduce.py
# Each rank prints (rank 0 first):
#   [[2. 2. 2. 2. 2. 2. 2. 2.]
#    [2. 2. 2. 2. 2. 2. 2. 2.]]
import numpy as np

import collie as comm
from example_util import print_in_rank_order

comm.init()
input_tensor = np.ones([2, 8]).astype(np.float32)
output, _ = comm.comm_func.all_reduce(input_tensor)  # synchronous: the handle is None
print_in_rank_order(f"{output}\n")
comm.release()
