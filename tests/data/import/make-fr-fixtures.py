#!/usr/bin/env python3
# tests/data/import/make-fr-fixtures.py: writes the PyTorch Flight Recorder (FR) dump fixtures in
# tests/data/import/fr/ (checked in, because CI has no python) and, with --big, a large JSON dump
# set for `make bench` (not checked in; tests/bench/gen-fr-dumps.c writes the same bytes without
# python).
#
#   python3 tests/data/import/make-fr-fixtures.py             # rewrites tests/data/import/fr/
#   python3 tests/data/import/make-fr-fixtures.py --check     # loads and checks them only
#   python3 tests/data/import/make-fr-fixtures.py --big 1024 /tmp/fr-big [ENTRIES]
#
# Standard library only, and deterministic: two runs write the same bytes. What each case is, and
# the diagnosis it should get, is in tests/data/import/README.md.
#
# ---------------------------------------------------------------------------------------------
# The dump, as the torch sources write it (pytorch/pytorch torch/csrc/distributed/c10d/
# FlightRecorder.hpp, FlightRecorderDetail.hpp, FlightRecorder.cpp, the older NCCLUtils.hpp /
# TraceUtils.h, test/distributed/test_c10d_nccl.py, test_c10d_xccl.py; the forks ROCm/pytorch,
# sbak5/pytorch and frost-intel/pytorch for the 2.7 and 2.9 headers; pytorch/tutorials
# flight_recorder_tutorial.rst for 2.5; pull request pytorch#151048 for the 2.5 -> 2.6 bump).
# `version` is FR's own schema version (FlightRecorder.hpp `version_val`), not the torch release.
#
#   2.3, 2.4  Top level: version, pg_config, pg_status, entries (and nccl_comm_state when the
#             NCCLX/ROCm comm dump is not empty). Entry: frames (pickle only), record_id, pg_id,
#             process_group, collective_seq_id, p2p_seq_id, op_id, profiling_name,
#             time_created_ns, duration_ms (only with timing on, once completed), input_sizes,
#             input_dtypes, output_sizes, output_dtypes, state, time_discovered_started_ns,
#             time_discovered_completed_ns, retired, timeout_ms, is_p2p. p2p_seq_id and is_p2p
#             are already in 2.4 (NCCLTraceBuffer in FlightRecorder.cpp). torch_npu stays at 2.4.
#   2.5       The tutorial's sample dump: the same keys as 2.4. No library version, no thread_*.
#   2.6       Adds the top-level "nccl_version" (pytorch#151048 bumps "2.5" to "2.6").
#   2.7       FlightRecorder<EventType>; still "nccl_version" (record_accelerator_version), no
#             thread_* in the entries.
#   2.8       No stored header of 2.8 was found (test_fr_analysis.py builds 2.8 entries by hand,
#             with is_p2p). It is written here like 2.7: "nccl_version", no thread_*. Whether
#             2.8 or 2.9 added thread_* is not settled by the sources read.
#   2.9       Entries have "thread_name" (pthread_getname_np: the OS-level name, at most 15
#             characters; the tests set "fr_test_thread") and "thread_id", a *string*
#             (c10::str(std::thread::id), equal to str(threading.current_thread().ident)). The
#             library key is still per backend: "nccl_version" (XCCL dumps: "xccl_version").
#   2.10      The library key becomes "comm_lib_version" for every backend (the NCCL version
#             dotted, "2.21.5"); entries keep thread_name and thread_id. Ring-buffer reset
#             epochs are internal and not dumped. The buffer default became 2000 entries
#             during 2.10 (TORCH_FR_BUFFER_SIZE; 0, i.e. FR off, in earlier headers).
#
# Pickle (`dump` / `dump_dict`, written by the watchdog on a timeout and by _dump_nccl_trace):
#   pickle_str() uses torch::jit::Pickler with tag_aggregates=false, protocol 2. The dump holds no
#   GLOBAL, REDUCE or BUILD at all: lists are generic (c10::List<IValue> of AnyType, so no
#   torch.jit._pickle.build_intlist), dicts carry no restore_type_tag. Strings are BINUNICODE,
#   memoized by value (BINPUT/BINGET); dicts and lists are MARK ... SETITEMS / APPENDS even for
#   one item or none; ints BININT1/BININT2/BININT, or LONG1 with 8 bytes; floats BINFLOAT; NONE for an
#   unseen time; process_group a TUPLE2; frame dicts shared by several entries are memoized.
#   Insertion order: version, pg_config, <library key>, pg_status, entries; per entry: frames,
#   record_id, pg_id, process_group, [thread_name, thread_id,] collective_seq_id, p2p_seq_id,
#   op_id, profiling_name, time_created_ns, [duration_ms,] input_sizes, input_dtypes,
#   output_sizes, output_dtypes, state, time_discovered_started_ns, time_discovered_completed_ns,
#   retired, timeout_ms, is_p2p. pg_config is in name order as strings (std::map keyed by
#   (name, desc)), pg_status in pg_id order as numbers (std::map<size_t>), keyed str(pg_id).
#   pg_status values are ints; pg_config "ranks" is a string, "[0, 1, 2, 3]" (ranks_str).
#   Frames are innermost first: {name, filename, line}.
#   This script pickles with Python's pickle.dumps(d, protocol=P), P = 2..5: the same values as
#   torch's; the opcodes differ in places (SETITEM / APPEND for one item, memo by identity, FRAME,
#   SHORT_BINUNICODE and MEMOIZE from 4 on).
# JSON (`dump_json`, only through the _dump_nccl_trace_json API): nlohmann::json, so every
#   object's keys are sorted (std::map) and dump() is compact with no trailing newline. No
#   frames; process_group an array; pg_status values strings ("-1"); an unseen
#   time_discovered_*_ns is 0; "entries" is left out when there are none; duration_ms is a C++
#   float widened to double, so it prints with the float's rounding (0.03174399957060814).
# Elsewhere: torchcomms' own FR (torch/csrc/comms/.../fr) writes ranks as "[0,1,2]" without
# spaces; new_group sorts its ranks, so a pair (3, 0) is recorded as "[0, 3]".
# ---------------------------------------------------------------------------------------------

