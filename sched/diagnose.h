/* sched/diagnose.h — findings made from a run's record (sched/record.h): mismatch, shape,
 * divergence, straggler, timeout, crash and deadlock diagnostics, each with a human message
 * and a JSON detail object; and the one typed reader of that detail (sched_detail_parse).
 *
 * The same rules judge a simulated run (the engine calls the per-instance steps as it finds
 * them and the deadlock at quiescence) and a recorded one (sched_diagnose_record); the words
 * differ only by what the record says (a rank idle rather than finished, the evidence of a
 * rank, the record's mismatch policy), never by who filled it.
 *
 * Runs only when something is found (never per event), so it allocates and formats freely.
 * The deadlock analysis builds the wait-for graph over blocked ranks (an edge r -> m for each
 * member m missing from the instance r waits in: r needs all of them, an AND wait), finds its
 * cycles as the strongly connected components (iterative Tarjan, O(V + E)), and names culprits:
 * ranks that finished, went idle or crashed while others wait on them, and the minority ranks
 * of instances poisoned by a mismatch. Ranks without evidence are never culprits: they are
 * named as undecided. Findings are appended to `out` with time rec->now_ns.
 */
#ifndef SCHED_DIAGNOSE_H
#define SCHED_DIAGNOSE_H

#include "record.h"

/* Members of `inst` disagree (`shape_only`: they agree but the count does not split over the
 * group): a `mismatch` (or `shape`) with the signatures, the majority and the culprits. Members
 * without evidence count as able to bring any signature. */
void sched_diagnose_mismatch(const SchedRunRecord *rec, const SchedInstance *inst,
                             bool shape_only, SchedOutcome *out);
/* The signatures of `inst` agree but its members are at different ops: a `divergence` warning. */
void sched_diagnose_divergence(const SchedRunRecord *rec, const SchedInstance *inst,
                               SchedOutcome *out);
/* `inst` completed with members later than `threshold_ns` after the first: a `straggler`. */
void sched_diagnose_straggler(const SchedRunRecord *rec, const SchedInstance *inst,
                              int64_t threshold_ns, SchedOutcome *out);
/* The watchdog's deadline for `inst` passed at rec->now_ns: one `timeout` naming the members
 * whose own wait reached rec->timeout_ns. Returns false (and writes nothing) when no living
 * member has waited that long. Reads the rank states. */
bool sched_diagnose_timeout(const SchedRunRecord *rec, const SchedInstance *inst,
                            SchedOutcome *out);
/* Rank `rank` crashed at rec->now_ns in `layer`, on reaching op `why` (NULL: at a time);
 * `reason`: what a model says caused it, NULL: an injected fault. */
void sched_diagnose_crash(const SchedRunRecord *rec, uint32_t rank, int32_t layer,
                          const char *why, const char *reason, SchedOutcome *out);
/* Ranks are blocked and nothing will move: one `deadlock` over rec->instances and the rank
 * states. */
void sched_diagnose_deadlock(const SchedRunRecord *rec, SchedOutcome *out);
/* Judges a record no engine ran (a real hang's files): a `mismatch` for every instance whose
 * members all arrived or left no evidence and disagree (it is marked mismatched and poisoned),
 * then one `deadlock` when a rank is blocked, else one `no_hang` warning. Returns a new
 * outcome (caller frees): the record's groups, those findings, and per rank its state
 * (blocked, crashed, unknown, else done), calls, end and wait until rec->now_ns; the outcome
 * ends at rec->now_ns. Never fails. */
SchedOutcome *sched_diagnose_record(SchedRunRecord *rec);

/* ---- reading a diagnostic's detail back (every view uses this one reader) ---- */

/* One signature of a `mismatch` detail. */
typedef struct {
    char *kind;   /* op kind name, or NULL */
    int64_t count;
    char *dtype;  /* or NULL */
    int32_t root; /* -1: none */
    char *op;     /* or NULL */
    int32_t layer;
    int64_t tokens; /* the rows the call carries, 0: not recorded */
    GArray *ranks; /* int32_t */
} SchedDetailSig;

/* A missing member of an instance (`deadlock`, `timeout`). */
typedef struct {
    int32_t rank;
    char *state; /* "finished", "idle", "crashed", "blocked", "unknown", "computing", ... */
    char *doing; /* describe-rank text, or NULL */
} SchedDetailMissing;

/* One instance of a `deadlock` detail (also the instance of a `timeout`). */
typedef struct {
    char *group; /* or NULL */
    uint64_t seq;
    bool has_seq;
    char *op;    /* or NULL */
    int32_t layer;
    bool mismatched;
    GArray *arrived; /* int32_t */
    GArray *missing; /* SchedDetailMissing */
    char *hardware;  /* watchdog line, or NULL */
} SchedDetailInstance;

/* A blocked rank of a `deadlock` detail. */
typedef struct {
    int32_t rank;       /* -1: absent */
    double since_us;    /* -1: absent */
    int64_t instance;   /* index into instances, -1 none */
} SchedDetailBlocked;

typedef struct {
    int32_t rank;
    char *reason; /* "finished", "idle", "crashed", "mismatch", or NULL */
} SchedDetailCulprit;

/* A diagnostic's detail JSON, typed. Members absent from the JSON are empty arrays, NULL
 * strings, -1 ranks/layers/indices and 0 numbers; has_* says which scalars were present. */
typedef struct {
    /* mismatch, timeout, deadlock */
    char *group;
    uint64_t seq;
    bool has_seq;
    char *policy;          /* mismatch */
    GArray *signatures;    /* SchedDetailSig (mismatch) */
    int32_t majority;      /* index into signatures, -1: none */
    GArray *culprits;      /* SchedDetailCulprit: mismatch (plain ints, reason NULL) and deadlock */
    GArray *unknown;       /* int32_t: ranks without a record */
    GArray *instances;     /* SchedDetailInstance (deadlock) */
    GArray *blocked;       /* SchedDetailBlocked (deadlock) */
    GArray *edges;         /* int32_t pairs: from, to (deadlock) */
    GPtrArray *cycles;     /* GArray<int32_t> each (deadlock) */
    char *hardware;        /* deadlock: all watchdog lines; timeout: the line; or NULL */
    GArray *waiting;       /* int32_t (timeout) */
    GArray *arrived;       /* int32_t (timeout) */
    GArray *missing;       /* SchedDetailMissing (timeout) */
    double arrive_us;      /* timeout; -1 absent */
    GArray *late;          /* int32_t (straggler) */
    double spread_us;      /* straggler */
    GArray *members;       /* SchedDetailSig, op/layer/ranks only (divergence) */
    int64_t count;         /* shape */
    int64_t group_size;    /* shape */
} SchedDetail;

/* Parses a diagnostic's detail JSON. Returns NULL when `json` is NULL or not a JSON object;
 * members of the wrong type are treated as absent. Caller frees with sched_detail_free. */
SchedDetail *sched_detail_parse(const char *json);
void sched_detail_free(SchedDetail *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SchedDetail, sched_detail_free)

#endif
