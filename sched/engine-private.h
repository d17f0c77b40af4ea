/* sched/engine-private.h — the engine's run-time state (engine.c only). Its instances embed the
 * record's SchedInstance (sched/record.h), so the record diagnosis reads is the engine's own
 * state, with nothing copied per event. Not a public header. */
#ifndef SCHED_ENGINE_PRIVATE_H
#define SCHED_ENGINE_PRIVATE_H

#include "engine.h"
#include "queue.h"
#include "record.h"

typedef struct Instance Instance;
struct Instance {
    SchedInstance r; /* group, seq, arrivals: what the record shows */
    uint32_t id;     /* index in Engine.instances */
    uint32_t gen;    /* bumped on release; stale completion events carry the old value */
    bool unwatched;  /* every member that arrived has crashed: no watchdog runs for it until
                        the next arrival (which restarts first_arrive_ns) */
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
    GPtrArray *defs;       /* const SchedGroup* by group id: the program's, then p2p channels */
    GPtrArray *own_groups; /* SchedGroup* for p2p channels (owned) */
    GHashTable *channels;  /* (src << 32 | dst) -> group id + 1 */
    GPtrArray *instances;  /* Instance*, owned */
    Instance *live_head, *live_tail;
    FaultRt *faults;
    uint32_t n_faults;
    NetFabric *fabric;
    bool stop;
    SchedRunRecord *rec;   /* what diagnosis reads: groups and names from init, instances and
                              rank states refreshed before a whole-run finding */
    SchedOutcome *out;
} Engine;

#endif
