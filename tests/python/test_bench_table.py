"""scripts/bench_table.py: the best of repeated runs per (op, size), for collie
and OpenMPI separately, in the one-sweep and the side-by-side (--beside) tables,
and the range of the rounds' paired speed-ups where the runs kept them."""
import json
import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "bench_table.py"


def run_file(tmp_path, name, ranks, rows, paired=None):
    """A run's JSON; `paired`: each row's per-round speed-ups (speedup_rounds)."""
    path = tmp_path / name
    results = [{"op": op, "bytes": nbytes, "collie_us": c, "collie_busbw_gbps": nbytes / c / 1e3,
                "mpi_us": m, "mpi_busbw_gbps": nbytes / m / 1e3, "check": "ok"}
               for op, nbytes, c, m in rows]
    for result, speedups in zip(results, paired or []):
        result["speedup_rounds"] = speedups
    path.write_text(json.dumps({"ranks": ranks, "timing": "loop", "results": results}))
    return str(path)


def table(*args):
    out = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_best_of_runs_for_each_side(tmp_path):
    a = run_file(tmp_path, "a.json", 2, [("all_reduce", 8, 0.5, 0.2), ("broadcast", 4096, 2.0, 4.0)])
    b = run_file(tmp_path, "b.json", 2, [("all_reduce", 8, 0.4, 0.3), ("broadcast", 4096, 3.0, 3.0)])
    lines = table(a, b)
    assert lines[0].startswith("| op | size | collie µs | OpenMPI µs | speed-up |")
    # collie's best (0.40, run b) against OpenMPI's best (0.20, run a)
    assert lines[2] == "| all_reduce | 8B | 0.40 | 0.20 | 0.50× | 0.02 | 0.04 |"
    assert lines[3] == "| broadcast | 4K | 2.00 | 3.00 | 1.50× | 2.05 | 1.37 |"


def test_paired_speedups_of_every_run_give_a_range(tmp_path):
    rows = [("all_gather", 8, 0.5, 0.4), ("all_gather", 64, 0.6, 0.6)]
    a = run_file(tmp_path, "a.json", 2, rows, paired=[[0.8, 0.95], [1.1]])
    b = run_file(tmp_path, "b.json", 2, rows, paired=[[0.7], []])
    lines = table(a, b)
    assert lines[0].endswith("| OpenMPI busbw GB/s | speed-up by round |")
    assert lines[1] == "|---|---|---|---|---|---|---|---|"
    assert lines[2] == "| all_gather | 8B | 0.50 | 0.40 | 0.80× | 0.02 | 0.02 | 0.70–0.95× |"
    assert lines[3] == "| all_gather | 64B | 0.60 | 0.60 | 1.00× | 0.11 | 0.11 | 1.10–1.10× |"
    # Runs without per-round times (before the fifty-third session): no column.
    assert "by round" not in table(run_file(tmp_path, "old.json", 2, rows))[0]


def test_beside_puts_two_sweeps_side_by_side(tmp_path):
    two = run_file(tmp_path, "two.json", 2, [("reduce", 64, 0.5, 0.25), ("reduce", 1 << 20, 80.0, 160.0)])
    four = run_file(tmp_path, "four.json", 4, [("reduce", 64, 2.0, 1.0)])
    lines = table(two, "--beside", four)
    assert lines[0] == ("| op | size | 2 ranks: collie µs | OpenMPI µs | speed-up "
                        "| 4 ranks: collie µs | OpenMPI µs | speed-up |")
    assert lines[2] == "| reduce | 64B | 0.50 | 0.25 | 0.50× | 2.00 | 1.00 | 0.50× |"
    assert lines[3] == "| reduce | 1M | 80.00 | 160.00 | 2.00× | | | |"  # no 4-rank row


def test_beside_rejects_mixed_rank_counts(tmp_path):
    two = run_file(tmp_path, "two.json", 2, [("reduce", 64, 0.5, 0.25)])
    four = run_file(tmp_path, "four.json", 4, [("reduce", 64, 2.0, 1.0)])
    out = subprocess.run([sys.executable, str(SCRIPT), two, four, "--beside", four],
                         capture_output=True, text=True)
    assert out.returncode != 0 and "different rank counts" in out.stderr
