#!/usr/bin/python3
"""callgrind_locked.py: how many locked instructions a program executed.

A locked instruction (`lock add`, `lock cmpxchg`, an `xchg` with memory: every
atomic read-modify-write and every sequentially consistent store on x86) is a
full barrier: later loads wait until every earlier store has reached the cache.
Uncontended, one costs ~6 ns back to back on the project's AMD VM and about 1 ns
amid dependent memory work; a call that executes many of them pays for them in
latency that no instruction count shows. This reads a callgrind profile written
with per-instruction counts and counts the executed instructions that objdump
disassembles as locked, per function.

    valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file=cg.out PROGRAM
    /usr/bin/python3 scripts/callgrind_locked.py cg.out [--top 20]

Prints `locked N` (the total) and, with --top, the functions that executed the
most. scripts/instructions_per_call.sh uses it to give one call's count.
Needs objdump (binutils).
"""
import argparse
import collections
import re
import subprocess
import sys

_NAME = re.compile(r"\((\d+)\)(?: (.*))?")
_LINE = re.compile(r"^\s*([0-9a-f]+):\s+(.*)$")
_SYMBOL = re.compile(r"^([0-9a-f]+) <(.*)>:$")


def is_locked(disassembly):
    """True for an instruction x86 executes locked: a lock prefix, or xchg with a
    memory operand (implicitly locked)."""
    text = disassembly.strip()
    if text.startswith("lock"):
        return True
    return text.startswith("xchg") and "(" in text


def instruction_counts(lines):
    """{(object, address): executions} from a callgrind profile's lines. The
    profile must carry instruction addresses (positions: instr [line])."""
    counts = collections.defaultdict(int)
    names, obj = {}, None
    position = []  # the last cost line's positions; later ones may be relative
    call_cost_next = False
    has_instr = False
    for line in lines:
        line = line.rstrip("\n")
        if line.startswith("positions:"):
            has_instr = "instr" in line.split()[1:2]
        elif line.startswith(("ob=", "cob=")):
            key, _, value = line.partition("=")
            m = _NAME.match(value)
            if m:  # compressed: (id) name the first time, (id) after
                if m.group(2):
                    names[m.group(1)] = m.group(2)
                value = names.get(m.group(1), value)
            if key == "ob":
                obj = value
        elif line.startswith("calls="):
            call_cost_next = True  # the next cost line is the callee's, not ours
        elif line and (line[0].isdigit() or line[0] in "+-*"):
            fields = line.split()
            npos = len(fields) - 1 if len(fields) > 1 else 1
            new = []
            for i, field in enumerate(fields[:npos]):
                prev = position[i] if i < len(position) else 0
                if field == "*":
                    new.append(prev)
                elif field[0] in "+-":
                    new.append(prev + int(field, 0))
                else:
                    new.append(int(field, 0))
            position = new
            if call_cost_next:
                call_cost_next = False
                continue
            if npos < len(fields):
                counts[(obj, position[0])] += int(fields[npos])
    if not has_instr:
        raise ValueError("the profile has no instruction addresses: "
                         "run callgrind with --dump-instr=yes")
    return counts


def locked_addresses(obj):
    """{address: (function, instruction)} of obj's locked instructions, as
    objdump disassembles them (callgrind gives addresses in the same terms:
    offsets for shared objects and position-independent executables)."""
    out = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", obj],
                         capture_output=True, text=True, check=False).stdout
    found, function = {}, "?"
    for line in out.splitlines():
        m = _SYMBOL.match(line)
        if m:
            function = m.group(2)
            continue
        m = _LINE.match(line)
        if m and is_locked(m.group(2)):
            found[int(m.group(1), 16)] = (function, " ".join(m.group(2).split()))
    return found


def locked_counts(counts, addresses_of=locked_addresses):
    """{(object, function, instruction): executions} of the locked instructions
    among counts."""
    by_object = collections.defaultdict(dict)
    for (obj, address), n in counts.items():
        by_object[obj][address] = n
    result = collections.Counter()
    for obj, executed in by_object.items():
        if obj is None:
            continue
        locked = addresses_of(obj)
        for address, n in executed.items():
            if address in locked:
                function, instruction = locked[address]
                result[(obj.rsplit("/", 1)[-1], function, instruction)] += n
    return result


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", help="a callgrind.out written with --dump-instr=yes")
    parser.add_argument("--top", type=int, default=0, help="list the N busiest locked instructions")
    args = parser.parse_args(argv)
    try:
        with open(args.profile) as f:
            counts = instruction_counts(f)
    except (OSError, ValueError) as e:
        print(f"callgrind_locked.py: {e}", file=sys.stderr)
        return 2
    locked = locked_counts(counts)
    print(f"locked {sum(locked.values())}")
    for (obj, function, instruction), n in locked.most_common(args.top):
        print(f"{n:12d}  {obj}  {function}: {instruction}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
