"""Communication failures reach Python as the right exception classes.

Each failure happens in its own two-rank group (a group is unusable after one), so
the world stays healthy for the next check.

Run: collie run -n 2 /usr/bin/python3 worker_failures.py
"""

import pathlib
import signal
import sys
import time

import numpy as np

import collie as comm
from collie import comm_func as cf

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from wutil import raises, run_sections, same  # noqa: E402


def timeout_section(rank, size):
    """A peer that never arrives: TimeoutError (builtin) after the group's deadline."""
    comm.create_group("late", [0, 1], comm.GroupOptions(timeout_seconds=1.5))
    if rank == 0:
        start = time.monotonic()
        e = raises(TimeoutError, cf.all_reduce, np.ones([4]), group="late")
        assert type(e) is TimeoutError, type(e)
        assert time.monotonic() - start < 30
    cf.barrier()  # rank 1 waits here meanwhile: the world is unaffected


def async_timeout_section(rank, size):
    """The same through an async handle: wait() raises, every time."""
    comm.create_group("late_async", [0, 1], comm.GroupOptions(timeout_seconds=1.5))
    if rank == 0:
        _, h = cf.all_gather_into_tensor(np.ones([2]), group="late_async", async_op=True)
        raises(TimeoutError, h.wait)
        raises(TimeoutError, h.wait)
        assert h.is_completed()
    cf.barrier()


def mismatch_section(rank, size):
    """Ranks calling different operations: CommError (a RuntimeError) naming both."""
    comm.create_group("mismatch", [0, 1], comm.GroupOptions(timeout_seconds=10.0))
    if rank == 0:
        e = raises(comm.CommError, cf.all_reduce, np.ones([4], np.float32), group="mismatch")
    else:
        e = raises(comm.CommError, cf.all_gather_into_tensor, np.ones([4], np.float32), group="mismatch")
    assert isinstance(e, RuntimeError)
    cf.barrier()


def eager_mismatch_section(rank, size):
    """Both ranks reduce to the other: a small rooted call returns on its non-roots
    without waiting, so neither sees the mismatch in the call; destroy_group checks
    the group's last call and raises CommError naming both roots."""
    comm.create_group("eager", [0, 1], comm.GroupOptions(timeout_seconds=10.0))
    cf.reduce(np.ones([4], np.float32), 1 - rank, group="eager")
    e = raises(comm.CommError, comm.destroy_group, "eager")
    assert "root 0" in str(e) and "root 1" in str(e), str(e)
    cf.barrier()


def size_mismatch_section(rank, size):
    """A receive naming another size than was sent: CommError."""
    comm.create_group("p2p_size", [0, 1], comm.GroupOptions(timeout_seconds=10.0))
    if rank == 0:
        cf.isend(np.ones([4], np.float32), 1, group="p2p_size")  # never matched: no wait
    else:
        raises(comm.CommError, cf.recv, np.ones([5], np.float32), 0, group="p2p_size")
    cf.barrier()


class Interrupted(Exception):
    pass


def _interrupt(signum, frame):
    raise Interrupted()


def interrupt_section(rank, size):
    """A signal handler's exception (Ctrl-C: KeyboardInterrupt) ends a wait for a late peer:
    of a handle, of a synchronous collective, of a synchronous rooted one.

    The operation itself stays queued and completes when the peer arrives.
    """
    if rank == 0:
        old = signal.signal(signal.SIGALRM, _interrupt)
        try:
            signal.setitimer(signal.ITIMER_REAL, 0.2)
            out, h = cf.irecv(np.zeros([1]), 1, tag=11)
            raises(Interrupted, h.wait)
            # Synchronous calls too, a collective and a rooted one. Each must end at
            # its alarm, not when rank 1 comes (2 s after the section began): a
            # liveness bound, 0.8 s beyond the alarm.
            for call, args in [(cf.all_reduce, (np.ones([3]),)), (cf.broadcast, (np.zeros([2]), 1))]:
                start = time.monotonic()
                signal.setitimer(signal.ITIMER_REAL, 0.2)
                raises(Interrupted, call, *args)
                waited = time.monotonic() - start
                assert waited < 1.0, f"{call.__name__} was interrupted only after {waited:.2f} s"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        h.wait()
        same(out, np.array([1.0]), "message after the interrupted wait")
    else:
        time.sleep(2.0)  # rank 0's three 0.2 s alarms fire well before
        cf.send(np.ones([1]), 0, tag=11)
        out, _ = cf.all_reduce(np.ones([3]))  # matches rank 0's interrupted (still running) one
        same(out, np.full([3], 2.0), "all_reduce whose partner was interrupted")
        out = cf.broadcast(np.full([2], 7.0), 1)  # rank 0's interrupted broadcast gets this
        same(out, np.full([2], 7.0), "broadcast whose receiver was interrupted")


if __name__ == "__main__":
    run_sections([timeout_section, async_timeout_section, mismatch_section, eager_mismatch_section,
                  size_mismatch_section, interrupt_section])
