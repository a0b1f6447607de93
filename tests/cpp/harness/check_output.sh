#!/usr/bin/env bash
# check_output.sh LAUNCHER RANKS PROGRAM EXPECTED_FILE
#
# Runs `LAUNCHER run -n RANKS -- PROGRAM` (with a 120 s guard), then checks that it exited
# 0 and that its output (stdout and stderr together) contains every block of
# EXPECTED_FILE as consecutive, exactly equal lines. In EXPECTED_FILE, blocks are separated
# by a line "---" and lines starting with "##" are comments. Used by the example tests.
set -u
if [ $# -ne 4 ]; then
  echo "usage: $0 LAUNCHER RANKS PROGRAM EXPECTED_FILE" >&2
  exit 2
fi
launcher=$1 ranks=$2 program=$3 expected=$4

if [ ! -x "$launcher" ]; then
  echo "check_output: launcher $launcher is not built" >&2
  exit 1
fi
output=$(timeout 120 "$launcher" run -n "$ranks" -- "$program" 2>&1)
status=$?
echo "---- output of: $launcher run -n $ranks -- $program (exit $status)"
printf '%s\n' "$output"
echo "----"
if [ $status -ne 0 ]; then
  echo "FAIL: exit status $status (expected 0)"
  exit 1
fi

mapfile -t out_lines < <(printf '%s\n' "$output" | sed 's/\r$//')

# Succeeds when the lines in the array named by $1 occur consecutively in out_lines.
contains_block() {
  local -n block=$1
  local n=${#block[@]} total=${#out_lines[@]} start k
  (( n == 0 )) && return 0
  for (( start = 0; start + n <= total; start++ )); do
    for (( k = 0; k < n; k++ )); do
      [[ "${out_lines[start + k]}" == "${block[k]}" ]] || break
    done
    (( k == n )) && return 0
  done
  return 1
}

failures=0
current=()
check_current() {
  if (( ${#current[@]} > 0 )) && ! contains_block current; then
    echo "FAIL: output lacks these consecutive lines:"
    printf '  |%s\n' "${current[@]}"
    failures=$((failures + 1))
  fi
  current=()
}
while IFS= read -r line || [ -n "$line" ]; do
  case "$line" in
    "##"*) continue ;;
    "---") check_current ;;
    *) current+=("$line") ;;
  esac
done < "$expected"
check_current

if (( failures > 0 )); then
  echo "FAIL: $failures expected block(s) missing (expected file: $expected)"
  exit 1
fi
echo "PASS: every expected block found"
