#!/usr/bin/env python3
"""python_bench.py — collie's Python API against mpi4py (OpenMPI), one call at a time.

`collie bench` measures the C++ API; Python users pay for the interpreter, the
binding and the array conversions on top. This runs the same loop through
collie.comm_func and through mpi4py's buffer methods on numpy arrays and prints
both per size, with the ratio:

    /usr/bin/python3 scripts/python_bench.py                 # 2 ranks, 8 B to 64 KiB
    /usr/bin/python3 scripts/python_bench.py -n 4 --op all_reduce,send_recv -b 8 -e 1M -f 4

Each rank runs warm-up calls, then `--iters` calls each after a barrier, and
keeps the median; the table shows the median over ranks, best of `--rounds`
alternating rounds per side (the machine's speed drifts), and with several
rounds the range of the rounds' own speed-ups (rounds_x: each round's mpi4py
time over the same round's collie time, as `collie bench --rounds` pairs them).
Inputs hold rank+1, and every rank checks its last result against the closed
form: a wrong result fails the run. The calls are what each library's users write:

    op              collie (MindSpore's API)            mpi4py
    all_reduce      comm_func.all_reduce(x)             Allreduce(x, out)
    all_gather      all_gather_into_tensor(x)           Allgather(x, out)
    reduce_scatter  reduce_scatter_tensor(x)            Reduce_scatter_block(x, out)
    broadcast       broadcast(x, 0)                     Bcast(x) on a copy at non-roots
    reduce          reduce(x, 0)                        Reduce(x, out, root=0)
    all_to_all      all_to_all_single_with_output_shape Alltoall(x, out)
                    (x.shape, x)
    send_recv       batch_isend_irecv of two P2POps     Isend + Irecv + Waitall
                    (to the next rank, from the previous)
    isend_irecv     irecv, isend, both handles' wait()  the same as send_recv

collie returns a new array per call (MindSpore's API; large blocks come from a
cache); the mpi4py side writes into an output array made once per size (and a
non-root's broadcast buffer), as MPI programs do and as `collie bench`'s OpenMPI
side does. mpi4py comes from Debian (python3-mpi4py); without it, or with
--no-mpi, only collie's side runs.
"""

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv",
       "isend_irecv")
_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text):
    text = text.strip().upper().rstrip("B")
    scale = _UNITS.get(text[-1:], 1)
    return int(text[:-1] if scale > 1 else text) * scale


def size_name(n):
    for suffix, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{suffix}"
    return f"{n}B"


# ---- worker: one rank of one library ------------------------------------------

