/* src/store/query.h — reads stored runs back from the results database: a RUN argument ("12" or
 * "latest") to an id, a run to the same SchedOutcome + StoreRunInfo the simulation produced,
 * so `report`, `explain` and `diff` print what `run` printed without simulating again, the
 * listing of `runs` (query-list.c) and the per-run totals `diff` compares (query-diff.c).
 *
 * What comes back is what the database holds (doc/database.md): times were stored in
 * microseconds as REAL and are rounded back to integer nanoseconds (exact below ~104 days of
 * simulated time); events, rank-ops and diagnostics (with their detail JSON) are as stored.
 * Costs: one query per table of the run, O(ranks + diagnostics + groups) memory; the op rows
 * are never loaded here.
 */
#ifndef SRC_QUERY_H
#define SRC_QUERY_H

#include <glib.h>
#include <stdint.h>

#include "../../model/memory.h"
#include "../../sched/engine.h"
#include "../../model/serve.h"
#include "store.h"

#define QUERY_ERROR (query_error_quark())
GQuark query_error_quark(void);

typedef enum {
    QUERY_ERROR_BAD_ARGUMENT, /* not a run id nor "latest" (a user error: exit 2) */
    QUERY_ERROR_NOT_FOUND,    /* no such run, or an empty database (exit 2) */
    QUERY_ERROR_SQL,          /* the database could not be read (exit 1) */
} QueryErrorCode;

/* One stored run: its header and its outcome, both owned. */
typedef struct {
    StoreRunInfo info;     /* every column of the run read back (not the scenario text:
                              query_run_scenario); NULL where the column is NULL or absent in an
                              older file; db_path, trace_path and serve are NULL */
    SchedOutcome *outcome; /* never NULL: ranks, diagnostics (kinds interned), groups with their
                              members; an invalid run has no ranks and its `config` error */
    GStringChunk *strings; /* holds info's strings */
    GPtrArray *notes;      /* char*: info.not_simulated (never NULL) */
} QueryRun;

/* Resolves a RUN argument: a positive integer or "latest". Returns the id, or -1 with
 * QUERY_ERROR_BAD_ARGUMENT ("'x' is not a run"), QUERY_ERROR_NOT_FOUND ("run 99 not found in
 * DB (latest is 12)", "no runs in DB yet") or QUERY_ERROR_SQL. */
int64_t query_run_resolve(Store *st, const char *arg, GError **error);

/* Loads run `id`. Returns NULL with QUERY_ERROR_NOT_FOUND or QUERY_ERROR_SQL. Caller frees. */
QueryRun *query_run_load(Store *st, int64_t id, GError **error);
void query_run_free(QueryRun *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QueryRun, query_run_free)

/* The scenario text run `id` was stored with, or NULL (none stored, or a read error). Caller
 * frees. */
char *query_run_scenario(Store *st, int64_t id);

/* Run `id`'s serving rows (steps, requests; store-serve.h), or NULL when it served none. */
ModelServe *query_serve_load(Store *st, int64_t id);

/* The memory plan of run `id` from the memory tables (doc/database.md), for report_memory_text
 * and report_json_with_memory: per-rank component bytes, each rank's KV budget (requested -
 * non-KV), and with `items` the itemised tensors. memory_runs keeps only the worst rank's KV
 * bytes per token, so every rank gets that figure. Returns NULL without an error when the run
 * has no plan (program scenarios, older databases), NULL with QUERY_ERROR_SQL on a read error.
 * Free with model_memory_plan_free. */
ModelMemPlan *query_memory_load(Store *st, int64_t id, bool items, GError **error);

/* Whether the database has a table (or view) named `name` (e.g. `memory`, which newer
 * ranksim versions write). Can't fail: a read error reads as "no". */
bool query_has_table(Store *st, const char *name);
/* Whether `table` has `column` (older schema versions lack some). */
bool query_has_column(Store *st, const char *table, const char *column);

/* ---- the listing of `ranksim runs` (query-list.c) ---- */

/* One run of the listing. */
typedef struct {
    StoreRunInfo info;  /* id, name, kind, status, exit_code, created_at, model, layout,
                           hardware, vllm, overrides, sweep_id; the rest NULL / 0 */
    int64_t ranks;      /* -1: NULL (an invalid run) */
    bool has_end;       /* false: runs.sim_end_us is NULL */
    double sim_end_us;  /* simulated end, microseconds, as stored */
    const char *diag_kind, *diag_message; /* the first error (else warning), or NULL */
    GStringChunk *strings; /* holds the strings */
} QueryListedRun;

/* The last `limit` runs (0: all), of sweep `sweep` only when > 0, oldest first, with how many
 * there are in all (*total). Returns a GPtrArray of QueryListedRun* (caller unrefs), or NULL
 * with QUERY_ERROR_BAD_ARGUMENT (sweep ids asked of a file from before them) or
 * QUERY_ERROR_SQL ("DB: reading runs: ..."). Older files read their missing columns as NULL. */
GPtrArray *query_runs_list(Store *st, int64_t limit, int64_t sweep, int64_t *total,
                           GError **error);

/* ---- what `ranksim diff` compares (query-diff.c) ---- */

/* Completed collectives of one name: time summed over ranks (done - arrive) and calls. */
typedef struct {
    int64_t ns;
    int64_t calls;
} QueryCommTotal;

/* name -> QueryCommTotal* over run `id`'s completed collective rows; NULL on a read error. */
GHashTable *query_comm_totals(Store *st, int64_t id);
/* Per memory component the largest bytes over ranks (component -> int64_t*); NULL when the
 * run has no memory rows. Component names met for the first time are appended to `order`
 * (char*, owned by it). */
GHashTable *query_memory_max(Store *st, int64_t id, GPtrArray *order);
/* The largest per-rank total of all components, bytes; -1 when none. */
int64_t query_memory_peak(Store *st, int64_t id);
/* The smallest rank's KV budget of runs `a` and `b` (memory_runs), bytes; false when either
 * has none. */
bool query_kv_budgets(Store *st, int64_t a, int64_t b, int64_t *kv_a, int64_t *kv_b);

/* The first error diagnostic of an outcome, else its first warning, else NULL. */
const SchedDiag *query_first_diag(const SchedOutcome *o);

/* A run name of at most `max_chars`, cut in the middle: its head and its tail (a variant's
 * "[key=value, ...]") kept. Caller frees. */
char *query_short_name(const char *name, guint max_chars);
/* "KIND: first line of message" cut to `max_chars` (the kind is left out when the message
 * already starts with it, as the engine's do). Caller frees. */
char *query_diag_summary(const char *kind, const char *message, guint max_chars);

/* The first line of `message`, cut to at most `max_chars` characters (UTF-8) with "..." when
 * cut. Caller frees. */
char *query_short_message(const char *message, guint max_chars);

#endif
