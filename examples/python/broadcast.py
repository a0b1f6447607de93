# broadcast.py — comm_func.broadcast's docstring example: every rank receives rank 0's
# arange(8).reshape(2, 4). (The docstring passes the same data on every rank; here
# the other ranks pass zeros to show that only src's values travel.)
#
# Run:  build/bin/collie run -n 2 /usr/bin/python3 examples/python/broadcast.py
# Each rank prints (rank 0 first):
#   [[0. 1. 2. 3.]
#    [4. 5. 6. 7.]]
import numpy as np

import collie as comm
from example_util import print_in_rank_order

# Launch 2 processes.
comm.init()
data = np.arange(8).reshape([2, 4]).astype(np.float32)
if comm.get_rank() != 0:
    data = np.zeros_like(data)
out = comm.comm_func.broadcast(tensor=data, src=0)
print_in_rank_order(f"{out}\n")
comm.release()
