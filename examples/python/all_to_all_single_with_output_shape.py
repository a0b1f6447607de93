# all_to_all_single_with_output_shape.py — the docstring example of
# comm_func.all_to_all_single_with_output_shape: rank r's input [0, 1] + 2r is split
# into equal parts along dim 0; part i goes to rank i; the parts received are
# concatenated. (float32 here, so that it prints like the docstring's float tensors.)
#
# Run:  build/bin/collie run -n 2 /usr/bin/python3 examples/python/all_to_all_single_with_output_shape.py
# Prints:
#   rank 0:
#   [0. 2.]
#   rank 1:
#   [1. 3.]
import numpy as np

import collie as comm
from example_util import print_in_rank_order

comm.init()
rank = comm.get_rank()
input = np.array([0, 1], dtype=np.float32) + rank * 2  # noqa: A001 - the docstring's name
output_shape = (2,)
result, _ = comm.comm_func.all_to_all_single_with_output_shape(output_shape, input)
print_in_rank_order(f"rank {rank}:\n{result}\n")
comm.release()
