# batch_isend_irecv.py — comm_func.batch_isend_irecv's docstring example: a ring. Each
# rank sends rank + 1 to the next rank and receives from the previous one, in one
# batch. The result has one array per op: a 0-d zero placeholder for the isend, the
# received array for the irecv.
#
# Run:  build/bin/collie run -n 2 /usr/bin/python3 examples/python/batch_isend_irecv.py
# Prints:
#   rank 0:
#   (0.0, 2.0)
#   rank 1:
#   (0.0, 1.0)
import numpy as np

import collie as comm
from example_util import print_in_rank_order

comm.init()
this_rank = comm.get_rank()
world_size = comm.get_group_size()
next_rank = (this_rank + 1) % world_size
prev_rank = (this_rank + world_size - 1) % world_size

send_tensor = np.array(this_rank + 1, dtype=np.float32)
recv_tensor = np.array(0.0, dtype=np.float32)

send_op = comm.comm_func.P2POp('isend', send_tensor, next_rank)
recv_op = comm.comm_func.P2POp('irecv', recv_tensor, prev_rank)

p2p_op_list = [send_op, recv_op]
output = comm.comm_func.batch_isend_irecv(p2p_op_list)
print_in_rank_order(f"rank {this_rank}:\n{tuple(float(t) for t in output)}\n")
comm.release()
