/* sched/record.h — the neutral record of a run that diagnosis reads (sched/diagnose.h): the
 * groups, the collective instances that did not complete with who arrived in each and with
 * what signature, and what each rank was doing at the end with the evidence behind it.
 *
 * Two writers, neither knowing the other:
 * - the engine (sched/engine.c) fills it from its own state when it diagnoses: its instances
 *   embed a SchedInstance, so nothing is copied per event; the rank states are refreshed only
 *   before a whole-run finding (timeout, deadlock);
 * - an importer (src/import/) fills it from a real hang's files: sched_run_record_arrive per
 *   blocked rank, a state per other rank, then sched_run_record_seal.
 * The full history of calls (what the `collectives` table stores) travels as SchedRecord
 * (sched/engine.h); this record keeps what a finding is made of.
 *
 * Ownership: a record borrows its groups and its name table; it owns the rank array and the
 * instances it made itself (sched_run_record_arrive). Costs: O(1) per arrival (a hash on
 * (group, seq)), O(instances log instances) to seal. Misuse (a rank outside the group it
 * arrives in) asserts.
 */
#ifndef SCHED_RECORD_H
#define SCHED_RECORD_H

#include "diag.h"
#include "program.h"

/* One member's arrival at an instance: what it brought and when. */
typedef struct {
    int64_t arrive_ns;
    uint64_t idx;    /* the rank's op (or call) index */
    uint64_t pg_seq; /* the process group's SeqNum of this call on this rank (the engine: its
                        seq_base + its watched calls so far; a record: the recorded sequence
                        number); 0: the kind runs outside the watchdog */
    uint64_t count;  /* input elements */
    uint64_t tokens;
    int32_t layer;   /* -1: none */
    uint32_t name;   /* op name id in the record's name table */
    int32_t root;    /* broadcast root (global rank) or -1 */
    uint8_t kind;    /* SchedOpKind */
    uint8_t dtype;   /* SchedDtype */
    bool present;    /* the member arrived */
    bool eager;      /* the member went on without waiting (SCHED_OP_FLAG_EAGER) */
    bool segment;    /* the op began a segment of the rank's time line (SCHED_OP_FLAG_SEGMENT) */
    bool done;       /* a record: the member completed its side of the call (its process
                        group's status says so) while others still wait in it; present too,
                        so it is never waited on, and its signature (not on record) does not
                        vote in a mismatch */
    bool queued;     /* a record: the member called it (not present) but the call is queued
                        on its stream behind the one it is blocked in */
    bool nosig;      /* a record places the member here without its signature (a watchdog
                        status line): it does not vote in a mismatch */
} SchedArrival;

/* One collective instance (group, seq) that did not complete. */
typedef struct {
    int32_t group; /* index into the record's groups */
    uint64_t seq;  /* the group's sequence number, from 1 */
    uint32_t n, arrived;
    int64_t first_arrive_ns, last_arrive_ns;
    bool poisoned;   /* a mismatch under `hang`, or a crashed member: never completes */
    bool mismatched; /* members disagreed (mismatch or shape) */
    bool completing; /* every member arrived and agreed: its transfer is under way */
    SchedArrival *arr; /* n entries, indexed by member position */
} SchedInstance;

/* What was seen of a rank at the end. */
typedef enum {
    SCHED_SEEN_RUNNING = 0, /* between ops (or stopped while running) */
    SCHED_SEEN_COMPUTING,   /* in a compute op: doing_name, doing_layer, until doing_until_ns */
    SCHED_SEEN_DELAYING,    /* an injected delay before its next op */
    SCHED_SEEN_BLOCKED,     /* in `waiting`, an instance that did not complete */
    SCHED_SEEN_DONE,        /* ran its last op (a simulated rank) */
    SCHED_SEEN_IDLE,        /* its last recorded call completed and it made no further call */
    SCHED_SEEN_CRASHED,
    SCHED_SEEN_UNKNOWN,     /* no evidence: its dump or log is missing */
} SchedSeen;

