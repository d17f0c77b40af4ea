/* sched/diag.h — what a run found and how it ended: diagnostics (SchedDiag), per-rank
 * statistics (SchedRankStats) and the outcome that holds them (SchedOutcome), plus the two
 * formatters every finding's text uses (rank lists, times).
 *
 * Written by the engine (sched/engine.c) and by the diagnosis of a record (sched/diagnose.c);
 * later layers add their own findings (model checks, memory plan) with sched_diag_new and
 * sched_outcome_add_diag. An outcome owns its diagnostics, rank array and group lists; free it
 * with sched_outcome_free. Nothing here can fail.
 */
#ifndef SCHED_DIAG_H
#define SCHED_DIAG_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum {
    SCHED_RANK_DONE = 0, /* ran its last op */
    SCHED_RANK_BLOCKED,  /* waiting in a collective when the run ended */
    SCHED_RANK_CRASHED,  /* a crash fault stopped it */
    SCHED_RANK_STOPPED,  /* busy computing when the run was stopped (timeout, abort) */
    SCHED_RANK_UNKNOWN,  /* a recorded run without this rank's record (sched/record.h) */
    SCHED_RANK_NOT_RUN,  /* never began its program: the job stopped before it (set by the
                            caller, e.g. a deployment that fails at start-up) */
} SchedRankState;

typedef enum {
    SCHED_SEV_ERROR = 0,
    SCHED_SEV_WARNING,
} SchedSeverity;

typedef struct {
    const char *kind; /* "deadlock", "mismatch", "timeout", "straggler", "divergence", "shape",
                         "crash" (static strings; later layers add their own) */
    SchedSeverity severity;
    int32_t rank;     /* a rank the finding is about, or -1 */
    int32_t group;    /* group id or -1 */
    uint64_t seq;     /* 0 = none */
    int32_t layer;    /* -1 = none */
    char *op_name;    /* may be NULL */
    char *message;    /* one human-readable paragraph, may span lines */
    char *detail;     /* JSON object text, may be NULL; read it with sched_detail_parse
                         (sched/diagnose.h) */
    int64_t time_ns;  /* simulated time of the finding */
} SchedDiag;

typedef struct {
    SchedRankState state;
    int64_t end_ns;     /* done: last op end; blocked: arrival at the blocking op;
                           crashed: crash time; stopped: stop time */
    int64_t compute_ns; /* time in compute ops (incl. injected delays) */
    int64_t comm_ns;    /* time in collectives after the last member arrived */
    int64_t wait_ns;    /* time waiting for other members to arrive */
    uint64_t ops;       /* ops executed */
} SchedRankStats;

typedef struct {
    bool failed;          /* any error diagnostic */
    int64_t end_ns;       /* simulated time when the run ended */
    uint64_t events;      /* events popped from the queue */
    uint64_t rank_ops;    /* ops executed over all ranks */
    uint32_t n_ranks;
    SchedRankStats *ranks;
    GPtrArray *diags;     /* SchedDiag*, in the order found */
    GPtrArray *groups;    /* char* group names incl. implicit p2p channels, index = group id */
    GPtrArray *group_members; /* GArray<int32_t>* per group id */
} SchedOutcome;

/* A new empty outcome for `n_ranks` ranks (stats zeroed, no diagnostics, no groups). */
SchedOutcome *sched_outcome_new(uint32_t n_ranks);
/* Appends group `name` with members ranks[0..n) (copied); its id is the next index. */
void sched_outcome_add_group(SchedOutcome *o, const char *name, const int32_t *ranks, uint32_t n);
void sched_outcome_free(SchedOutcome *o);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SchedOutcome, sched_outcome_free)

/* A diagnostic from outside the engine (model checks, memory plan): strings are copied. */
SchedDiag *sched_diag_new(const char *kind, SchedSeverity sev, int32_t rank, int32_t group,
                          uint64_t seq, int32_t layer, const char *op_name, const char *message,
                          const char *detail);
void sched_diag_free(SchedDiag *d);
/* Appends `d` (taken over) to the outcome; an error marks the outcome failed. `kind` must be a
 * static string. */
void sched_outcome_add_diag(SchedOutcome *o, SchedDiag *d);

const char *sched_rank_state_name(SchedRankState s);
const char *sched_severity_name(SchedSeverity s);

/* Formats a sorted rank list compactly: {0,1,2,3,5,7,8} -> "0-3,5,7-8". Caller frees. */
char *sched_format_ranks(const int32_t *ranks, uint32_t n);
/* The same set for people: runs of consecutive ranks "0-7"; strided runs of four or more
 * "0,8,...,600" (first, second, last: the step reads from the first two); and, past
 * `max_chars` (0: no limit), cut after a whole item with ",... (N ranks)". Not for parsing back.
 * Caller frees. */
char *sched_format_ranks_brief(const int32_t *ranks, uint32_t n, size_t max_chars);
/* Formats a simulated time for people: "12.345 us", "1.234 ms", "2.000 s"; "-" when negative
 * (unknown). Caller frees. */
char *sched_format_ns(int64_t ns);

#endif
