/* sched/engine-private.h — the engine's run-time state, shared by engine.c (the event loop)
 * and diagnose.c (what is written when something goes wrong). Not a public header. */
#ifndef SCHED_ENGINE_PRIVATE_H
#define SCHED_ENGINE_PRIVATE_H

#include "engine.h"
#include "queue.h"

typedef struct {
    int64_t arrive_ns;
    uint64_t idx;    /* the rank's op index */
    uint64_t pg_seq; /* the process group's SeqNum of this call on this rank (seq_base + its
                        watched calls so far); 0: the kind runs outside the watchdog */
    uint64_t count;
    uint64_t tokens;
    int32_t layer;
    uint32_t name;
    int32_t root;
    uint8_t kind;
    uint8_t dtype;
    bool present;
    bool eager; /* the member went on without waiting (SCHED_OP_FLAG_EAGER) */
} Arrival;

typedef struct Instance Instance;
struct Instance {
    uint32_t id;  /* index in Engine.instances */
    uint32_t gen; /* bumped on release; stale completion events carry the old value */
    int32_t group;
    uint64_t seq;
    uint32_t n, arrived;
    int64_t first_arrive_ns, last_arrive_ns;
    bool poisoned;   /* a mismatch under `hang`, or a crashed member: never completes */
    bool mismatched; /* members disagreed (mismatch or shape) */
    bool completing; /* completion event scheduled */
    bool unwatched;  /* every member that arrived has crashed: no watchdog runs for it until
                        the next arrival (which restarts first_arrive_ns) */
    Arrival *arr;    /* n entries, indexed by member position */
    Instance *live_prev, *live_next; /* Engine live list, ordered by first arrival */
    Instance *grp_next;              /* group's live list, or its free list */
};

typedef struct {
    const SchedGroup *def;
    Instance *live;
    Instance *free;
    uint64_t *member_seq;    /* calls made so far, per member position */
    uint64_t *member_pg_seq; /* watched calls so far, from the group's seq_base, per member */
    bool divergence_reported;
} GroupRt;

typedef enum {
    ACT_READY = 0, /* a resume event is pending (or about to run) */
    ACT_COMPUTING,
    ACT_DELAYING, /* an injected delay before a collective */
    ACT_BLOCKED,
    ACT_DONE,
    ACT_CRASHED,
    ACT_STOPPED,
    ACT_UNKNOWN, /* postmortem only: no record of this rank was read */
} ActorState;

typedef struct {
    uint32_t start, end, times, iter;
    int32_t layer_start; /* -1: inherits */
    int32_t outer_layer; /* layer to restore on exit */
} Frame;

typedef struct {
    const SchedOp *ops;
    uint32_t len;
    uint32_t pc;
    uint32_t depth;
    Frame stack[SCHED_MAX_REPEAT_DEPTH];
    int32_t layer;
    uint64_t idx; /* ops executed so far */
    ActorState st;
    bool faults_checked; /* faults already applied to the op at pc */
    double slowdown;
    uint32_t fault_first, fault_n; /* range in Engine.faults */
    Instance *waiting;
    int64_t wait_since_ns;
    SchedRecord cur; /* in-flight compute op */
    SchedRankStats stats;
} Actor;

typedef struct {
    SchedFault f;
    uint64_t seen; /* occurrences of f.op_name on f.rank so far */
} FaultRt;

typedef struct {
    const SchedProgram *p;
    SchedConfig cfg;
    SchedQueue q;
    int64_t now;
    uint64_t events;
    uint64_t rank_ops;
    Actor *actors;
    uint32_t n_ranks;
    GroupRt *groups;
    uint32_t n_groups;
    GPtrArray *own_groups; /* SchedGroup* for p2p channels (owned) */
    GHashTable *channels;  /* (src << 32 | dst) -> group id + 1 */
    GPtrArray *instances;  /* Instance*, owned */
    Instance *live_head, *live_tail;
    FaultRt *faults;
    uint32_t n_faults;
    NetFabric *fabric;
    bool stop;
    bool postmortem; /* diagnosing a recorded run (sched/postmortem.c): idle, not finished */
    SchedOutcome *out;
} Engine;

/* engine.c */
bool arrival_same_signature(const Arrival *a, const Arrival *b, bool p2p);

/* diagnose.c */
void diag_add(Engine *e, const char *kind, SchedSeverity sev, int32_t rank, int32_t group,
              uint64_t seq, int32_t layer, const char *op_name, char *message, char *detail);
void diagnose_mismatch(Engine *e, Instance *inst, bool shape_only);
void diagnose_divergence(Engine *e, Instance *inst);
void diagnose_straggler(Engine *e, Instance *inst);
/* Writes the timeout diagnostics due at `at_ns`; returns how many it wrote. */
guint diagnose_timeout(Engine *e, int64_t at_ns);
/* The first live instance the watchdog watches, or NULL. */
Instance *watch_head(const Engine *e);
void diagnose_deadlock(Engine *e);
/* `reason`: what a model says caused it; NULL: an injected fault. */
void diagnose_crash(Engine *e, uint32_t rank, const char *why, const char *reason);
/* "blocked in X (group g, seq s, layer l)", "finished at ...", ...; caller frees. */
char *describe_rank(const Engine *e, uint32_t rank);
const char *group_name(const Engine *e, int32_t gid);

#endif