import collections
import datetime
import json
import os
import pickle
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fr")

EPOCH_NS = 1764000000 * 10**9  # 2025-11-24 16:00 UTC
TIMEOUT_MS = 600000            # kProcessGroupNCCLDefaultTimeout, 10 min
NCCL_VERSION = "2.21.5"
THREAD_NAME = "pt_main_thread"  # the enqueuing thread: torch names the main thread so at import


def f32(x):
    """duration_ms is a C++ float: round to float32 as the dump would carry it."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def frame(name, filename, line):
    return {"name": name, "filename": filename, "line": line}


# A few real-looking Python stacks (innermost first, as FR symbolizes them). Frame dicts are
# shared between entries, as torch shares them, so the pickles memoize them.
TORCH = "/usr/local/lib/python3.12/dist-packages/torch/distributed/"
VLLM = "/usr/local/lib/python3.12/dist-packages/vllm/"
F_C10D_LOGGER = frame("wrapper", TORCH + "c10d_logger.py", 81)
F_AG_TENSOR = frame("all_gather_into_tensor", TORCH + "distributed_c10d.py", 3846)
F_ALL_REDUCE = frame("all_reduce", TORCH + "distributed_c10d.py", 2806)
F_BASE_AG = frame("all_gather", VLLM + "distributed/device_communicators/base_device_communicator.py", 155)
F_GC_AG_OUT = frame("_all_gather_out_place", VLLM + "distributed/parallel_state.py", 468)
F_GC_AG = frame("all_gather", VLLM + "distributed/parallel_state.py", 455)
F_LSE = frame("cp_lse_ag_out_ar", VLLM + "v1/attention/ops/common.py", 201)
F_MLA_SPARSE = frame("forward_mqa", VLLM + "v1/attention/backends/mla/flashinfer_mla_sparse.py", 412)
F_MLA_PCP = frame("_pcp_gather_heads", VLLM + "v1/attention/backends/mla/common.py", 1893)
F_MLA_IMPL = frame("forward", VLLM + "v1/attention/backends/mla/common.py", 2087)
F_RUNNER = frame("execute_model", VLLM + "v1/worker/gpu_model_runner.py", 3021)
F_WORKER = frame("execute_model", VLLM + "v1/worker/gpu_worker.py", 614)
F_BUSY = frame("worker_busy_loop", VLLM + "v1/executor/multiproc_executor.py", 702)
F_INIT = frame("init_worker_distributed_environment", VLLM + "v1/worker/gpu_worker.py", 853)
F_INIT_DEV = frame("init_device", VLLM + "v1/worker/gpu_worker.py", 236)

STACK_WARMUP = [F_ALL_REDUCE, F_C10D_LOGGER, F_INIT, F_INIT_DEV, F_BUSY]
STACK_DCP_LSE = [F_AG_TENSOR, F_C10D_LOGGER, F_BASE_AG, F_GC_AG_OUT, F_GC_AG, F_LSE,
                 F_MLA_SPARSE, F_MLA_IMPL, F_RUNNER, F_WORKER, F_BUSY]
STACK_PCP_HEADS = [F_AG_TENSOR, F_C10D_LOGGER, F_BASE_AG, F_GC_AG_OUT, F_GC_AG, F_MLA_PCP,
                   F_MLA_IMPL, F_RUNNER, F_WORKER, F_BUSY]

F_RING_AR = frame("all_reduce", "/opt/conda/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", 2781)
F_RING_LOG = frame("wrapper", "/opt/conda/lib/python3.11/site-packages/torch/distributed/c10d_logger.py", 81)
STACK_RING_INIT = [F_RING_AR, F_RING_LOG, frame("setup", "/workspace/ring_job.py", 41),
                   frame("main", "/workspace/ring_job.py", 118), frame("<module>", "/workspace/ring_job.py", 131)]
STACK_RING_PAIR = [F_RING_AR, F_RING_LOG, frame("exchange_halo", "/workspace/ring_job.py", 77),
                   frame("step", "/workspace/ring_job.py", 96), frame("main", "/workspace/ring_job.py", 123),
                   frame("<module>", "/workspace/ring_job.py", 131)]
STACK_RING_DP = [F_RING_AR, F_RING_LOG, frame("reduce_grads", "/workspace/ring_job.py", 64),
                 frame("step", "/workspace/ring_job.py", 101), frame("main", "/workspace/ring_job.py", 123),
                 frame("<module>", "/workspace/ring_job.py", 131)]


def ranks_str(ranks):
    return "[" + ", ".join(str(r) for r in ranks) + "]"


class RankDump:
    """One process's FR state: its NCCL PGs, per-PG counters and entries, as FlightRecorder keeps them."""

    def __init__(self, rank, version, timing):
        self.rank = rank
        self.version = version
        self.timing = timing
        self.groups = {}   # name -> dict(desc, ranks, pg_id, seq, status)
        self.entries = []  # (fields in pickle order)
        self.record_id = 0
        self.thread_id = str(0x7F3A5C000740 + rank * 0x1000000)

    def join(self, name, desc, ranks):
        # ProcessGroupNCCL's constructor: record_pg_ranks and a process-local id (local_id_).
        self.groups[name] = {"desc": desc, "ranks": sorted(ranks), "pg_id": len(self.groups),
                             "seq": 0, "status": None}

    def record(self, pg, op, in_sizes, dtype, out_sizes, state, created_ns, frames,
               started_ns=None, completed_ns=None, duration_ms=None, out_dtype=None):
        # sub-0.1 ms jitter so no two clocks read alike (the gaps between calls are larger)
        jitter = (self.rank * 7331 + self.record_id * 104_723) % 99_991
        created_ns += jitter
        started_ns = started_ns + jitter if started_ns is not None else None
        completed_ns = completed_ns + jitter if completed_ns is not None else None
        g = self.groups[pg]
        g["seq"] += 1
        seq = g["seq"]
        if g["status"] is None:  # FR keeps a PG's status from its first recorded entry on
            g["status"] = {"last_enqueued_collective": -1, "last_started_collective": -1,
                           "last_completed_collective": -1}
        st = g["status"]
        st["last_enqueued_collective"] = seq
        if state in ("started", "completed") and self.timing:
            st["last_started_collective"] = seq
        if state == "completed":
            st["last_completed_collective"] = seq
        if state == "started":
            assert self.timing and started_ns is not None
        if not self.timing:
            assert state != "started" and duration_ms is None
            started_ns = None
        e = {"frames": frames, "record_id": self.record_id, "pg_id": g["pg_id"],
             "process_group": (pg, g["desc"])}
        if self.version >= (2, 9):
            e["thread_name"] = THREAD_NAME
            e["thread_id"] = self.thread_id
        e["collective_seq_id"] = seq
        e["p2p_seq_id"] = 0
        e["op_id"] = seq  # one logical op per launch here (no coalescing, no P2P)
        e["profiling_name"] = op
        e["time_created_ns"] = created_ns
        if duration_ms is not None and state == "completed":
            e["duration_ms"] = f32(duration_ms)
        e["input_sizes"] = [list(s) for s in in_sizes]
        e["input_dtypes"] = [dtype] * len(in_sizes)
        e["output_sizes"] = [list(s) for s in out_sizes]
        e["output_dtypes"] = [out_dtype or dtype] * len(out_sizes)
        e["state"] = state
        e["time_discovered_started_ns"] = started_ns
        e["time_discovered_completed_ns"] = completed_ns if state == "completed" else None
        e["retired"] = state == "completed"  # the watchdog retires a work once it completes
        e["timeout_ms"] = TIMEOUT_MS
        e["is_p2p"] = False
        self.entries.append(e)
        self.record_id += 1

    def as_pickle_dict(self):
        d = {"version": "%d.%d" % self.version}
        d["pg_config"] = {n: {"name": n, "desc": self.groups[n]["desc"],
                              "ranks": ranks_str(self.groups[n]["ranks"])}
                          for n in sorted(self.groups)}
        if self.version >= (2, 10):
            d["comm_lib_version"] = NCCL_VERSION
        elif self.version >= (2, 6):
            d["nccl_version"] = NCCL_VERSION
        by_id = sorted((g for g in self.groups.values() if g["status"]), key=lambda g: g["pg_id"])
        d["pg_status"] = {str(g["pg_id"]): dict(g["status"]) for g in by_id}
        d["entries"] = [dict(e) for e in self.entries]
        return d

    def as_json_dict(self):
        d = self.as_pickle_dict()
        for st in d["pg_status"].values():
            for k in st:
                st[k] = str(st[k])
        for e in d["entries"]:
            del e["frames"]
            e["process_group"] = list(e["process_group"])
            for k in ("time_discovered_started_ns", "time_discovered_completed_ns"):
                if e[k] is None:
                    e[k] = 0
        if not d["entries"]:
            del d["entries"]
        return d


