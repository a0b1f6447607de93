#!/bin/sh
# bench_outputs_test.sh COLLIE_CLI: `collie bench --csv/--json` say how the
# calls were timed (per_call by default, span with --span, loop with --loop)
# on every CSV row and in the JSON header, and hold one row per op and size;
# the printed header names the copy path and the reduction kernels.
set -eu
cli=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "bench_outputs_test: $*" >&2; cat "$out"/*.csv >&2; exit 1; }
"$cli" bench -n 2 --op all_reduce -b 8 -e 8 -w 1 --iters 3 >"$out/header.txt"
grep -Eq '^# cpu: .*; copy path: (staged|hybrid|single) .*; reductions: (avx512|avx2|portable) \(' \
  "$out/header.txt" || { cat "$out/header.txt" >&2; fail "the header's copy path and reductions"; }
for timing in per_call span loop; do
  flag=
  [ "$timing" = per_call ] || flag="--$timing"
  # shellcheck disable=SC2086  # an empty $flag is no argument
  "$cli" bench -n 2 --op all_gather --op send_recv -b 8 -e 64 -f 8 -w 1 --iters 3 $flag \
    --csv "$out/$timing.csv" --json "$out/$timing.json" >/dev/null
  head -n 1 "$out/$timing.csv" | grep -q '^op,bytes,ranks,dtype,timing,collie_us,' ||
    fail "$timing: CSV header"
  # Two ops at two sizes, every row with the timing in its fifth column.
  [ "$(tail -n +2 "$out/$timing.csv" | cut -d, -f5 | grep -cx "$timing")" = 4 ] ||
    fail "$timing: CSV rows"
  [ "$(tail -n +2 "$out/$timing.csv" | wc -l)" = 4 ] || fail "$timing: CSV row count"
  grep -qF "\"timing\": \"$timing\"" "$out/$timing.json" || fail "$timing: JSON timing"
done
