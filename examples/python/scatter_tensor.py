# scatter_tensor.py — comm_func.scatter_tensor's docstring example: rank 0's
# arange(8).reshape(4, 2) is split along dim 0; rank r receives rows [2r, 2r + 2).
# Every rank passes an array of the same shape and dtype; only src's values are used.
#
# Run:  build/bin/collie run -n 2 /usr/bin/python3 examples/python/scatter_tensor.py
# Prints:
#   # rank_0
#   [[0. 1.]
#    [2. 3.]]
#   # rank_1
#   [[4. 5.]
#    [6. 7.]]
import numpy as np

import collie as comm
from example_util import print_in_rank_order

# Launch 2 processes.
comm.init()
input = np.arange(8).reshape([4, 2]).astype(np.float32)  # noqa: A001 - the docstring's name
out = comm.comm_func.scatter_tensor(tensor=input, src=0)
print_in_rank_order(f"# rank_{comm.get_rank()}\n{out}\n")
comm.release()
