"""bench_rounds_test.py COLLIE_CLI: `collie bench --compare mpi --rounds 3` keeps
every round of both sides and pairs them: in the JSON each size holds three
medians per side, its speed-up per round is that round's OpenMPI median over
its collie median, and the best-of columns are the lowest of those medians; the
CSV's speedup_round_min/max and the table's rounds_x column give the range of
the same speed-ups. Never a speed check: only how the numbers fit together."""
import csv
import json
import pathlib
import subprocess
import sys
import tempfile

ROUNDS = 3


def shown_within(speedup):
    """How far the table's two-decimal speed-up may lie from one computed from
    the JSON: half a hundredth, plus the JSON's six significant digits (at most
    5e-6 relative) on each of the two medians it divides."""
    return 0.005 + 1e-5 * speedup + 1e-9


def main(cli):
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp)
        run = subprocess.run(
            [cli, "bench", "-n", "2", "--op", "all_gather,send_recv", "-b", "8", "-e", "512",
             "-f", "8", "-w", "1", "--iters", "5", "--compare", "mpi", "--rounds", str(ROUNDS),
             "--json", str(out / "r.json"), "--csv", str(out / "r.csv")],
            capture_output=True, text=True, timeout=170)
        assert run.returncode == 0, run.stdout + run.stderr
        results = json.loads((out / "r.json").read_text())["results"]
        with open(out / "r.csv") as f:
            csv_rows = {(r["op"], int(r["bytes"])): r for r in csv.DictReader(f)}
        table = {(line.split()[0], line.split()[1]): line.split()
                 for line in run.stdout.splitlines() if line and not line.startswith("#")}

    assert [(r["op"], r["bytes"]) for r in results] == [
        (op, b) for op in ("all_gather", "send_recv") for b in (8, 64, 512)]
    for r in results:
        where = f"{r['op']} {r['bytes']} B"
        collie, mpi = r["collie_us_rounds"], r["mpi_us_rounds"]
        assert len(collie) == ROUNDS and len(mpi) == ROUNDS, where
        assert all(t > 0 for t in collie + mpi), where
        assert r["collie_us"] == min(collie) and r["mpi_us"] == min(mpi), where
        paired = [m / c for c, m in zip(collie, mpi)]
        assert len(r["speedup_rounds"]) == ROUNDS, where
        for got, want in zip(r["speedup_rounds"], paired):
            assert abs(got - want) <= 1e-4 * want, (where, r["speedup_rounds"], paired)
        row = csv_rows[(r["op"], r["bytes"])]
        assert abs(float(row["speedup_round_min"]) - min(paired)) <= 1e-4 * min(paired), where
        assert abs(float(row["speedup_round_max"]) - max(paired)) <= 1e-4 * max(paired), where
        size = {8: "8B", 64: "64B", 512: "512B"}[r["bytes"]]
        shown = table[(r["op"], size)][-1]  # rounds_x, the last column: "0.86-0.94"
        lo, hi = (float(x) for x in shown.split("-"))
        # The table rounds to 0.01; `paired` comes from the JSON's medians,
        # written to six significant digits, so a large speed-up (one OpenMPI
        # round that stalled for milliseconds gave 3435.14) carries their
        # relative rounding as well.
        assert abs(lo - min(paired)) <= shown_within(min(paired)), (where, shown, paired)
        assert abs(hi - max(paired)) <= shown_within(max(paired)), (where, shown, paired)
    print(f"bench_rounds_test: {len(results)} sizes, {ROUNDS} paired rounds each")


if __name__ == "__main__":
    main(sys.argv[1])
