# barrier.py — comm_func.barrier's docstring example: every rank waits until all ranks
# have entered the barrier, then prints.
#
# Run:  build/bin/collie run -n 2 /usr/bin/python3 examples/python/barrier.py
# Each rank prints:
#   barrier finish!
import collie as comm

# Launch 2 processes.
comm.init()
comm.comm_func.barrier()
print("barrier finish!", flush=True)
comm.release()
