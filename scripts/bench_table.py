#!/usr/bin/python3
"""Turns `collie bench --json` files into the markdown tables of docs/performance.md.

    scripts/bench_table.py PRIVATE.json... [--shared SHARED.json...]
    scripts/bench_table.py LEFT.json... --beside RIGHT.json...

Each group of files holds repeated runs of one sweep; for every (op, size) the
best (lowest) median of collie and, separately, of OpenMPI over those runs is
shown, with speed-up = OpenMPI / collie and busbw from the collie time. With
--shared (runs of the same sweep with `collie bench --shared`), two more columns
give collie's time on tensors from empty_shared() and its speed-up over the best
OpenMPI time of all runs. Where the runs kept each round's times (`collie bench
--compare mpi` since the fifty-third session), a column gives the range of the
rounds' own speed-ups over all the runs: each is one round's OpenMPI time over
the same round's collie time, the two taken seconds apart. With --beside (the
same sweep with another rank count or timing, e.g. 2 and 4 ranks with --loop),
the two sweeps' times and speed-ups stand side by side, each headed by its rank
count.
"""
import json
import sys


def size_name(b):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift}{unit}"
    return f"{b}B"


def best(paths):
    """(op, bytes) -> the best collie and the best OpenMPI result over the runs,
    and under "paired" every round's own speed-up in them."""
    rows = {}
    for path in paths:
        with open(path) as f:
            for r in json.load(f)["results"]:
                key = (r["op"], r["bytes"])
                b = rows.setdefault(key, dict(r, paired=[]))
                b["paired"] += r.get("speedup_rounds", [])
                if r["collie_us"] < b["collie_us"]:
                    b["collie_us"], b["collie_busbw_gbps"] = r["collie_us"], r["collie_busbw_gbps"]
                if r["mpi_us"] < b["mpi_us"]:
                    b["mpi_us"], b["mpi_busbw_gbps"] = r["mpi_us"], r["mpi_busbw_gbps"]
    return rows


def paired_range(row):
    """The lowest and highest of a size's paired speed-ups, as "0.78–0.92×"."""
    lo, hi = min(row["paired"]), max(row["paired"])
    return f"{lo:.2f}–{hi:.2f}×"


def ranks_of(paths):
    counts = set()
    for path in paths:
        with open(path) as f:
            counts.add(json.load(f)["ranks"])
    if len(counts) != 1:
        sys.exit(f"bench_table: runs of different rank counts in one group: {sorted(counts)}")
    return counts.pop()


def split_at(args, flag):
    if flag not in args:
        return args, []
    i = args.index(flag)
    return args[:i], args[i + 1:]


def print_beside(left_paths, right_paths):
    left, right = best(left_paths), best(right_paths)
    nl, nr = ranks_of(left_paths), ranks_of(right_paths)
    print(f"| op | size | {nl} ranks: collie µs | OpenMPI µs | speed-up "
          f"| {nr} ranks: collie µs | OpenMPI µs | speed-up |")
    print("|---|---|---|---|---|---|---|---|")
    for key, a in left.items():
        b = right.get(key)
        row = (f"| {a['op']} | {size_name(a['bytes'])} | {a['collie_us']:.2f} | {a['mpi_us']:.2f} | "
               f"{a['mpi_us'] / a['collie_us']:.2f}× |")
        row += (f" {b['collie_us']:.2f} | {b['mpi_us']:.2f} | {b['mpi_us'] / b['collie_us']:.2f}× |"
                if b else " | | |")
        print(row)


def print_private_and_shared(private_paths, shared_paths):
    private, shared = best(private_paths), best(shared_paths)
    rounds = any(r["paired"] for r in private.values())
    head = "| op | size | collie µs | OpenMPI µs | speed-up | collie busbw GB/s | OpenMPI busbw GB/s |"
    rule = "|---|---|---|---|---|---|---|"
    if rounds:
        head += " speed-up by round |"
        rule += "---|"
    if shared:
        head += " shared µs | shared speed-up |"
        rule += "---|---|"
    print(head)
    print(rule)
    for key, r in private.items():
        mpi = min(r["mpi_us"], shared[key]["mpi_us"]) if key in shared else r["mpi_us"]
        row = (f"| {r['op']} | {size_name(r['bytes'])} | {r['collie_us']:.2f} | {mpi:.2f} | "
               f"{mpi / r['collie_us']:.2f}× | {r['collie_busbw_gbps']:.2f} | {r['mpi_busbw_gbps']:.2f} |")
        if rounds:
            row += f" {paired_range(r)} |" if r["paired"] else " |"
        if shared:
            s = shared.get(key)
            row += f" {s['collie_us']:.2f} | {mpi / s['collie_us']:.2f}× |" if s else " | |"
        print(row)


def main(args):
    if "--beside" in args:
        left, right = split_at(args, "--beside")
        if not left or not right:
            sys.exit("bench_table: --beside needs runs on both sides")
        print_beside(left, right)
    else:
        print_private_and_shared(*split_at(args, "--shared"))


if __name__ == "__main__":
    main(sys.argv[1:])
