#!/usr/bin/env python3
"""tests/data/pickle/make-fixtures.py — writes the pickle fixtures of tests/src/test-pickle.c.

Run it from anywhere (python3 tests/data/pickle/make-fixtures.py); it rewrites the files beside
it. CI has no Python, so the output is checked in; rerun this after changing it and commit both.

Accepted fixtures, GROUP-VARIANT.pkl, each with GROUP.json: what Python's own unpickler makes of
every variant of the group, as JSON (tuple -> list, bytes -> str, None -> null, int keys -> str).
The C reader must give the same tree for each variant. Hand-assembled pickles (asm-*.pkl) are
loaded by Python too, to take its verdict as the oracle; they hold no GLOBAL or REDUCE.

opcodes.tsv is pickletools' table of opcodes (code, name, protocol): the test takes the names
of the refused opcodes from it, and every byte it does not list must be refused as unknown.

Refused fixtures, refuse-*.pkl, have no JSON. The ones that name code (os.system, a class) are
made with pickle.dumps and are NEVER loaded here or anywhere: dumps only records a name.
"""
import collections
import json
import os
import pickle
import pickletools
import struct
import sys

# The opcodes that import or call; no assembled fixture may hold one.
CODE = {"GLOBAL", "STACK_GLOBAL", "REDUCE", "BUILD", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX",
        "EXT1", "EXT2", "EXT4", "PERSID", "BINPERSID"}
HERE = os.path.dirname(os.path.abspath(__file__))
MAX_BYTES = 4096


def write(name, data):
    assert len(data) < MAX_BYTES, f"{name}: {len(data)} bytes, keep fixtures under {MAX_BYTES}"
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def jsonable(v):
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8")
    return v


def write_json(group, value):
    with open(os.path.join(HERE, group + ".json"), "w", encoding="utf-8") as f:
        text = json.dumps(jsonable(value), ensure_ascii=False, indent=1)
        if len(text.encode()) >= MAX_BYTES:
            text = json.dumps(jsonable(value), ensure_ascii=False, separators=(",", ":"))
        assert len(text.encode()) < MAX_BYTES, f"{group}.json: keep it under {MAX_BYTES} bytes"
        f.write(text + "\n")


def accepted(group, value, protocols):
    """GROUP-pN.pkl for each protocol, all loading back to `value`, and GROUP.json."""
    for p in protocols:
        data = pickle.dumps(value, protocol=p)
        assert pickle.loads(data) == value
        write(f"{group}-p{p}.pkl", data)
    write_json(group, value)


def assembled(group, data):
    """A hand-assembled pickle: Python's unpickler says what it means (no GLOBAL in it)."""
    names = {op.name for op, _, _ in pickletools.genops(data)}
    assert not names & CODE, f"{group}: {names & CODE}"
    write(f"asm-{group}.pkl", data)
    write_json(f"asm-{group}", pickle.loads(data))


def refused(name, data):
    write(f"refuse-{name}.pkl", data)


# A Flight Recorder dump as torch writes it (pickle.dumps of plain containers), three entries.
def frame(name, line):
    return {"name": name,
            "filename": "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py",
            "line": line}


def entry(record_id, seq, state, completed_ns, retired, duration_ms):
    return {
        "record_id": record_id,
        "pg_id": 0,
        "process_group": ("0", "default_pg"),
        "collective_seq_id": seq,
        "p2p_seq_id": 0,
        "op_id": seq,
        "profiling_name": "nccl:_all_gather_base",
        "time_created_ns": 1733040000123456789 + record_id * 1000,
        "input_sizes": [[153, 64]],
        "input_dtypes": ["Float"],
        "output_sizes": [[612, 64]],
        "output_dtypes": ["Float"],
        "state": state,
        "time_discovered_started_ns": None,
        "time_discovered_completed_ns": completed_ns,
        "retired": retired,
        "timeout_ms": 600000,
        "is_p2p": False,
        "duration_ms": duration_ms,
        "frames": [frame("all_gather_into_tensor", 3864), frame("forward", 120)],
    }


