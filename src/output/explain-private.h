/* src/output/explain-private.h — the story explain.c reads out of a failed run's diagnostics, shared
 * with its DOT writer (explain-dot.c). Private to those two files. */
#ifndef SRC_EXPLAIN_PRIVATE_H
#define SRC_EXPLAIN_PRIVATE_H

#include <glib.h>
#include <stdint.h>

#include "../../sched/diagnose.h"
#include "../../sched/engine.h"

typedef struct {
    int32_t rank;
    const char *state; /* "finished", "crashed", "blocked", "computing", ... */
    const char *doing; /* "finished at 1.000 ms", "blocked in x (group g, seq 2) since ..." */
} Missing;

typedef struct {
    const char *source; /* "deadlock", "timeout" or "mismatch" */
    const char *group;
    int64_t seq;
    const char *op;
    int32_t layer; /* -1: none */
    bool mismatched;
    int64_t since_ns;     /* first arrival of a waiting rank, -1 unknown */
    int64_t fired_ns;     /* timeout: when the watchdog fired; else -1 */
    GArray *arrived;      /* int32 ranks */
    GArray *waiting;      /* int32 ranks left waiting in it (edges start here) */
    GArray *missing;      /* Missing */
    const char *hardware; /* WorkNCCL(...) line, may be NULL */
} Inst;

typedef struct {
    int32_t rank;
    const char *reason; /* "finished", "crashed", "mismatch" */
} Culprit;

typedef struct {
    GPtrArray *details;          /* SchedDetail* the strings point into */
    GPtrArray *insts;            /* Inst* */
    GPtrArray *cycles;           /* GArray<int32> sorted, from the deadlock detail */
    GArray *culprits;            /* Culprit, one per rank */
    const SchedDiag *deadlock;   /* the deadlock diagnostic, or NULL */
    const SchedDiag *divergence; /* the first mismatch / divergence / shape, or NULL */
    const char *continued;       /* group of the first mismatch run on with on_mismatch:
                                    continue, or NULL */
    bool tie;                    /* a mismatch had no majority signature */
    const char *hw_deadlock;     /* deadlock detail.hardware, may be NULL */
    int32_t n;                   /* size of the per-rank arrays: the world size, or (an
                                    outcome without rank rows) 1 + the largest rank mentioned */
    bool grow;                   /* n follows the ranks mentioned */
} Story;

Story *explain_story_new(const SchedOutcome *o);
void explain_story_free(Story *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Story, explain_story_free)
/* cycle id + 1 per rank (0 = in no cycle); caller frees. */
int32_t *explain_cycle_of(const Story *s);
/* Instance index each rank waits in, -1 for none; caller frees. */
int32_t *explain_waits_in(const Story *s);
const Culprit *explain_culprit_of(const Story *s, int32_t rank);
/* "op (group g, seq 3, layer 5)"; caller frees. */
char *explain_fmt_where(const char *op, const char *group, int64_t seq, int32_t layer);
/* "0-3, 8"; caller frees. */
char *explain_fmt_ranks(GArray *ranks);

#endif
