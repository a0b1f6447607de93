# isend_irecv.py — the docstring example of comm_func.isend and comm_func.irecv: like
# send_recv.py, but asynchronous: isend returns a handle, irecv returns (array, handle)
# and the array is valid after handle.wait().
#
# Run:  build/bin/collie run -n 2 /usr/bin/python3 examples/python/isend_irecv.py
# Prints:
#   rank1:
#   [[0.01 0.01]
#    [0.01 0.01]]
import numpy as np

from collie import get_group_size, get_rank, init, release
from collie.comm_func import irecv, isend
from example_util import print_in_rank_order

np.random.seed(1)
init()
rank = get_rank()
size = get_group_size()
x = np.ones([2, 2]).astype(np.float32) * 0.01 * (rank + 1)
x2 = np.ones([2, 2]).astype(np.float32)

text = ""
if rank < size / 2:
    handle = isend(x, rank + size // 2)
    handle.wait()
else:
    output, handle = irecv(x2, rank - size // 2)
    handle.wait()
    text = f"rank{rank}:\n{output}\n"
print_in_rank_order(text)
release()
