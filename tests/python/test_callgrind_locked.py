"""scripts/callgrind_locked.py: which executed instructions were locked, from a
callgrind profile with instruction addresses and objdump's disassembly."""
import importlib.util
import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "callgrind_locked.py"
_spec = importlib.util.spec_from_file_location("callgrind_locked", SCRIPT)
locked = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(locked)

# Two objects; names compressed after first use (also through cob=), positions
# absolute, relative (+N/-N) and repeated (*), and a call whose cost line (the
# callee's inclusive cost) must not count as the caller's instruction.
PROFILE = """\
version: 1
positions: instr line
events: Ir
ob=(1) /lib/a.so
fl=(1) a.c
fn=(1) f
0x100 10 5
+4 11 7
cob=(2) /lib/b.so
cfn=(2) g
calls=5 0x200 20
+3 12 900
* 12 2
ob=(2)
fn=(2) g
0x200 20 3
-0x10 * 4
ob=(1)
fn=(1)
0x100 10 1
"""


def test_counts_each_executed_address_once_per_cost_line():
    counts = locked.instruction_counts(PROFILE.splitlines(True))
    assert counts == {
        ("/lib/a.so", 0x100): 6,  # 5 + 1 from the second block of f
        ("/lib/a.so", 0x104): 7,
        ("/lib/a.so", 0x107): 2,  # the call's own line (900 is g's inclusive cost)
        ("/lib/b.so", 0x200): 3,
        ("/lib/b.so", 0x1F0): 4,
    }


def test_profile_without_instruction_addresses_is_an_error():
    profile = PROFILE.replace("positions: instr line", "positions: line")
    try:
        locked.instruction_counts(profile.splitlines(True))
    except ValueError as e:
        assert "--dump-instr=yes" in str(e)
    else:
        raise AssertionError("a profile of lines only was accepted")


def test_locked_means_lock_prefix_or_xchg_with_memory():
    assert locked.is_locked("lock addl $0x1,0x8(%r13)")
    assert locked.is_locked("lock cmpxchg %edx,(%rdi)")
    assert locked.is_locked("xchg   %eax,(%rsi)")
    assert not locked.is_locked("xchg   %ax,%ax")  # registers only: not locked
    assert not locked.is_locked("mov    %eax,(%rsi)")
    assert not locked.is_locked("add    $0x1,%eax")


def test_locked_counts_sums_per_instruction_of_each_object():
    counts = locked.instruction_counts(PROFILE.splitlines(True))
    table = {"/lib/a.so": {0x104: ("f", "lock xadd %eax,(%rcx)")},
             "/lib/b.so": {0x1F0: ("g", "xchg %eax,(%rsi)"), 0x300: ("h", "lock incl (%rax)")}}
    result = locked.locked_counts(counts, addresses_of=lambda obj: table[obj])
    assert result == {("a.so", "f", "lock xadd %eax,(%rcx)"): 7,
                      ("b.so", "g", "xchg %eax,(%rsi)"): 4}


def test_finds_the_locked_instructions_objdump_shows(tmp_path):
    source = tmp_path / "atomics.c"
    source.write_text(
        "int counter;\n"
        "int bump(void) { return __atomic_fetch_add(&counter, 1, __ATOMIC_SEQ_CST); }\n"
        "void publish(int v) { __atomic_store_n(&counter, v, __ATOMIC_SEQ_CST); }\n"
        "int plain(void) { return ++counter; }\n")
    obj = tmp_path / "atomics.o"
    subprocess.run(["gcc", "-O2", "-c", str(source), "-o", str(obj)], check=True)
    found = locked.locked_addresses(str(obj))
    functions = sorted(function for function, _ in found.values())
    # fetch_add is a lock xadd (or lock add); a seq_cst store an xchg (or a
    # mov + mfence, which is not a locked instruction: then only bump's).
    assert "bump" in functions and "plain" not in functions
    assert all(locked.is_locked(instruction) for _, instruction in found.values())


def test_command_line_prints_the_total_and_the_busiest(tmp_path):
    profile = tmp_path / "cg.out"
    profile.write_text(PROFILE)
    out = subprocess.run([sys.executable, str(SCRIPT), str(profile), "--top", "3"],
                         capture_output=True, text=True)
    # /lib/a.so does not exist: objdump finds nothing there, so nothing is locked.
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["locked 0"]
    missing = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "none")],
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "callgrind_locked.py" in missing.stderr
