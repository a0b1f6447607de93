#!/usr/bin/python3
"""Turns `collie bench --json` files into the markdown tables of docs/performance.md.

    scripts/bench_table.py PRIVATE.json... [--shared SHARED.json...]

Each group of files holds repeated runs of one sweep; for every (op, size) the
best (lowest) median of collie and, separately, of OpenMPI over those runs is
shown, with speed-up = OpenMPI / collie and busbw from the collie time. With
--shared (runs of the same sweep with `collie bench --shared`), two more columns
give collie's time on tensors from empty_shared() and its speed-up over the best
OpenMPI time of all runs.
"""
import json
import sys


def size_name(b):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift}{unit}"
    return f"{b}B"


def best(paths):
    rows = {}
    for path in paths:
        with open(path) as f:
            for r in json.load(f)["results"]:
                key = (r["op"], r["bytes"])
                b = rows.setdefault(key, dict(r))
                if r["collie_us"] < b["collie_us"]:
                    b["collie_us"], b["collie_busbw_gbps"] = r["collie_us"], r["collie_busbw_gbps"]
                if r["mpi_us"] < b["mpi_us"]:
                    b["mpi_us"], b["mpi_busbw_gbps"] = r["mpi_us"], r["mpi_busbw_gbps"]
    return rows


def main(args):
    split = args.index("--shared") if "--shared" in args else len(args)
    private, shared = best(args[:split]), best(args[split + 1:])
    head = "| op | size | collie µs | OpenMPI µs | speed-up | collie busbw GB/s | OpenMPI busbw GB/s |"
    rule = "|---|---|---|---|---|---|---|"
    if shared:
        head += " shared µs | shared speed-up |"
        rule += "---|---|"
    print(head)
    print(rule)
    for key, r in private.items():
        mpi = min(r["mpi_us"], shared[key]["mpi_us"]) if key in shared else r["mpi_us"]
        row = (f"| {r['op']} | {size_name(r['bytes'])} | {r['collie_us']:.2f} | {mpi:.2f} | "
               f"{mpi / r['collie_us']:.2f}× | {r['collie_busbw_gbps']:.2f} | {r['mpi_busbw_gbps']:.2f} |")
        if shared:
            s = shared.get(key)
            row += f" {s['collie_us']:.2f} | {mpi / s['collie_us']:.2f}× |" if s else " | |"
        print(row)


if __name__ == "__main__":
    main(sys.argv[1:])
