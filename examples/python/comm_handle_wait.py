# comm_handle_wait.py — CommHandle.wait's docstring example: an asynchronous all_reduce
# returns at once with (output, handle); the output is valid after handle.wait().
#
# Run:  build/bin/collie run -n 2 /usr/bin/python3 examples/python/comm_handle_wait.py
# Each rank prints (rank 0 first):
#   [[2. 2. 2. 2. 2. 2. 2. 2.]
#    [2. 2. 2. 2. 2. 2. 2. 2.]]
import numpy as np

import collie as comm
from collie.comm_func import all_reduce
from example_util import print_in_rank_order

comm.init()
input_tensor = np.ones([2, 8]).astype(np.float32)
output, handle = all_reduce(input_tensor, async_op=True)
handle.wait()  # blocks until the reduction is complete
print_in_rank_order(f"{output}\n")
comm.release()
