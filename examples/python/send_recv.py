# send_recv.py — the docstring example of comm_func.send and comm_func.recv: ranks in
# the first half send ones([2, 2]) * 0.01 * (rank + 1) to rank + size/2, which receive
# into an array of that shape and dtype (its values are ignored) and print it.
#
# Run:  build/bin/collie run -n 2 /usr/bin/python3 examples/python/send_recv.py
# Prints:
#   rank1:
#   [[0.01 0.01]
#    [0.01 0.01]]
import numpy as np

from collie import get_group_size, get_rank, init, release
from collie.comm_func import recv, send
from example_util import print_in_rank_order

np.random.seed(1)
init()
rank = get_rank()
size = get_group_size()
x = np.ones([2, 2]).astype(np.float32) * 0.01 * (rank + 1)
x2 = np.ones([2, 2]).astype(np.float32)

text = ""
if rank < size / 2:
    send(x, rank + size // 2)
else:
    output = recv(x2, rank - size // 2)
    text = f"rank{rank}:\n{output}\n"
print_in_rank_order(text)
release()
