#!/bin/sh
# bench_plot_test.sh COLLIE_CLI: `collie bench --plot` writes the data, the
# gnuplot script and the picture. The x axis is labelled at the swept sizes as
# the table labels them (every other size past 14), and the title gives the
# memcpy rate to two decimals. Paths may hold a quote (gnuplot's '' escape).
set -eu
cli=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$cli" bench -n 2 --op all -b 8 -e 8K -f 32 -w 1 --iters 3 --plot "$out/p.png" >/dev/null
gp="$out/p.png.gp"  # the script fail() shows
fail() { echo "bench_plot_test: $*" >&2; cat "$gp" >&2; exit 1; }
grep -qF "set xtics ('8B' 8, '256B' 256, '8K' 8192)" "$out/p.png.gp" || fail "x tics"
grep -qE "memcpy [0-9]+\.[0-9]{2} GB/s" "$out/p.png.gp" || fail "memcpy rate"
grep -qF "title 'collie all_reduce'" "$out/p.png.gp" || fail "all_reduce curve"
grep -qF "title 'collie send_recv'" "$out/p.png.gp" || fail "send_recv curve"
grep -qF "title 'collie scatter'" "$out/p.png.gp" || fail "scatter curve"
# Nine data blocks (one per op) of three sizes each.
[ "$(grep -cE '^(8|256|8192) ' "$out/p.png.dat")" = 27 ] || fail "data rows"
[ -s "$out/p.png" ] || fail "no picture (gnuplot-nox installed?)"
# 15 sizes (8 B to 128 KiB): a tic at every other one, the first and last included.
q="$out/it's"
mkdir "$q"
"$cli" bench -n 2 --op all_reduce -b 8 -e 128K -f 2 -w 1 --iters 2 --plot "$q/p.png" >/dev/null
gp="$q/p.png.gp"
grep -qF "set xtics ('8B' 8, '32B' 32, '128B' 128, '512B' 512, '2K' 2048, '8K' 8192, '32K' 32768, '128K' 131072)" "$q/p.png.gp" ||
  fail "x tics of 15 sizes"
grep -qF "set output '$out/it''s/p.png'" "$q/p.png.gp" || fail "quote in the path"
[ "$(grep -cE '^[0-9]+ ' "$q/p.png.dat")" = 15 ] || fail "data rows of 15 sizes"
[ -s "$q/p.png" ] || fail "no picture at a path with a quote"
