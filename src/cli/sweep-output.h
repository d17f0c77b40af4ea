/* src/cli/sweep-output.h — one `ranksim sweep` as the command holds it while it runs (its
 * variants in flight on the libuv loop, their outcomes as they are stored: cmd-sweep.c fills
 * it) and what the command prints from it when done (sweep-output.c): the table laid out to
 * the terminal's width, the summary with the configurations that are safe, JSON, CSV.
 * The variants themselves (axes, labels, loading) are src/run/sweep.h's.
 */
#ifndef SRC_CLI_SWEEP_OUTPUT_H
#define SRC_CLI_SWEEP_OUTPUT_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "../run/runner.h"
#include "../run/sweep.h"
#include "../run/sweep-shard.h"
#include "../store/store.h"

typedef enum {
    CLI_SWEEP_NOT_RUN = 0, /* interrupted before it was queued */
    CLI_SWEEP_OK,
    CLI_SWEEP_FAILED,
    CLI_SWEEP_INVALID,
    CLI_SWEEP_ERROR, /* could not be stored */
} CliSweepOutcome;

extern const char *const cli_sweep_outcome_names[]; /* by CliSweepOutcome */

/* A variant's first diagnostic as a table cell or progress line shows it, cut to `max_chars`:
 * a refused variant's message without the place it names ("config: line 10: key 'parallel':
 * parallel.decode_context_parallel_size: tp_size=1 must be ..." -> "config: tp_size=1 must be
 * ... (parallel.decode_context_parallel_size)"), since every variant of a sweep has the same file and the table names the key; the
 * number that decides it comes first. Caller frees. */
char *cli_sweep_finding(const char *first_diag, guint max_chars);

typedef struct CliSweep CliSweep;

typedef struct {
    CliSweep *sweep;
    guint index;
    uv_work_t req;
    char *label; /* "k1=v1, k2=v2" (sweep_variant_label) */

    /* Worker results, handed to the loop thread; freed once stored. */
    Scenario *sc; /* NULL when the variant was rejected */
    GError *error;
    RunnerResult *res;
    GArray *records; /* SchedRecord */
    double work_ms;
    bool computed;  /* the worker is done (or it was cancelled): ready to store in turn */
    bool cancelled; /* Ctrl-C took it off the pool's queue before a worker started it */

    /* Summary, filled on the loop thread. */
    CliSweepOutcome outcome;
    int64_t run_id;   /* -1: not stored */
    char *first_diag; /* "kind: short message", or NULL */
    int64_t end_ns;   /* -1: none */
    bool has_kv;
    int64_t kv_min_bytes;
} CliSweepVariant;

struct CliSweep {
    SweepInputs in; /* in.path: the scenario; in.varies: the axes */
    uv_loop_t loop;
    uv_signal_t sigint;
    uv_timer_t tick;
    Store *store;
    const char *db_path;
    SchedTimeline timeline;
    bool memory_detail; /* store memory_items too */
    CliSweepVariant *variants;
    guint n;
    guint jobs;
    guint next; /* next variant to queue */
    guint in_flight; /* queued on the pool, not yet back on the loop thread */
    guint drained;   /* next variant to store: runs are stored in variant order */
    guint computed;  /* variants back from the pool (the progress bar) */
    uv_timer_t flush; /* stores the computed variants waiting for a batch (cmd-sweep.c) */
    guint done, ok, failed, invalid, errors;
    bool interrupted;
    bool tty; /* stderr is a terminal: one redrawn progress line */
    bool quiet;
    bool bar_shown;
    gint64 t0;
    GPtrArray *notes; /* distinct ignored-flag notes (char*) */
    int64_t sweep_id; /* runs.sweep_id: the first stored variant's id; 0 before */
    SweepShard shard; /* the slice this process runs (source NULL: the whole sweep) */
    guint total;      /* the whole sweep's variants (n: this shard's) */
    guint first;      /* the index of variants[0] in the whole sweep */
};

/* "shard 2/3 (SLURM_ARRAY_TASK_ID): variants 4-6 of 9, " (ending so "3 variants" follows), or
 * "" when the sweep is not sharded. Caller frees. */
char *cli_sweep_shard_words(const CliSweep *sw);

/* On stdout: the table of variants; the summary line, the safe configurations and where the
 * runs are stored; the variants and the summary as one JSON object; one CSV row per variant.
 * Never fail (a failed write to stdout is cli_main's to report). */
void sweep_print_table(const CliSweep *sw);
void sweep_print_summary(const CliSweep *sw, double wall_s);
void sweep_print_json(const CliSweep *sw, double wall_s);
void sweep_print_csv(const CliSweep *sw);

#endif
