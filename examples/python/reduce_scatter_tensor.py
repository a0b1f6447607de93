# reduce_scatter_tensor.py — comm_func.reduce_scatter_tensor's docstring example: the
# ranks' ones([8, 8]) are summed and rank r keeps rows [4r, 4r + 4) of the sum.
#
# Run:  build/bin/collie run -n 2 /usr/bin/python3 examples/python/reduce_scatter_tensor.py
# Each rank prints (rank 0 first):
#   [[2. 2. 2. 2. 2. 2. 2. 2.]
#    [2. 2. 2. 2. 2. 2. 2. 2.]
#    [2. 2. 2. 2. 2. 2. 2. 2.]
#    [2. 2. 2. 2. 2. 2. 2. 2.]]
import numpy as np

import collie as comm
from example_util import print_in_rank_order

comm.init()
input_tensor = np.ones([8, 8]).astype(np.float32)
output, _ = comm.comm_func.reduce_scatter_tensor(input_tensor)
print_in_rank_order(f"{output}\n")
comm.release()
