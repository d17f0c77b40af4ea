/* src/run/sweep.h — the state `ranksim sweep` shares between its loop (cmd-sweep.c) and its
 * output (sweep-output.c: the table, the summary, JSON and CSV). Private to those two files.
 */
#ifndef SRC_SWEEP_H
#define SRC_SWEEP_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "runner.h"
#include "../input/scenario.h"
#include "../store/store.h"

typedef enum {
    VARY_SET = 0, /* any dotted scenario key, applied like --set */
    VARY_PREFILL, /* workload.prefill: a one-step prefill of N tokens */
    VARY_DECODE,  /* workload.decode: a one-step decode of B sequences at CTX */
} VaryKind;

typedef struct {
    char *key;
    VaryKind kind;
    GPtrArray *values; /* char*, as written */
    bool zip;          /* a --zip key: advances with the other --zip keys, one axis */
} Vary;

typedef struct Sweep Sweep;

typedef enum {
    OUT_NOT_RUN = 0, /* interrupted before it was queued */
    OUT_OK,
    OUT_FAILED,
    OUT_INVALID,
    OUT_ERROR, /* could not be stored */
} Outcome;

extern const char *const sweep_outcome_names[]; /* by Outcome */

typedef struct {
    Sweep *sweep;
    guint index;
    uv_work_t req;
    /* Built by the worker (variant_build); all but the label freed once stored. */
    char *label;     /* "k1=v1, k2=v2" */
    GStrv overrides; /* --set ones, then one per VARY_SET key */
    char *text;      /* the variant's scenario text (variant_build) */
    GArray *prefill; /* extras (uint32), may be NULL */
    GArray *decode;
    bool merge_workload; /* the varied prefill/decode goes into the file's steps */

    /* Worker results, handed to the loop thread. */
    Scenario *sc; /* NULL when the variant was rejected */
    GError *error;
    RunnerResult *res;
    GArray *records; /* SchedRecord */
    double work_ms;

    /* Summary, filled on the loop thread. */
    Outcome outcome;
    int64_t run_id;   /* -1: not stored */
    char *first_diag; /* "kind: short message", or NULL */
    int64_t end_ns;   /* -1: none */
    bool has_kv;
    int64_t kv_min_bytes;
} Variant;

struct Sweep {
    uv_loop_t loop;
    uv_signal_t sigint;
    uv_timer_t tick;
    Store *store;
    const char *path; /* scenario path */
    char *base_text;  /* the file's text */
    const char *db_path;
    const char *hardware;
    char **sets;                /* --set overrides of every variant */
    const GArray *flag_prefill; /* --prefill / --decode (uint32), may be NULL */
    const GArray *flag_decode;
    SchedTimeline timeline;
    uint64_t max_rank_ops; /* a variant beyond it is invalid (0: no limit) */
    bool memory_detail;    /* store memory_items too */
    GPtrArray *varies;     /* Vary* */
    Variant *variants;
    guint n;
    guint jobs;
    guint next; /* next variant to queue */
    guint in_flight;
    guint done, ok, failed, invalid, errors;
    bool interrupted;
    bool tty; /* stderr is a terminal: one redrawn progress line */
    bool quiet;
    bool bar_shown;
    gint64 t0;
    GPtrArray *notes; /* distinct ignored-flag notes (char*) */
    int64_t sweep_id; /* runs.sweep_id: the first stored variant's id; 0 before */
};

/* The value index of each --vary (`choice[k]` for sw->varies[k]) in variant `i`: the cross
 * product of the axes, the first varying slowest; the --zip keys form one axis together. */
void sweep_variant_choice(const Sweep *sw, guint i, guint *choice);
/* How many variants the axes make (0 when the --zip lists differ in length). */
guint64 sweep_variant_count(const GPtrArray *varies);

void sweep_print_table(Sweep *sw);
void sweep_print_summary(Sweep *sw, double wall_s);
void sweep_print_json(Sweep *sw, double wall_s);
void sweep_print_csv(Sweep *sw);

#endif