def dump_json_bytes(d):
    return json.dumps(d, sort_keys=True, separators=(",", ":")).encode("ascii")


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def fresh(case):
    d = os.path.join(OUT, case)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    return d


def write_set(case, dumps, fmt, protocol=None, skip=()):
    d = fresh(case)
    for r in dumps:
        if r.rank in skip:
            continue
        if fmt == "json":
            write(os.path.join(d, "nccl_trace_rank_%d.json" % r.rank), dump_json_bytes(r.as_json_dict()))
        else:
            write(os.path.join(d, "nccl_trace_rank_%d" % r.rank), pickle.dumps(r.as_pickle_dict(), protocol=protocol))


def clock(rank):
    """Each host's clock is a little off: a fixed skew per rank (ns)."""
    return EPOCH_NS + 48_611 + rank * 1_318_707 + (rank * 7919) % 104_729


# --- case 1: seed004 ------------------------------------------------------------------------
# GLM-5.2 on 4 x B200, TP1 / PCP4 / DCP4, FLASHINFER_MLA_SPARSE: the 633-token prefill gives PCP
# rank 0 153 real rows and ranks 1-3 160 each; the LSE all-gather over DCP is sized by real rows.
def seed004(version):
    dumps = []
    for r in range(4):
        rd = RankDump(r, version, timing=False)
        world = [0, 1, 2, 3]
        rd.join("0", "default_pg", world)
        rd.join("1", "undefined", world)  # DCP group
        rd.join("2", "undefined", world)  # PCP group
        t = clock(r)
        # start-up barrier: vLLM's warm-up all_reduce of one float on the default PG
        c = t + 12_004_118_000 + r * 3_911_000
        rd.record("0", "nccl:all_reduce", [[1]], "Float", [[1]], "completed", c, STACK_WARMUP,
                  completed_ns=c + 41_260_112)
        # three DCP LSE all-gathers that matched (padded rows) and one PCP all-gather of heads
        base = t + 97_350_215_000
        for k in range(3):
            c = base + k * 3_977_400 + r * 211_000
            rd.record("1", "nccl:_all_gather_base", [[160, 64]], "Float", [[640, 64]], "completed", c,
                      STACK_DCP_LSE, completed_ns=c + 9_802_331 + k * 17_000)
        c = base + 12_113_050 + r * 198_000
        rd.record("2", "nccl:_all_gather_base", [[48, 1920]], "BFloat16", [[192, 1920]], "completed", c,
                  STACK_PCP_HEADS, completed_ns=c + 10_337_906)
        # the 633-token prefill: the 4th DCP LSE all-gather, sized by each rank's real rows
        rows = 153 if r == 0 else 160
        c = t + 131_502_884_000 + r * 187_000
        rd.record("1", "nccl:_all_gather_base", [[rows, 64]], "Float", [[rows * 4, 64]], "scheduled", c,
                  STACK_DCP_LSE)
        if r != 0:
            # ranks 1-3 queued the next collective (the CPU does not wait for NCCL)
            rd.record("2", "nccl:_all_gather_base", [[48, 1920]], "BFloat16", [[192, 1920]], "scheduled",
                      c + 1_804_227, STACK_PCP_HEADS)
        dumps.append(rd)
    return dumps


