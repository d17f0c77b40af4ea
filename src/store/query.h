/* src/store/query.h — reads stored runs back from the results database: a RUN argument ("12" or
 * "latest") to an id, and a run to the same SchedOutcome + ReportRun the simulation produced,
 * so `report`, `explain` and `diff` print what `run` printed without simulating again.
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
#include "../output/report.h"
#include "store.h"

#define QUERY_ERROR (query_error_quark())
GQuark query_error_quark(void);

typedef enum {
    QUERY_ERROR_BAD_ARGUMENT, /* not a run id nor "latest" (a user error: exit 2) */
    QUERY_ERROR_NOT_FOUND,    /* no such run, or an empty database (exit 2) */
    QUERY_ERROR_SQL,          /* the database could not be read (exit 1) */
} QueryErrorCode;

/* One stored run. Strings are owned; NULL where the column is NULL. */
typedef struct {
    int64_t id;
    char *name;
    char *kind;   /* "program" | "model" */
    char *path;   /* scenario path as given */
    char *status; /* "ok" | "failed" | "invalid" */
    int exit_code;
    double wall_ms;
    char *created_at; /* ISO-8601 UTC */
    char *timeline;   /* "full" | "collectives" | "none" */
    char *version;
    char *hardware;
    char *model, *layout, *vllm, *overrides; /* what it ran (runs columns, schema 7) */
    int64_t sweep_id;                        /* 0: not from a sweep */
    char *weights;                           /* memory_runs.weights_format */
    GPtrArray *not_simulated; /* char*: the settings given but not simulated (never NULL) */
    SchedOutcome *outcome; /* never NULL: ranks, diagnostics (kinds interned), groups with their
                              members; an invalid run has no ranks and its `config` error */
} QueryRun;

/* Resolves a RUN argument: a positive integer or "latest". Returns the id, or -1 with
 * QUERY_ERROR_BAD_ARGUMENT ("'x' is not a run"), QUERY_ERROR_NOT_FOUND ("run 99 not found in
 * DB (latest is 12)", "no runs in DB yet") or QUERY_ERROR_SQL. */
int64_t query_run_resolve(Store *st, const char *arg, GError **error);

/* Loads run `id`. Returns NULL with QUERY_ERROR_NOT_FOUND or QUERY_ERROR_SQL. Caller frees. */
QueryRun *query_run_load(Store *st, int64_t id, GError **error);
void query_run_free(QueryRun *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QueryRun, query_run_free)

/* The ReportRun of a loaded run (strings borrowed from `r`; `db_path` may be NULL). */
ReportRun query_run_report(const QueryRun *r, const char *db_path);

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
