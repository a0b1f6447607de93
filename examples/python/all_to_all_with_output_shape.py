# all_to_all_with_output_shape.py — comm_func.all_to_all_with_output_shape's docstring
# example: input i goes to rank i; output i (of the given shape) comes from rank i.
#   rank 0 sends [1., [[2, 3], [4, 5]]] and expects shapes [(), (2,)]
#   rank 1 sends [[2, 2], [4, 5, 6, 7]] and expects shapes [(2, 2), (4,)]
#
# Run:  build/bin/collie run -n 2 /usr/bin/python3 examples/python/all_to_all_with_output_shape.py
# Prints:
#   rank 0:
#   (1.0,
#    [2. 2.])
#   rank 1:
#   ([[2. 3.]
#    [4. 5.]],
#    [4. 5. 6. 7.])
import numpy as np

import collie as comm
from example_util import print_in_rank_order

comm.init()
this_rank = comm.get_rank()
if this_rank == 0:
    send_tensor_list = [np.array(1.0), np.array([[2, 3], [4, 5.0]])]
    recv_tensor_list = [(), (2,)]
if this_rank == 1:
    send_tensor_list = [np.array([2, 2.0]), np.array([4, 5, 6, 7.0])]
    recv_tensor_list = [(2, 2), (4,)]
output, _ = comm.comm_func.all_to_all_with_output_shape(recv_tensor_list, send_tensor_list)
print_in_rank_order(f"rank {this_rank}:\n(" + ",\n ".join(str(t) for t in output) + ")\n")
comm.release()
