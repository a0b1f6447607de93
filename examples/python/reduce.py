# reduce.py — comm_func.reduce's docstring example: the ranks' ones([2, 8]) are summed
# onto world rank 1; every other rank gets a shape-[1] array of zeros.
#
# Run:  build/bin/collie run -n 4 /usr/bin/python3 examples/python/reduce.py
# Prints:
#   Process with rank 0: [0.]
#   Process with rank 1: [[4. 4. 4. 4. 4. 4. 4. 4.]
#    [4. 4. 4. 4. 4. 4. 4. 4.]]
#   Process with rank 2: [0.]
#   Process with rank 3: [0.]
import numpy as np

import collie as comm
from example_util import print_in_rank_order

# Launch 4 processes.
comm.init()
dest_rank = 1
input_tensor = np.ones([2, 8]).astype(np.float32)
output = comm.comm_func.reduce(input_tensor, dst=dest_rank)
print_in_rank_order(f"Process with rank {comm.get_rank()}: {output}\n")
comm.release()
