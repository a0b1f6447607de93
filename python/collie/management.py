"""collie.management — starting collie, groups and rank queries, as ``mindspore.communication``.

The functions keep MindSpore's names, argument order, defaults and exception types.
Ranks are world ranks unless a function says otherwise. A group's ranks keep the
order given to :func:`create_group`: group rank ``i`` is ``rank_ids[i]``, for every
operation and every query (MindSpore sorts the list for send/recv but not for the
rest; collie has the one map).

The default ``group`` of every function is the string ``"hccl_world_group"``
(MindSpore binds ``GlobalComm.WORLD_COMM_GROUP`` at import); it, and the names
``"nccl_world_group"``, ``"mccl_world_group"`` and ``"collie_world_group"``, all mean
the world.

Example (run with ``collie run -n 4 /usr/bin/python3 script.py``):
    >>> import collie as comm
    >>> comm.init()
    >>> comm.get_rank(), comm.get_group_size()
    (2, 4)
    >>> comm.create_group("pair", [3, 1])   # on ranks 3 and 1 (other ranks may call it too)
    >>> comm.get_group_rank_from_world_rank(3, "pair")
    0
    >>> comm.release()
"""

import atexit
import sys

from collie import _collie
from collie.errors import CreateGroupError, InitError

__all__ = [
    "GlobalComm",
    "GroupOptions",
    "init",
    "release",
    "get_rank",
    "get_local_rank",
    "get_group_size",
    "get_local_rank_size",
    "get_world_rank_from_group_rank",
    "get_group_rank_from_world_rank",
    "create_group",
    "destroy_group",
    "get_process_group_ranks",
    "get_comm_name",
    "HCCL_WORLD_COMM_GROUP",
    "NCCL_WORLD_COMM_GROUP",
    "MCCL_WORLD_COMM_GROUP",
]

HCCL_WORLD_COMM_GROUP = "hccl_world_group"
NCCL_WORLD_COMM_GROUP = "nccl_world_group"
MCCL_WORLD_COMM_GROUP = "mccl_world_group"
COLLIE_WORLD_COMM_GROUP = "collie_world_group"
_WORLD_NAMES = (HCCL_WORLD_COMM_GROUP, NCCL_WORLD_COMM_GROUP, MCCL_WORLD_COMM_GROUP, COLLIE_WORLD_COMM_GROUP)

_NOT_INITED = ("Distributed Communication has not been inited.You can't invoke this interface yet. "
               "Please call `init()` method first.")


class GlobalComm:
    """World-wide state, as MindSpore's: mutable class attributes.

    BACKEND is the backend name (``"hccl"`` until init(); then the name passed to
    init() if it was one of MindSpore's, else collie's backend, e.g. ``"shm"``).
    WORLD_COMM_GROUP is the world's name (``"hccl_world_group"`` until init(); then
    ``"<backend>_world_group"`` for MindSpore names, else ``"collie_world_group"``).
    INITED tells whether init() has succeeded (and release() has not run since).
    """

    BACKEND = "hccl"
    WORLD_COMM_GROUP = HCCL_WORLD_COMM_GROUP
    INITED = False
    CHECK_ENVS = True


class GroupOptions:
    """Options of create_group.

    Args:
        timeout_seconds (float): deadline of every wait of the group's operations;
            0 means the default (``COLLIE_TIMEOUT``, else 300 s).
        hccl_config (dict): accepted for MindSpore compatibility and ignored.
    """

    def __init__(self, timeout_seconds=0.0, hccl_config=None):
        self.timeout_seconds = timeout_seconds
        self.hccl_config = hccl_config if hccl_config is not None else {}

    def __repr__(self):
        return f"GroupOptions(timeout_seconds={self.timeout_seconds!r})"


def _get_group(group):
    """MindSpore's default-group rule: "hccl_world_group" means the current world."""
    if group == HCCL_WORLD_COMM_GROUP:
        return GlobalComm.WORLD_COMM_GROUP
    return group


def _is_world(group):
    return group in _WORLD_NAMES or group == GlobalComm.WORLD_COMM_GROUP