def make_calls(lib):
    """(rank, size, barrier, gather_medians, {op: call(x) -> result})."""
    import numpy as np
    if lib == "mpi4py":
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        outputs = {}  # (op, input size) -> the output array, made once as MPI programs do

        def output(op, x, count):
            key = (op, x.size)
            if key not in outputs:
                outputs[key] = np.zeros(count, x.dtype)
            return outputs[key]

        def send_recv(x):
            out = output("send_recv", x, x.size)
            MPI.Request.Waitall([comm.Isend(x, (rank + 1) % size), comm.Irecv(out, (rank - 1) % size)])
            return out

        def broadcast(x):
            buf = x if rank == 0 else output("broadcast", x, x.size)
            comm.Bcast(buf, 0)
            return buf

        def reduce(x):
            out = output("reduce", x, x.size)
            comm.Reduce(x, out, root=0)
            # A non-root's buffer is not written: it returns a shape-[1] zero
            # array, as comm_func.reduce does, made once like the outputs.
            return out if rank == 0 else output("reduce-nonroot", x, 1)

        def with_out(op, method, out_count):
            def call(x):
                out = output(op, x, out_count(x))
                method(x, out)
                return out
            return call

        calls = {
            "all_reduce": with_out("all_reduce", comm.Allreduce, lambda x: x.size),
            "all_gather": with_out("all_gather", comm.Allgather, lambda x: x.size * size),
            "reduce_scatter": with_out("reduce_scatter", comm.Reduce_scatter_block,
                                       lambda x: x.size // size),
            "broadcast": broadcast,
            "reduce": reduce,
            "all_to_all": with_out("all_to_all", comm.Alltoall, lambda x: x.size),
            "send_recv": send_recv,
            "isend_irecv": send_recv,
        }
        return rank, size, comm.Barrier, lambda m: comm.gather(m, 0), calls

    import collie
    from collie import comm_func as cf
    collie.init()
    rank, size = collie.get_rank(), collie.get_group_size()

    def isend_irecv(x):
        out, received = cf.irecv(x, (rank - 1) % size)
        cf.isend(x, (rank + 1) % size).wait()
        received.wait()
        return out

    def gather_medians(m):
        out, _ = cf.all_gather_into_tensor(np.array([m], np.float64))
        return out.tolist()

    calls = {
        "all_reduce": lambda x: cf.all_reduce(x)[0],
        "all_gather": lambda x: cf.all_gather_into_tensor(x)[0],
        "reduce_scatter": lambda x: cf.reduce_scatter_tensor(x)[0],
        "broadcast": lambda x: cf.broadcast(x, 0),
        "reduce": lambda x: cf.reduce(x, 0),
        "all_to_all": lambda x: cf.all_to_all_single_with_output_shape(x.shape, x)[0],
        "send_recv": lambda x: cf.batch_isend_irecv([cf.P2POp("isend", x, (rank + 1) % size),
                                                     cf.P2POp("irecv", x, (rank - 1) % size)])[1],
        "isend_irecv": isend_irecv,
    }
    return rank, size, cf.barrier, gather_medians, calls


def expected(op, rank, size, count):
    """The closed form of op's result on `rank` (inputs hold rank + 1), as a list."""
    if op in ("all_reduce", "reduce_scatter"):
        total = size * (size + 1) / 2
        return [total] * (count if op == "all_reduce" else count // size)
    if op == "all_gather":
        return [float(r + 1) for r in range(size) for _ in range(count)]
    if op == "broadcast":
        return [1.0] * count
    if op == "reduce":
        return [size * (size + 1) / 2] * count if rank == 0 else [0.0]
    if op == "all_to_all":
        return [float(r + 1) for r in range(size) for _ in range(count // size)]
    return [float((rank - 1) % size + 1)] * count  # send_recv, isend_irecv: the previous rank's


def run_worker(args):
    import numpy as np
    rank, size, barrier, gather_medians, calls = make_calls(args.worker)
    failed = False
    for op in args.op.split(","):
        call = calls[op]
        nbytes = args.b
        while nbytes <= args.e:
            count = max(1, nbytes // 4)
            if op in ("reduce_scatter", "all_to_all"):
                count = max(size, count // size * size)
            x = np.full(count, rank + 1, np.float32)
            for _ in range(args.warmup):
                call(x)
            times = []
            for _ in range(args.iters):
                barrier()
                start = time.perf_counter_ns()
                out = call(x)
                times.append(time.perf_counter_ns() - start)
            ok = np.asarray(out, np.float64).ravel().tolist() == expected(op, rank, size, count)
            if not ok:
                print(f"python_bench: rank {rank}: {op} of {nbytes} B through {args.worker} is wrong",
                      file=sys.stderr)
                failed = True
            medians = gather_medians(statistics.median(times) / 1000.0)
            if rank == 0:
                print(f"RESULT {op} {nbytes} {statistics.median(medians):.3f} {'ok' if ok else 'WRONG'}",
                      flush=True)
            nbytes *= args.f
    return 1 if failed else 0


# ---- driver: alternate the two sides, print the table ---------------------------

def have_mpi4py():
    return importlib.util.find_spec("mpi4py") is not None


def run_side(lib, args):
    """{(op, bytes): microseconds} from one round of one library's workers."""
    worker = [sys.executable, os.path.abspath(__file__), "--worker", lib, "--op", args.op,
              "-b", str(args.b), "-e", str(args.e), "-f", str(args.f),
              "--iters", str(args.iters), "--warmup", str(args.warmup)]
    env = dict(os.environ)
    if lib == "collie":
        cmd = [os.path.join(args.build, "bin", "collie"), "run", "-n", str(args.n), "--"] + worker
    else:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        cmd = ["mpirun", "--oversubscribe", "-n", str(args.n)] + worker
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
    results = {}
    for line in proc.stdout.splitlines():
        fields = line.split()
        if len(fields) == 5 and fields[0] == "RESULT":
            results[(fields[1], int(fields[2]))] = float(fields[3])
    if proc.returncode != 0 or "WRONG" in proc.stdout:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"python_bench: the {lib} side failed (exit code {proc.returncode})")
    return results


def round_speedups(rounds, key):
    """The lowest and highest of the rounds' own speed-ups for `key`, "0.86-0.94",
    from the rounds where both sides timed it; "-" if none did."""
    ratios = [r["mpi4py"][key] / r["collie"][key] for r in rounds
              if r["collie"].get(key) and r["mpi4py"].get(key)]
    return f"{min(ratios):.2f}-{max(ratios):.2f}" if ratios else "-"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=2, help="ranks (default 2)")
    parser.add_argument("--op", default=",".join(OPS), help="comma-separated ops (default: all)")
    parser.add_argument("-b", type=parse_size, default=8, help="smallest size in bytes (default 8)")
    parser.add_argument("-e", type=parse_size, default=64 << 10, help="largest size (default 64K)")
    parser.add_argument("-f", type=int, default=8, help="size factor (default 8)")
    parser.add_argument("--iters", type=int, default=2000, help="timed calls per size (default 2000)")
    parser.add_argument("--warmup", type=int, default=100, help="untimed calls first (default 100)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds per side (default 2)")
    parser.add_argument("--build", default="build", help="collie's build directory (default build)")
    parser.add_argument("--no-mpi", action="store_true", help="collie's side only")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per round (default 600)")
    parser.add_argument("--worker", choices=("collie", "mpi4py"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    for op in args.op.split(","):
        if op not in OPS:
            parser.error(f"unknown op {op!r} (ops: {', '.join(OPS)})")
    if args.b < 1 or args.e < args.b or args.f < 2 or args.n < 1:
        parser.error("need 1 <= -b <= -e, -f >= 2 and -n >= 1")
    if args.worker:
        return run_worker(args)

    sides = ["collie"]
    if not args.no_mpi:
        if have_mpi4py():
            sides.append("mpi4py")
        else:
            print("# mpi4py is not installed (apt-get install python3-mpi4py): collie's side only")
    rounds = []  # each round: {side: {(op, bytes): us}}
    for _ in range(args.rounds):
        rounds.append({side: run_side(side, args) for side in sides})
    best = {side: {} for side in sides}
    for r in rounds:
        for side in sides:
            for key, us in r[side].items():
                best[side][key] = min(us, best[side].get(key, us))
    paired = args.rounds > 1 and "mpi4py" in sides
    print(f"# python_bench: {args.n} ranks, float32, Python {sys.version.split()[0]}, "
          f"median of calls after a barrier, best of {args.rounds} rounds; results checked")
    header = f"{'op':<16}{'size':>8}{'collie_us':>12}"
    if "mpi4py" in sides:
        header += f"{'mpi4py_us':>12}{'speedup':>10}"
    if paired:
        header += f"{'rounds_x':>12}"
    print(header)
    for op, nbytes in sorted(best["collie"], key=lambda k: (OPS.index(k[0]), k[1])):
        us = best["collie"][(op, nbytes)]
        row = f"{op:<16}{size_name(nbytes):>8}{us:>12.2f}"
        if "mpi4py" in sides:
            theirs = best["mpi4py"].get((op, nbytes))
            row += f"{theirs:>12.2f}{theirs / us:>9.2f}x" if theirs else f"{'-':>12}{'-':>10}"
        if paired:
            row += f"{round_speedups(rounds, (op, nbytes)):>12}"
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