/* Where a rank's state comes from. */
typedef enum {
    SCHED_EVIDENCE_SIMULATED = 0, /* the engine ran it: the state is exact */
    SCHED_EVIDENCE_RECORD,        /* a dump or log of the rank was read */
    SCHED_EVIDENCE_NONE,          /* nothing of it was read */
} SchedEvidence;

typedef struct {
    SchedSeen state;
    SchedEvidence evidence;
    const char *source;           /* the file the evidence came from (borrowed), or NULL */
    int64_t end_ns;               /* done: last op end; idle: last recorded completion;
                                     blocked: arrival; crashed: crash time */
    const SchedInstance *waiting; /* blocked: the instance it waits in */
    uint32_t doing_name;          /* computing: the op's name id */
    int32_t doing_layer;          /* computing: its layer, -1 none */
    int64_t doing_until_ns;       /* computing: when it ends */
    uint64_t calls;               /* ops executed / calls recorded */
} SchedRankSeen;

typedef struct {
    uint32_t n_ranks;
    SchedRankSeen *ranks;             /* n_ranks, owned */
    const SchedGroup *const *groups;  /* by group id, borrowed */
    uint32_t n_groups;
    const SchedProgram *names;        /* op name table (sched_program_name_str), borrowed */
    GPtrArray *instances;             /* SchedInstance*: those that did not complete, in
                                         first-arrival order (the engine's live list) */
    int64_t now_ns;                   /* when the findings are made: the run's end */
    int64_t timeout_ns;               /* the collective timeout; 0: disabled or unknown */
    bool watchdog_hccl;               /* torch_npu's ProcessGroupHCCL prints the watchdog line */
    const char *mismatch_policy;      /* "hang", "abort", "continue", or "recorded" (a record:
                                         what happened is what the files show) */
    GHashTable *by_key;               /* (group, seq) -> SchedInstance*, those made here */
    GPtrArray *owned;                 /* SchedInstance* made here */
} SchedRunRecord;

/* A record of `n_ranks` ranks (all SCHED_SEEN_RUNNING, simulated), no instances, watchdog off,
 * policy "hang". Groups and names are borrowed and must outlive the record. */
SchedRunRecord *sched_run_record_new(uint32_t n_ranks, const SchedGroup *const *groups,
                                     uint32_t n_groups, const SchedProgram *names);
void sched_run_record_free(SchedRunRecord *rec);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SchedRunRecord, sched_run_record_free)

/* Rank `rank` arrived (and is blocked) in instance (group, seq) with `a` (present is set): the
 * instance is made on first use. The rank's state becomes blocked there, its end its arrival.
 * Returns the instance (owned by the record). Asserts that the rank is a member. */
SchedInstance *sched_run_record_arrive(SchedRunRecord *rec, uint32_t rank, int32_t group,
                                       uint64_t seq, const SchedArrival *a);
/* What a record shows of member `rank` of an instance others block in, without changing the
 * rank's state: `done`, it completed its side (an arrival `a` with present and done set; `a`
 * may be NULL: the signature of the first member present is taken, for the record does not
 * show it); else it called it queued behind its own blocking point (queued set, not present).
 * Returns the instance, NULL (nothing noted) when no rank arrived in (group, seq) or the rank
 * is not a member or already present. */
SchedInstance *sched_run_record_note(SchedRunRecord *rec, uint32_t rank, int32_t group,
                                     uint64_t seq, bool done, const SchedArrival *a);
/* Orders the instances made by sched_run_record_arrive by first arrival (then group, seq) into
 * rec->instances; call once after the last arrival. */
void sched_run_record_seal(SchedRunRecord *rec);

/* Whether two arrivals bring the same signature (p2p: a send and its recv, by count and
 * dtype; otherwise kind, count, dtype and root). On the engine's hot path: inline. */
static inline bool sched_arrival_same_signature(const SchedArrival *a, const SchedArrival *b,
                                                bool p2p)
{
    if (p2p) /* one send and one recv by construction */
        return a->count == b->count && a->dtype == b->dtype;
    return a->kind == b->kind && a->count == b->count && a->dtype == b->dtype && a->root == b->root;
}

#endif
