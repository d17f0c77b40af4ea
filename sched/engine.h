/* sched/engine.h — runs a SchedProgram: one actor per rank, blocking collectives, faults,
 * watchdog, and the diagnosis of mismatches, timeouts and deadlocks.
 *
 * Semantics (doc/ARCHITECTURE.md has the long form):
 * - Each rank executes its ops in order on one stream. Compute advances its clock.
 * - A collective is an arrival at the instance (group, seq), seq counting the rank's calls on
 *   that group from 1 (PyTorch's SeqNum). When every member has arrived the signatures
 *   (kind, count, dtype, root) are compared; equal -> the instance completes at the last
 *   arrival + net cost and every member resumes then. Different -> a `mismatch` diagnostic and
 *   the on_mismatch policy. send/recv pair up the same way on the implicit channel src->dst.
 * - No pending event while ranks are blocked = deadlock: one `deadlock` diagnostic with the
 *   wait-for graph, its cycles and the culprits.
 * - Watchdog: an instance whose first arrival is older than collective_timeout_ns when simulated
 *   time moves past that deadline gives `timeout` diagnostics and stops the run.
 *
 * Costs: O(log pending) per op (the event queue), O(members) per collective instance; no
 * allocation per event once pools reach their high-water mark. Findings are made by
 * sched/diagnose.c from the engine's record (sched/record.h), only when something is found.
 * The outcome and diagnostic types are in sched/diag.h. Time is integer nanoseconds throughout.
 */
#ifndef SCHED_ENGINE_H
#define SCHED_ENGINE_H

#include "../net/fabric.h"
#include "diag.h"
#include "program.h"

/* The latest simulated time the engine represents (INT64_MAX / 4 ns, about 73 years);
 * an op that would end later stops the run with a `time` diagnostic. */
#define SCHED_TIME_MAX (INT64_MAX / 4)
_Static_assert(SCHED_TIME_MAX == NET_TIME_MAX_NS, "the engine and the fabric share one limit");

typedef enum {
    SCHED_MISMATCH_HANG = 0, /* the instance never completes (what NCCL does) */
    SCHED_MISMATCH_ABORT,    /* stop the run at the mismatch */
    SCHED_MISMATCH_CONTINUE, /* complete with the largest size, keep looking */
} SchedMismatchPolicy;

typedef enum {
    SCHED_TIMELINE_NONE = 0,    /* record only collective arrivals that never completed */
    SCHED_TIMELINE_COLLECTIVES, /* every collective and p2p op */
    SCHED_TIMELINE_FULL,        /* every op */
} SchedTimeline;

typedef enum {
    SCHED_FAULT_DELAY = 0, /* op `op_name`, occurrence N: starts `delay_ns` later */
    SCHED_FAULT_SLOWDOWN,  /* every compute op on the rank takes `factor` times longer */
    SCHED_FAULT_CRASH,     /* at `at_ns`, or on reaching occurrence N of `op_name` */
    SCHED_FAULT_SKIP,      /* occurrence N of `op_name` is not executed */
} SchedFaultKind;

typedef struct {
    SchedFaultKind kind;
    int32_t rank;
    int64_t op_name;     /* name id in the program, or -1 (crash at a time; slowdown) */
    uint64_t occurrence; /* 1-based, counted per rank over ops with that name */
    int64_t delay_ns;    /* delay */
    double factor;       /* slowdown, > 0 */
    int64_t at_ns;       /* crash at a time, or -1 */
    const char *reason;  /* crash: why, for a failure a model predicts (a static or interned
                            string); NULL: an injected fault */
} SchedFault;

/* SchedRecord.flags: the op began a segment of its rank's time line (SCHED_OP_FLAG_SEGMENT). */
#define SCHED_RECORD_SEGMENT 1u

/* One executed (or never-completed) op of one rank, handed to the recorder. */
typedef struct {
    uint32_t rank;
    uint8_t kind;       /* SchedOpKind */
    uint8_t dtype;      /* collectives, p2p */
    uint8_t bound;      /* compute: SchedBound of the op */
    uint8_t flags;      /* SCHED_RECORD_SEGMENT: the op carried SCHED_OP_FLAG_SEGMENT */
    int32_t layer;      /* -1: none */
    uint32_t name;      /* name id */
    int32_t group;      /* group id (p2p ops: their channel's group id); -1 for compute */
    uint64_t idx;       /* position in the rank's executed sequence, from 0 */
    uint64_t seq;       /* per-group sequence number from 1; 0 for compute */
    uint64_t count;     /* elements */
    uint64_t tokens;
    int64_t start_ns;   /* compute start, or arrival */
    int64_t end_ns;     /* compute end, or completion; -1 = never completed */
} SchedRecord;

typedef void (*SchedRecordFn)(void *user_data, const SchedRecord *rec);
/* Called every SCHED_PROGRESS_EVENTS events with the simulated time and work so far. */
typedef void (*SchedProgressFn)(void *user_data, int64_t now_ns, uint64_t rank_ops,
                                uint64_t events);
#define SCHED_PROGRESS_EVENTS (1u << 18)

typedef struct {
    SchedMismatchPolicy on_mismatch;
    int64_t collective_timeout_ns;  /* 0 disables the watchdog; default 600 s */
    bool watchdog_hccl;             /* the process group is torch_npu's ProcessGroupHCCL: its
                                       watchdog prints WorkHCCL(SeqNum, OpType, Timeout(ms));
                                       false: PyTorch's ProcessGroupNCCL, WorkNCCL(... NumelIn,
                                       NumelOut ...) */
    int64_t straggler_threshold_ns; /* 0 disables straggler warnings */
    NetFabricConfig fabric;         /* hardware, nodes, algorithms, contention, link faults;
                                       n_ranks is taken from the program */
    const SchedFault *faults;       /* borrowed for the run */
    uint32_t n_faults;
    SchedTimeline timeline;
    SchedRecordFn record;           /* may be NULL */
    void *record_data;
    SchedProgressFn progress;       /* may be NULL */
    void *progress_data;
} SchedConfig;

/* Defaults: hang on mismatch, 600 s watchdog (PyTorch's default), 10 s straggler threshold,
 * the flat default fabric (net_hardware_flat) with contention on and automatic algorithms,
 * full timeline, no faults, no recorder. */
SchedConfig sched_config_default(void);

/* Runs `p` (validated with sched_program_validate by the caller) to completion, quiescence or
 * stop. Records are passed to cfg->record in event order, so the sequence is deterministic.
 * Returns a new outcome (caller frees). This function can't fail; a broken program invariant
 * asserts. */
SchedOutcome *sched_engine_run(const SchedProgram *p, const SchedConfig *cfg);

#endif