def _check_inited():
    if not _collie.is_initialized():
        raise RuntimeError(_NOT_INITED)


def _check_group_type(group, func):
    if not isinstance(group, str):
        raise TypeError(f"For '{func}', the argument 'group' must be type of string, "
                        f"but got 'group' type : {type(group)}.")


def _check_int(value, func, name):
    if not isinstance(value, int):
        raise TypeError(f"For '{func}', the argument '{name}' must be type of int, "
                        f"but got '{name}' type : {type(value)}.")


def init(backend_name=None):
    """Joins this process to the job its environment describes (``collie run`` sets it).

    Args:
        backend_name (str, optional): None or "" chooses from the environment; "shm";
            or MindSpore's "hccl", "nccl", "mccl" (accepted: they run on collie's
            default backend and name the world "<name>_world_group").

    Raises:
        TypeError: backend_name is not a str.
        InitError: (a RuntimeError and a ValueError) unknown backend or bad environment.
        CommError, TimeoutError: the peers did not join within the deadline.

    Calling init() again after success does nothing.
    """
    if backend_name is None:
        backend_name = ""
    if not isinstance(backend_name, str):
        raise TypeError(f"For 'init', the argument 'backend_name' must be a string, "
                        f"but got the type : {type(backend_name)}")
    try:
        _collie.init(backend_name)
    except ValueError as e:
        raise InitError(f"For 'init', {e}") from None
    GlobalComm.BACKEND = backend_name if backend_name in ("hccl", "nccl", "mccl") else _collie.backend_name()
    GlobalComm.WORLD_COMM_GROUP = _collie.world_group_name()
    GlobalComm.INITED = True
    # MindSpore also exports RANK_ID/RANK_SIZE here; collie does not: child processes
    # (a nested `collie run`, test harnesses) would inherit a stale world.


def release():
    """Leaves the job: waits for queued operations, destroys every group.

    init() may be called again afterwards. Does nothing before init().
    """
    _collie.release()
    GlobalComm.INITED = False


@atexit.register
def _release_at_exit():
    # Queued asynchronous operations hold references to their input arrays: finish
    # them while the interpreter is still whole (from then on collie leaks such
    # references instead of dropping them). Not after an uncaught exception: an
    # operation waiting for a peer would delay the exit (and the launcher's stopping
    # of the other ranks) until its deadline.
    if getattr(sys, "last_value", None) is not None:
        return
    try:
        if _collie.is_initialized():
            _collie.release()
    except Exception:  # noqa: BLE001 - nothing sensible to do at exit
        pass


def get_rank(group=GlobalComm.WORLD_COMM_GROUP):
    """Rank of this process in `group`.

    Before init(): RANK_ID (or COLLIE_RANK, RANK) from the environment, else 0.

    Raises:
        TypeError: group is not a str.
        RuntimeError: the group does not exist or does not contain this rank.
    """
    _check_group_type(group, "get_rank")
    return _collie.get_rank(_get_group(group))


def get_local_rank(group=GlobalComm.WORLD_COMM_GROUP):
    """Rank among the members of `group` on this host (before init(): LOCAL_RANK or 0)."""
    _check_group_type(group, "get_local_rank")
    return _collie.get_local_rank(_get_group(group))


def get_group_size(group=GlobalComm.WORLD_COMM_GROUP):
    """Number of ranks in `group` (before init(): RANK_SIZE or 1)."""
    _check_group_type(group, "get_group_size")
    return _collie.get_group_size(_get_group(group))


def get_local_rank_size(group=GlobalComm.WORLD_COMM_GROUP):
    """Number of members of `group` on this host (before init(): LOCAL_RANK_SIZE or 1)."""
    _check_group_type(group, "get_local_rank_size")
    return _collie.get_local_rank_size(_get_group(group))