# --- case 2: tp-one-fewer ---------------------------------------------------------------------
def tp_one_fewer():
    dumps = []
    for r in range(4):
        rd = RankDump(r, (2, 10), timing=True)
        rd.join("0", "default_pg", [0, 1, 2, 3])
        rd.join("1", "undefined", [0, 1, 2, 3])  # TP group
        t = clock(r) + 250_118_403_000
        calls = 5 if r == 2 else 6
        for k in range(calls):
            c = t + k * 2_136_551 + r * 61_000
            if k < 5:
                s = c + 412_880 + (r * 37 + k * 11) % 97 * 1000
                rd.record("1", "nccl:all_reduce", [[8, 7168]], "BFloat16", [[8, 7168]], "completed", c, [],
                          started_ns=s, completed_ns=s + 1_873_114, duration_ms=0.0317 + 0.0011 * ((r + k) % 3))
            else:
                rd.record("1", "nccl:all_reduce", [[8, 7168]], "BFloat16", [[8, 7168]], "started", c, [],
                          started_ns=c + 431_906)
        dumps.append(rd)
    return dumps


# --- case 3: cycle4 -----------------------------------------------------------------------------
def cycle4():
    pairs = {"1": [0, 1], "2": [1, 2], "3": [2, 3], "4": [3, 0]}
    first = {0: "1", 1: "2", 2: "3", 3: "4"}   # the pair each rank enters first ...
    second = {0: "4", 1: "1", 2: "2", 3: "3"}  # ... and the one it queued behind it
    dumps = []
    for r in range(8):
        rd = RankDump(r, (2, 8), timing=False)
        rd.join("0", "default_pg", list(range(8)))
        for name in sorted(pairs):
            if r in pairs[name]:
                rd.join(name, "undefined", pairs[name])
        if r >= 4:
            rd.join("5", "undefined", [4, 5, 6, 7])
        t = clock(r)
        c = t + 20_331_460_000 + r * 2_107_000
        rd.record("0", "nccl:all_reduce", [[1]], "Float", [[1]], "completed", c, STACK_RING_INIT,
                  completed_ns=c + 38_917_440)
        c = t + 300_120_775_000 + r * 143_000
        if r < 4:
            rd.record(first[r], "nccl:all_reduce", [[1024]], "Float", [[1024]], "scheduled", c, STACK_RING_PAIR)
            rd.record(second[r], "nccl:all_reduce", [[1024]], "Float", [[1024]], "scheduled", c + 96_512,
                      STACK_RING_PAIR)
        else:
            for k in range(3):
                ck = c + k * 1_441_208
                rd.record("5", "nccl:all_reduce", [[1024]], "Float", [[1024]], "completed", ck, STACK_RING_DP,
                          completed_ns=ck + 1_120_553)
        dumps.append(rd)
    return dumps