FR = {
    "version": "2.10",
    "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}},
    "pg_status": {"0": {"last_enqueued_collective": 3, "last_started_collective": 2,
                        "last_completed_collective": 2}},
    "entries": [
        entry(0, 1, "completed", 1733040000123999999, True, 1.5),
        entry(1, 2, "completed", 1733040000124999999, False, 1.5),
        entry(2, 3, "scheduled", None, False, None),
    ],
}


def main():
    for f in os.listdir(HERE):
        if f.endswith((".pkl", ".json", ".tsv")):
            os.remove(os.path.join(HERE, f))

    # Python's own opcode table, the oracle for the names in the reader's refusals.
    with open(os.path.join(HERE, "opcodes.tsv"), "w") as f:
        f.write("# code\tname\tprotocol (pickletools.opcodes)\n")
        for op in sorted(pickletools.opcodes, key=lambda o: ord(o.code.encode("latin-1"))):
            f.write(f"{ord(op.code.encode('latin-1')):#04x}\t{op.name}\t{op.proto}\n")

    accepted("fr", FR, range(0, 6))
    accepted("ints", [0, 1, -1, 255, 256, 65535, 65536, 2**31 - 1, -2**31, 2**31, 2**40,
                      -2**40, 2**63 - 1, -2**63], [0, 2])
    accepted("floats", [0.0, -0.0, 1.5, -2.5e-8, 1e-300, 1e300, 3.141592653589793, 2.0],
             [0, 2])
    accepted("unicode", ["héllo", "日本語", "emoji 🎉", "", "a\nb\rc", "tab\t", "back\\slash u",
                         "\\u0041 stays", "latin-1 ÿ"], [0, 2, 4])
    accepted("bytes", [b"abc", b"", b"caf\xc3\xa9"], [3, 4])
    accepted("bytearray", [bytearray(b"xyz"), b"abc"], [5])
    accepted("empty", {}, [0, 2, 4])
    shared_list = [1, 2]
    accepted("shared", {"a": shared_list, "b": shared_list, "c": [shared_list, shared_list]},
             [2, 4])
    accepted("intkeys", {"pg_status": {0: {"last_enqueued_collective": 3},
                                       1: {"last_enqueued_collective": 4}},
                         "neg": {-7: "x", 2**40: "y"}}, [0, 2, 4])
    nested = []
    for _ in range(99):
        nested = [nested]
    accepted("nested100", nested, [4])  # 100 lists, one inside the other

    # Hand-assembled: the opcodes Python's pickler does not write for these values.
    # A list mutated after a memo GET placed it twice: both places see the append, as in Python.
    assembled("mutate-after-get",
              b"\x80\x02}q\x01X\x01\x00\x00\x00a]q\x00sX\x01\x00\x00\x00bh\x00s"
              b"h\x00K\x07a0.")
    # 8-byte lengths, LONG4, a non-minimal LONG1, text PUT/GET, MEMOIZE, DUP, POP, POP_MARK,
    # LIST/DICT/TUPLE from a MARK, LONG_BINPUT/LONG_BINGET, duplicate keys (last wins).
    assembled("opcodes",
              b"\x80\x04"
              b"(\x8d\x02\x00\x00\x00\x00\x00\x00\x00u8"        # BINUNICODE8 "u8"
              b"\x8e\x03\x00\x00\x00\x00\x00\x00\x00b8!"        # BINBYTES8 b"b8!"
              b"\x8b\x10\x00\x00\x00" + b"\xff" * 16 +         # LONG4 -1 in 16 bytes
              b"\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\xff"  # LONG1 -2**63 in 9 bytes
              b"\x8a\x00"                                       # LONG1 0 in 0 bytes
              b"J\xfe\xff\xff\xff"                              # BININT -2
              b"M\xff\xff"                                      # BININT2 65535
              b"G\x40\x09\x21\xfb\x54\x44\x2d\x18"              # BINFLOAT pi
              b"\x8c\x03abc\x94"                                # SHORT_BINUNICODE, MEMOIZE (0)
              b"2"                                              # DUP
              b"r\x10\x00\x00\x00"                              # LONG_BINPUT 16
              b"p99\n"                                          # PUT 99 (text)
              b"0"                                              # POP
              b"j\x10\x00\x00\x00"                              # LONG_BINGET 16
              b"g99\n"                                          # GET 99 (text)
              b"h\x00"                                          # BINGET 0
              b"(K\x01K\x021"                                   # MARK 1 2 POP_MARK
              b"(K\x01K\x02t"                                   # TUPLE (1, 2)
              b"(K\x03l"                                        # LIST [3]
              b"(X\x01\x00\x00\x00kK\x01X\x01\x00\x00\x00kK\x02d"  # DICT, "k" twice: 2 wins
              b"\x89\x88N)"                                     # False True None ()
              b"\x85\x86\x87"                                   # TUPLE1 TUPLE2 TUPLE3
              b"l.")                                            # LIST of all above
    # Python 2 str opcodes (Python 3 reads them as str): STRING with escapes, BINSTRING,
    # SHORT_BINSTRING; INT's True/False spellings and LONG text.
    assembled("py2",
              b"(S'it\\'s\\n\\x41\\101'\nS\"dq\"\nT\x02\x00\x00\x00hiU\x03abcI01\nI00\n"
              b"I-12\nL12345678901234L\nL-5\nF-0.25\nl.")

    # Refused: code, classes, sets, cycles, memo bombs, ints beyond int64, keys, bad text.
    refused("ordereddict-p2", pickle.dumps(collections.OrderedDict(a=1), protocol=2))
    refused("ordereddict-p4", pickle.dumps(collections.OrderedDict(a=1), protocol=4))

    class Record:
        pass
    Record.__module__ = "fr_dump"
    Record.__qualname__ = "Record"
    sys.modules["fr_dump"] = type(sys)("fr_dump")
    sys.modules["fr_dump"].Record = Record
    refused("class-p2", pickle.dumps(Record(), protocol=2))

    class Shell:
        def __reduce__(self):
            return (os.system, ("echo ranksim must never run this",))
    refused("os-system-p0", pickle.dumps(Shell(), protocol=0))
    refused("os-system-p4", pickle.dumps(Shell(), protocol=4))
    refused("set-p4", pickle.dumps({"ranks": {1, 2}}, protocol=4))
    refused("frozenset-p4", pickle.dumps([frozenset([1])], protocol=4))
    refused("set-p2", pickle.dumps({1, 2}, protocol=2))
    cycle = []
    cycle.append(cycle)
    refused("cycle-p2", pickle.dumps(cycle, protocol=2))
    refused("bigint-p2", pickle.dumps([1, 2**63], protocol=2))
    refused("negbigint-p2", pickle.dumps([-2**63 - 1], protocol=2))
    refused("key-tuple-p2", pickle.dumps({(1, 2): "x"}, protocol=2))
    refused("key-float-p2", pickle.dumps({1.5: "x"}, protocol=2))
    refused("key-bytes-p3", pickle.dumps({b"k": "x"}, protocol=3))
    refused("key-collision-p2", pickle.dumps({1: "a", "1": "b"}, protocol=2))
    refused("bad-utf8-bytes-p3", pickle.dumps(["ok", b"\xff\xfe"], protocol=3))
    refused("surrogate-p2", pickle.dumps(["\ud800"], protocol=2))
    refused("nul-p4", pickle.dumps({"name": "a\0b"}, protocol=4))
    deep = []
    for _ in range(599):
        deep = [deep]
    sys.setrecursionlimit(10000)
    refused("nested600-p4", pickle.dumps(deep, protocol=4))  # 600 lists
    # Billion laughs: list 0 is [], list k+1 holds list k ten times; nine levels: 10**9 values
    # in 234 bytes. (Python loads it fine, sharing; a JSON tree would copy each reference.)
    bomb = bytearray(b"\x80\x02]q\x000")
    for k in range(9):
        bomb += b"(" + (b"h" + bytes([k])) * 10 + b"lq" + bytes([k + 1]) + b"0"
    bomb += b"h\x09."
    refused("bomb-p2", bytes(bomb))


if __name__ == "__main__":
    main()
