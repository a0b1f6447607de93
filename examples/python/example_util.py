"""Helpers shared by the Python examples (like examples/example_util.h).

Ranks run concurrently, so their lines would interleave: print_in_rank_order prints
one block of text per rank, rank 0 first, with a barrier between turns.
"""

import sys

import collie as comm


def print_in_rank_order(text, group=comm.HCCL_WORLD_COMM_GROUP):
    """Every rank calls this; rank r's text appears after ranks 0..r-1's (may be empty)."""
    size = comm.get_group_size(group)
    me = comm.get_rank(group)
    for turn in range(size):
        if turn == me and text:
            sys.stdout.write(text)
            sys.stdout.flush()
        comm.comm_func.barrier(group)