# --- case 5: bad ------------------------------------------------------------------------------
def bad():
    d = fresh("bad")
    r0 = seed004((2, 8))[0]
    whole = pickle.dumps(r0.as_pickle_dict(), protocol=4)
    write(os.path.join(d, "truncated", "nccl_trace_rank_0"), whole[: len(whole) // 2])
    # A harmless GLOBAL + REDUCE: collections.OrderedDict, and a datetime (no callable that runs
    # anything). A reader that only accepts the opcodes FR writes must refuse it.
    forbidden = r0.as_pickle_dict()
    forbidden["pg_config"] = collections.OrderedDict(forbidden["pg_config"])
    forbidden["dumped_at"] = datetime.datetime(2025, 11, 24, 16, 2, 11)
    write(os.path.join(d, "forbidden", "nccl_trace_rank_0"), pickle.dumps(forbidden, protocol=3))
    # valid JSON of another schema: a vLLM engine config
    other = {"model": "zai-org/GLM-5.2-NVFP4", "tensor_parallel_size": 1, "prefill_context_parallel_size": 4,
             "decode_context_parallel_size": 4, "gpu_memory_utilization": 0.96, "max_model_len": 131072,
             "max_num_batched_tokens": 8192, "attention_backend": "FLASHINFER_MLA_SPARSE",
             "compilation_config": {"cudagraph_mode": "FULL_AND_PIECEWISE", "cudagraph_capture_sizes": [1, 2, 4, 8]},
             "version": "0.12.0"}
    write(os.path.join(d, "other-schema", "nccl_trace_rank_0.json"), json.dumps(other, indent=2).encode() + b"\n")
    # one rank, two files: the same dump as a pickle and as JSON
    r1 = seed004((2, 10))[1]
    write(os.path.join(d, "rank-twice", "nccl_trace_rank_1"), pickle.dumps(r1.as_pickle_dict(), protocol=2))
    write(os.path.join(d, "rank-twice", "nccl_trace_rank_1.json"), dump_json_bytes(r1.as_json_dict()))
    write(os.path.join(d, "empty-dir", ".gitkeep"), b"")


# --- case 6: big (not checked in) --------------------------------------------------------------
# N ranks (a multiple of 8): TP groups of 8 consecutive ranks, DP groups across them (DP group j
# holds the ranks with TP index j). Each rank's ring buffer holds the last 2000 entries of 2048
# calls: TP all_reduce and DP all_gather in turn, seq 25..1024 on each. All completed, except: in
# TP group BAD = (N/8)*3/5 the last all_reduce (seq 1024) hangs because TP rank 5 brings 17 rows
# instead of 16, and every rank's last DP all_gather (seq 1024) waits behind that group.
# tests/bench/gen-fr-dumps.c writes byte-identical files; keep the two in step.
BIG_CALLS = 2048
BIG_BUFFER = 2000
BIG_HIDDEN = 7168


def big_json(n, r, buffer=BIG_BUFFER):
    tp, ngroups = 8, n // 8
    g, j = r // tp, r % tp
    bad_g = ngroups * 3 // 5
    in_bad = g == bad_g
    tp_name, dp_name = str(1 + g), str(1 + ngroups + j)
    tp_ranks = list(range(g * tp, g * tp + tp))
    dp_ranks = list(range(j, n, tp))
    t0 = EPOCH_NS + r * 1_318_707 + (r * 7919) % 104_729
    tid = str(0x7F3A5C000740 + r * 0x1000000)
    entries = []
    first = BIG_CALLS - buffer
    for rec in range(first, BIG_CALLS):
        seq = rec // 2 + 1
        is_tp = rec % 2 == 0
        created = t0 + 60_000_000_000 + rec * 1_250_000 + (r * 31 + rec * 17) % 997 * 100
        last = seq == BIG_CALLS // 2
        done = not last or (is_tp and not in_bad)
        if is_tp:
            rows = 17 if (last and in_bad and j == 5) else 16
            name, pg_id, pgn = "nccl:all_reduce", 1, tp_name
            ins, outs = [[rows, BIG_HIDDEN]], [[rows, BIG_HIDDEN]]
        else:
            name, pg_id, pgn = "nccl:_all_gather_base", 2, dp_name
            ins, outs = [[4, BIG_HIDDEN]], [[4 * (n // tp), BIG_HIDDEN]]
        entries.append({
            "collective_seq_id": seq, "input_dtypes": ["BFloat16"], "input_sizes": ins, "is_p2p": False,
            "op_id": seq, "output_dtypes": ["BFloat16"], "output_sizes": outs, "p2p_seq_id": 0,
            "pg_id": pg_id, "process_group": [pgn, "undefined"], "profiling_name": name,
            "record_id": rec, "retired": done, "state": "completed" if done else "scheduled",
            "thread_id": tid, "thread_name": THREAD_NAME, "time_created_ns": created,
            "time_discovered_completed_ns": created + 480_000 + (r * 13 + rec) % 389 * 1000 if done else 0,
            "time_discovered_started_ns": 0, "timeout_ms": TIMEOUT_MS})
    last_seq = BIG_CALLS // 2
    d = {
        "comm_lib_version": NCCL_VERSION,
        "entries": entries,
        "pg_config": {
            "0": {"desc": "default_pg", "name": "0", "ranks": ranks_str(range(n))},
            tp_name: {"desc": "undefined", "name": tp_name, "ranks": ranks_str(tp_ranks)},
            dp_name: {"desc": "undefined", "name": dp_name, "ranks": ranks_str(dp_ranks)},
        },
        "pg_status": {
            "0": {"last_completed_collective": "1", "last_enqueued_collective": "1", "last_started_collective": "-1"},
            "1": {"last_completed_collective": str(last_seq - 1 if in_bad else last_seq),
                  "last_enqueued_collective": str(last_seq), "last_started_collective": "-1"},
            "2": {"last_completed_collective": str(last_seq - 1),
                  "last_enqueued_collective": str(last_seq), "last_started_collective": "-1"},
        },
        "version": "2.10",
    }
    return dump_json_bytes(d)


def make_big(n, outdir, buffer=BIG_BUFFER):
    if n < 8 or n % 8:
        sys.exit("make-fr-fixtures.py: --big N needs N a multiple of 8 (TP groups of 8)")
    os.makedirs(outdir, exist_ok=True)
    for r in range(n):
        write(os.path.join(outdir, "nccl_trace_rank_%d.json" % r), big_json(n, r, buffer))


# --- self-check ---------------------------------------------------------------------------------
# Every fixture loads with pickle.loads / json.loads; pickles use none of the opcodes that import
# or call anything; JSON files are in dump_json's canonical form; the bad ones fail as meant.
CALLING_OPCODES = {"GLOBAL", "STACK_GLOBAL", "REDUCE", "BUILD", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX",
                   "PERSID", "BINPERSID", "EXT1", "EXT2", "EXT4"}


def opcodes(data):
    import pickletools
    return {op.name for op, _, _ in pickletools.genops(data)}


def normalized(d):
    """A dump's content with the pickle/JSON differences taken out (for rank-twice)."""
    d = json.loads(json.dumps(d, sort_keys=True))
    for st in d.get("pg_status", {}).values():
        for k in st:
            st[k] = int(st[k])
    for e in d.get("entries", []):
        e.pop("frames", None)
        for k in ("time_discovered_started_ns", "time_discovered_completed_ns"):
            e[k] = e[k] or 0
    return d


def check():
    n = 0
    for case in sorted(os.listdir(OUT)):
        if case == "bad":
            continue
        for f in sorted(os.listdir(os.path.join(OUT, case))):
            path = os.path.join(OUT, case, f)
            data = open(path, "rb").read()
            if f.endswith(".json"):
                d = json.loads(data)
                assert dump_json_bytes(d) == data, path + ": not in dump_json's form"
                assert all(isinstance(v, str) for st in d["pg_status"].values() for v in st.values()), path
                assert all("frames" not in e for e in d["entries"]), path
            else:
                d = pickle.loads(data)
                bad_ops = opcodes(data) & CALLING_OPCODES
                assert not bad_ops, "%s: %s" % (path, bad_ops)
                assert all(isinstance(e["process_group"], tuple) and e["frames"] for e in d["entries"]), path
            ids = [e["record_id"] for e in d["entries"]]
            assert ids == sorted(ids), path
            lib = {"2.5": [], "2.8": ["nccl_version"], "2.10": ["comm_lib_version"]}[d["version"]]
            keys = ["version", "pg_config"] + lib + ["pg_status", "entries"]
            assert sorted(d) == sorted(keys), path
            assert all(("thread_id" in e) == (d["version"] == "2.10") for e in d["entries"]), path
            n += 1
    bad_dir = os.path.join(OUT, "bad")
    data = open(os.path.join(bad_dir, "truncated", "nccl_trace_rank_0"), "rb").read()
    try:
        pickle.loads(data)
        raise AssertionError("bad/truncated loads")
    except (pickle.UnpicklingError, EOFError, ValueError):
        pass
    data = open(os.path.join(bad_dir, "forbidden", "nccl_trace_rank_0"), "rb").read()
    assert {"GLOBAL", "REDUCE"} <= opcodes(data), "bad/forbidden has no GLOBAL/REDUCE"
    pickle.loads(data)  # harmless: OrderedDict and datetime
    other = json.loads(open(os.path.join(bad_dir, "other-schema", "nccl_trace_rank_0.json"), "rb").read())
    assert "entries" not in other and "pg_config" not in other
    twice = os.path.join(bad_dir, "rank-twice", "nccl_trace_rank_1")
    assert normalized(pickle.loads(open(twice, "rb").read())) == normalized(json.loads(open(twice + ".json", "rb").read()))
    assert os.listdir(os.path.join(bad_dir, "empty-dir")) == [".gitkeep"]
    print("make-fr-fixtures.py: %d dumps and the bad cases check out" % n)


def main(argv):
    if len(argv) >= 2 and argv[1] == "--big":
        if len(argv) not in (4, 5):
            sys.exit("usage: make-fr-fixtures.py [--check | --big N OUTDIR [ENTRIES]]")
        buffer = int(argv[4]) if len(argv) == 5 else BIG_BUFFER
        if not 1 <= buffer <= BIG_CALLS:
            sys.exit("make-fr-fixtures.py: ENTRIES must be 1 to %d" % BIG_CALLS)
        make_big(int(argv[2]), argv[3], buffer)
        return
    if len(argv) == 2 and argv[1] == "--check":
        check()
        return
    if len(argv) != 1:
        sys.exit("usage: make-fr-fixtures.py [--check | --big N OUTDIR]")
    os.makedirs(OUT, exist_ok=True)
    write_set("seed004-json", seed004((2, 10)), "json")
    write_set("seed004-p5", seed004((2, 10)), "pickle", protocol=5)
    write_set("seed004-p4", seed004((2, 8)), "pickle", protocol=4)
    write_set("seed004-p3", seed004((2, 5)), "pickle", protocol=3)
    write_set("seed004-p2", seed004((2, 5)), "pickle", protocol=2)
    write_set("tp-one-fewer", tp_one_fewer(), "json")
    write_set("cycle4", cycle4(), "pickle", protocol=4)
    write_set("missing-rank", seed004((2, 10)), "json", skip={3})
    bad()
    check()


if __name__ == "__main__":
    main(sys.argv)
