"""Multi-rank tests: each launches a worker script with `collie run -n N` and checks
that every rank reports success (the workers assert; see tests/python/workers/)."""

import os
import subprocess
import sys
import time

import pytest

from conftest import EXAMPLES, WORKERS


def assert_workers_ok(proc, n):
    report = f"exit code {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == 0, report
    for rank in range(n):
        assert f"WORKER OK rank {rank} of {n}" in proc.stdout, report


@pytest.mark.parametrize("n", [2, 4])
def test_docstring_examples(run_ranks, n):
    """Every examples/python script (= the docstring examples) prints the docstring's output."""
    assert_workers_ok(run_ranks(n, WORKERS / "worker_examples.py", EXAMPLES), n)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_operations(run_ranks, n):
    """dtypes, non-contiguous views, async handles, sub-groups, p2p tags, GIL release, errors."""
    assert_workers_ok(run_ranks(n, WORKERS / "worker_ops.py"), n)


@pytest.mark.parametrize("n", [2, 3])
def test_shared_arrays(run_ranks, n):
    """collie.empty_shared arrays through every collective (the single-copy path)."""
    assert_workers_ok(run_ranks(n, WORKERS / "worker_shared.py"), n)


def test_communication_failures(run_ranks):
    """TimeoutError, CommError (mismatched ops, mismatched p2p sizes) from C++ to Python."""
    assert_workers_ok(run_ranks(2, WORKERS / "worker_failures.py"), 2)


def test_launcher_makes_package_importable(launcher):
    """`collie run -n N python3 script.py` needs no PYTHONPATH: the launcher provides it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    script = ("import collie, numpy as np; collie.init(); "
              "y, _ = collie.comm_func.all_reduce(np.ones(2)); assert (y == 2).all(); "
              "import sys; sys.stdout.write(f'imported {collie.get_rank()}\\n'); collie.release()")
    proc = subprocess.run([str(launcher), "run", "-n", "2", sys.executable, "-c", script], capture_output=True,
                          text=True, timeout=120, env=env, check=False)
    if proc.returncode != 0 and "No module named 'collie'" in proc.stderr:
        pytest.fail(f"the launcher did not make the package importable:\n{proc.stderr}")
    assert proc.returncode == 0, proc.stderr
    assert "imported 0" in proc.stdout and "imported 1" in proc.stdout


def test_example_without_launcher():
    """p2p_op.py communicates nothing and runs as a plain script."""
    proc = subprocess.run([sys.executable, str(EXAMPLES / "p2p_op.py")], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert "send_op: P2POp(op='isend', shape=(), peer=1, group=None, tag=0)" in proc.stdout


def test_every_example_documents_how_to_run():
    for script in sorted(EXAMPLES.glob("*.py")):
        if script.name == "example_util.py":
            continue
        head = script.read_text().splitlines()[:20]
        assert head[0].startswith(f"# {script.name} — "), script
        assert any(line.startswith("# Run:") for line in head), script
        assert any("print" in line.lower() for line in head), script


EXIT_SCRIPT = """
import sys, numpy as np, collie as comm
from collie import comm_func as cf
comm.init()
rank = comm.get_rank()
mode = sys.argv[1]
out, h = cf.all_reduce(np.ones(4), async_op=True)  # never waited for: release() at exit finishes it
if mode == "raise" and rank == 1:
    cf.irecv(np.zeros(1), 0)  # never matched
    raise SystemError("rank 1 fails")
cf.barrier()
sys.stdout.write(f"done {rank}\\n")
"""


@pytest.mark.parametrize("mode", ["clean", "raise"])
def test_exit_without_release(run_ranks, tmp_path, mode):
    """Programs need not call release(); an uncaught exception exits at once (no drain)."""
    script = tmp_path / "exit.py"
    script.write_text(EXIT_SCRIPT)
    start = time.monotonic()
    proc = run_ranks(2, script, mode, env={"COLLIE_TIMEOUT": "60"})
    elapsed = time.monotonic() - start
    if mode == "clean":
        assert proc.returncode == 0, proc.stderr
        assert "done 0" in proc.stdout and "done 1" in proc.stdout
    else:
        assert proc.returncode != 0 and "rank 1 fails" in proc.stderr, proc.stderr
        assert elapsed < 30, f"took {elapsed:.1f}s: the failing rank waited for its pending receive"
