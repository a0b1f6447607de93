#!/usr/bin/python3
"""Turns `collie bench --json` files into the markdown tables of docs/performance.md.

    scripts/bench_table.py private.json [shared.json]

One row per (op, size): collie µs, OpenMPI µs, speed-up and busbw; with a second
file (a --shared run of the same sweep) two more columns give collie's time and
speed-up on tensors from empty_shared().
"""
import json
import sys


def size_name(b):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift}{unit}"
    return f"{b}B"


def main(paths):
    runs = [json.load(open(p)) for p in paths]
    shared = {(r["op"], r["bytes"]): r for r in runs[1]["results"]} if len(runs) > 1 else {}
    head = "| op | size | collie µs | OpenMPI µs | speed-up | collie busbw GB/s | OpenMPI busbw GB/s |"
    rule = "|---|---|---|---|---|---|---|"
    if shared:
        head += " shared µs | shared speed-up |"
        rule += "---|---|"
    print(head)
    print(rule)
    for r in runs[0]["results"]:
        row = (f"| {r['op']} | {size_name(r['bytes'])} | {r['collie_us']:.2f} | {r['mpi_us']:.2f} | "
               f"{r['speedup']:.2f}× | {r['collie_busbw_gbps']:.2f} | {r['mpi_busbw_gbps']:.2f} |")
        s = shared.get((r["op"], r["bytes"]))
        if shared:
            row += f" {s['collie_us']:.2f} | {s['speedup']:.2f}× |" if s else " | |"
        print(row)


if __name__ == "__main__":
    main(sys.argv[1:])
