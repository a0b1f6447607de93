"""scripts/python_bench.py's pairing of rounds: each round's speed-up is that
round's mpi4py time over the same round's collie time, and the table shows
their range."""
import importlib.util
import pathlib

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "python_bench.py"


def load_script():
    spec = importlib.util.spec_from_file_location("python_bench", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_round_speedups_pair_each_round_and_give_their_range():
    bench = load_script()
    key = ("all_reduce", 8)
    rounds = [{"collie": {key: 2.0}, "mpi4py": {key: 1.0}},
              {"collie": {key: 1.0}, "mpi4py": {key: 1.5}},
              {"collie": {key: 1.0}, "mpi4py": {key: 0.9}}]
    # 0.5, 1.5 and 0.9; the best of each side (1.0 against 0.9) would say 0.90.
    assert bench.round_speedups(rounds, key) == "0.50-1.50"


def test_round_speedups_skip_rounds_where_a_side_lacks_the_size():
    bench = load_script()
    key = ("send_recv", 64)
    rounds = [{"collie": {key: 2.0}, "mpi4py": {}},
              {"collie": {}, "mpi4py": {key: 3.0}},
              {"collie": {key: 4.0}, "mpi4py": {key: 3.0}}]
    assert bench.round_speedups(rounds, key) == "0.75-0.75"
    assert bench.round_speedups(rounds[:2], key) == "-"
