# p2p_op.py — the P2POp docstring example: describing point-to-point operations for
# batch_isend_irecv. Nothing is sent; the ops are only constructed. `op` is the name
# 'isend'/'irecv' or the function comm_func.isend/irecv; an irecv is described by a
# template array (its shape and dtype) or by a shape tuple and recv_dtype.
#
# Run:  /usr/bin/python3 examples/python/p2p_op.py   (needs no launcher: no communication)
# Prints:
#   send_op: P2POp(op='isend', shape=(), peer=1, group=None, tag=0)
#   recv_op: P2POp(op='irecv', shape=(), peer=0, group=None, tag=0)
#   recv_op (by shape): P2POp(op='irecv', shape=(), peer=0, group=None, tag=0) float32
import numpy as np

import collie as comm

send_tensor = np.array(1.0, dtype=np.float32)
send_op = comm.comm_func.P2POp('isend', send_tensor, 1)
send_op = comm.comm_func.P2POp(comm.comm_func.isend, send_tensor, 1)
recv_tensor = np.array(0.0, dtype=np.float32)
recv_op = comm.comm_func.P2POp('irecv', recv_tensor, 0)
recv_op = comm.comm_func.P2POp(comm.comm_func.irecv, recv_tensor, 0)
print(f"send_op: {send_op}")
print(f"recv_op: {recv_op}")
recv_op = comm.comm_func.P2POp('irecv', (), 0, recv_dtype=comm.float32)
print(f"recv_op (by shape): {recv_op} {np.dtype(recv_op.recv_dtype)}")
