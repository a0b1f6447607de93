#!/bin/sh
# bench_plot_test.sh COLLIE_CLI: `collie bench --plot` writes the data, the
# gnuplot script and the picture. The x axis is labelled at the swept sizes as
# the table labels them, and the title gives the memcpy rate to two decimals.
set -eu
cli=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$cli" bench -n 2 --op all -b 8 -e 8K -f 32 -w 1 --iters 3 --plot "$out/p.png" >/dev/null
fail() { echo "bench_plot_test: $*" >&2; cat "$out/p.png.gp" >&2; exit 1; }
grep -qF "set xtics ('8B' 8, '256B' 256, '8K' 8192)" "$out/p.png.gp" || fail "x tics"
grep -qE "memcpy [0-9]+\.[0-9]{2} GB/s" "$out/p.png.gp" || fail "memcpy rate"
grep -qF "title 'collie all_reduce'" "$out/p.png.gp" || fail "all_reduce curve"
grep -qF "title 'collie send_recv'" "$out/p.png.gp" || fail "send_recv curve"
# Seven data blocks (one per op) of three sizes each.
[ "$(grep -cE '^(8|256|8192) ' "$out/p.png.dat")" = 21 ] || fail "data rows"
[ -s "$out/p.png" ] || fail "no picture (gnuplot-nox installed?)"