def get_world_rank_from_group_rank(group, group_rank_id):
    """World rank of group rank `group_rank_id` of `group`.

    Raises:
        TypeError: group is not a str or group_rank_id not an int.
        RuntimeError: not initialised; unknown group; group_rank_id out of range.
    """
    _check_group_type(group, "get_world_rank_from_group_rank")
    _check_inited()
    _check_int(group_rank_id, "get_world_rank_from_group_rank", "group_rank_id")
    return _collie.get_world_rank_from_group_rank(group, group_rank_id)


def get_group_rank_from_world_rank(world_rank_id, group):
    """Group rank of world rank `world_rank_id` in `group` (its index in the rank list).

    Raises:
        TypeError: world_rank_id is not an int or group not a str.
        RuntimeError: not initialised; unknown group; world_rank_id not a member.
    """
    _check_group_type(group, "get_group_rank_from_world_rank")
    _check_inited()
    _check_int(world_rank_id, "get_group_rank_from_world_rank", "world_rank_id")
    return _collie.get_group_rank_from_world_rank(world_rank_id, group)


def create_group(group, rank_ids, options=None):
    """Creates the group `group` of the world ranks `rank_ids` (group rank i = rank_ids[i]).

    Collective over the members: every listed rank must call it. Other ranks may
    call it too (the group is then only recorded there: queries work, operations
    raise RuntimeError). The same name with the same ranks again is a no-op.

    Args:
        group (str): the name; not empty, not a world name.
        rank_ids (list[int]): world ranks, any order, no duplicates.
        options (GroupOptions, optional): e.g. a per-group timeout.

    Raises:
        TypeError: group not a str, rank_ids not a list of int, options not GroupOptions.
        RuntimeError: not initialised.
        ValueError: empty/world name, empty list, duplicates, the name already used
            with other ranks.
        CreateGroupError: (RuntimeError and ValueError) a rank outside the world.
    """
    _check_group_type(group, "create_group")
    _check_inited()
    if not isinstance(rank_ids, list):
        raise TypeError(f"For 'create_group', the argument 'rank_ids' must be type of list, "
                        f"but got 'rank_ids' type : {type(rank_ids)}.")
    for r in rank_ids:
        if not isinstance(r, int):
            raise TypeError(f"For 'create_group', the elements of 'rank_ids' must be int, but got {type(r)}.")
    if options is not None and not isinstance(options, GroupOptions):
        raise TypeError(f"For 'create_group', the argument 'options' must be type of GroupOptions, "
                        f"but got 'options' type : {type(options)}.")
    timeout = float(options.timeout_seconds) if options is not None else 0.0
    size = _collie.get_group_size(GlobalComm.WORLD_COMM_GROUP)
    outside = [r for r in rank_ids if r < 0 or r >= size]
    if outside and not _group_exists(group):
        raise CreateGroupError(f"Failed to create communication group for {group} with rank ids {rank_ids}: "
                               f"rank(s) {outside} are outside the world of {size} ranks.")
    _collie.create_group(group, rank_ids, timeout)


def _group_exists(group):
    try:
        _collie.get_process_group_ranks(group)
        return True
    except RuntimeError:
        return False


def destroy_group(group):
    """Destroys `group` (not collective).

    Raises:
        TypeError: group not a str.
        RuntimeError: not initialised.
        ValueError: the world group, or an unknown group.
    """
    if not isinstance(group, str):
        raise TypeError(f"For 'destroy_group', the argument 'group' must be type of string, "
                        f"but got 'group' type : {type(group)}.")
    _check_inited()
    _collie.destroy_group(group)


def get_process_group_ranks(group=GlobalComm.WORLD_COMM_GROUP):
    """World ranks of `group`, in creation order (the world: 0..N-1).

    Raises:
        TypeError: group not a str.
        RuntimeError: not initialised; unknown group.
    """
    _check_group_type(group, "get_process_group_ranks")
    _check_inited()
    return _collie.get_process_group_ranks(_get_group(group))


def get_comm_name(group=GlobalComm.WORLD_COMM_GROUP):
    """The communicator name of `group`: collie's groups are named by their own names."""
    _check_group_type(group, "get_comm_name")
    _check_inited()
    group = _get_group(group)
    _collie.get_group_size(group)  # RuntimeError for an unknown group
    return group
