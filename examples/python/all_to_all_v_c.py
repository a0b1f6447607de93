# all_to_all_v_c.py — comm_func.all_to_all_v_c's docstring example: send_count_matrix
# [0, 3, 3, 0] says rank 0 sends 3 rows to rank 1 and rank 1 sends 3 rows to rank 0;
# the rows received are written into `output` (in place). Input: [0, 1, 2] * rank.
#
# Run:  build/bin/collie run -n 2 /usr/bin/python3 examples/python/all_to_all_v_c.py
# Prints:
#   rank 0:
#   [0. 1. 2.]
#   rank 1:
#   [0. 0. 0.]
import numpy as np

import collie as comm
from example_util import print_in_rank_order

comm.init()
rank = comm.get_rank()
input = np.array([0, 1, 2], dtype=np.float32) * rank  # noqa: A001 - the docstring's name
output = np.zeros([3], dtype=np.float32)
send_count_matrix = [0, 3, 3, 0]
comm.comm_func.all_to_all_v_c(output, input, send_count_matrix)
print_in_rank_order(f"rank {rank}:\n{output}\n")
comm.release()
