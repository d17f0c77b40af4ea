/* sched/postmortem.h — the engine's diagnosis of a recorded run: what each rank's record says
 * it was doing when the job hung, judged by the same rules as a simulated hang.
 *
 * The caller (src/cli/cmd-import.c, from Flight Recorder dumps or NCCL logs) says per rank whether
 * it is blocked in a collective instance (group, seq) with its signature, idle (every recorded
 * call completed), or unknown (no record was read). sched_postmortem() forms the instances the
 * blocked ranks wait in, votes on their signatures (a `mismatch` when members that all arrived
 * disagree; ranks without a record count as able to bring any signature, so a lead they could
 * overturn decides nothing), and builds the AND wait-for graph across groups with its cycles
 * and culprits (a `deadlock`), exactly as sched/diagnose.c does for a simulated run. Ranks
 * without a record are never culprits: they are named as undecided.
 *
 * Costs: O(ranks log ranks + members of the blocking instances); diagnosis allocates freely.
 */
#ifndef SCHED_POSTMORTEM_H
#define SCHED_POSTMORTEM_H

#include "engine.h"

typedef enum {
    SCHED_PM_IDLE = 0, /* every recorded call completed; in no collective */
    SCHED_PM_BLOCKED,  /* in a collective that did not complete */
    SCHED_PM_UNKNOWN,  /* no record of this rank */
} SchedPmState;

typedef struct {
    SchedPmState state;
    /* blocked: the instance it waits in and what it brought */
    int32_t group;     /* group id in the program */
    uint64_t seq;      /* the group's sequence number as recorded */
    uint8_t kind;      /* SchedOpKind */
    uint8_t dtype;     /* SchedDtype */
    uint64_t count;    /* input elements */
    int32_t root;      /* broadcast root (global rank) or -1 */
    uint32_t name;     /* op name id in the program */
    int64_t arrive_ns; /* when it entered (relative to the record's start) */
    /* idle: when its last recorded call completed (or was made), relative */
    int64_t last_ns;
    uint64_t calls; /* recorded calls (SchedRankStats.ops) */
} SchedPmRank;

typedef struct {
    int64_t timeout_ns; /* the recorded collective timeout (WorkNCCL's Timeout(ms)), 0 unknown */
    int64_t end_ns;     /* the latest recorded time, relative: the outcome's end */
} SchedPmConfig;

/* Diagnoses `ranks[0..p->n_ranks)` against `p`'s groups and names (its op lists are not
 * used). Returns a new outcome: one state per rank (blocked, done = idle, unknown), the groups,
 * and the diagnostics — `mismatch` per disagreeing instance, one `deadlock` when any rank is
 * blocked, or one `no_hang` warning when no rank is. Never fails; a blocked rank naming a group
 * it is not a member of asserts (the caller checks). */
SchedOutcome *sched_postmortem(const SchedProgram *p, const SchedPmRank *ranks,
                               const SchedPmConfig *cfg);

#endif
