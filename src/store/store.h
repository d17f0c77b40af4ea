/* src/store/store.h — the SQLite results database (schema in doc/database.md).
 *
 * One database accumulates runs. A run is written in ONE short transaction once its outcome is
 * known; a process killed before or during it leaves no row of that run. While the engine runs,
 * op records stream to a writer thread (libuv) through a bounded queue of fixed-size chunks
 * into a private, already-unlinked staging file, so memory stays bounded whatever the run
 * length and the database is not locked while the run simulates. Names are stored once per
 * run in `names` and op rows carry integer ids; the contract tables `ops` and `collectives`
 * are views.
 *
 * Concurrency: WAL mode; writers wait only for another run's commit, never for a simulation,
 * as long as that commit makes progress (up to 5 minutes without any, store_set_wait_notice); readers open the file read-only (store_open_readonly) and never wait.
 * A file that is not ranksim's, or from a newer ranksim, is recognised by reading only and
 * left byte-identical. Errors are GErrors in STORE_ERROR naming the database path and
 * SQLite's message. doc/reliability.md has the promises and their tests.
 *
 * Files: store.c opens the file and keeps its schema, store-run.c writes a run's rows in one
 * transaction, store-stage.c stages a simulating run's records; store-private.h is what they
 * (and only src/store/) share. Reading runs back is query.h; the other jobs have their own
 * headers (store-rows.h, store-trace.h, store-prune.h, store-serve.h, store-ops.h).
 */
#ifndef SRC_STORE_H
#define SRC_STORE_H

#include <glib.h>
#include <stdint.h>

#include "../../model/memory.h"
#include "../../model/serve.h"
#include "../../sched/engine.h"
#include "store-error.h"
#include "store-size.h"

/* Schema version kept in PRAGMA user_version. */
#define STORE_SCHEMA_VERSION 12

typedef struct Store Store;
typedef struct StoreRun StoreRun;

/* A run's header: what it is, what it ran, how it ended and where it is kept. One type for
 * every view of a run: what store_run_begin / _insert / _commit write (they read the fields
 * marked "in", the outcome's figures come as arguments), what query_run_load reads back (every
 * field), what report_text / report_json print. Strings and arrays are borrowed (the caller
 * keeps them alive while the header is used); each may be NULL unless said otherwise. */
typedef struct {
    int64_t id;              /* the run's id in its database; <= 0: not stored */
    const char *name;        /* in; NULL is stored as "?" */
    const char *kind;        /* in: "program" | "model" | "import"; NULL is stored as "program" */
    const char *path;        /* in: the scenario path as given */
    const char *scenario;    /* in: the full scenario text (not read back by query_run_load) */
    const char *timeline;    /* in: "full" | "collectives" | "none" */
    const char *hardware;    /* in: one line describing the fabric (an import: its source) */
    const GPtrArray *not_simulated; /* in: char*, settings given but not simulated, each with its
                                       reason (Scenario.ignored_flags) */
    const ModelServe *serve; /* in: requests served (rows of `steps`, `requests`, `serve_runs`) */
    const char *model;       /* in: "glm-5.2 (preset glm-5.2)" (program scenarios: NULL) */
    const char *layout;      /* in: "TP1 x PCP4, DCP4" */
    const char *vllm;        /* in: "main", "main without indexer_warmup_keys" */
    const char *overrides;   /* in: what the command line changed: "attention_backend=X, ..." */
    int64_t sweep_id;        /* in: 0 not part of a sweep; -1 the first run of a sweep (its own
                                id becomes the sweep's); > 0 the sweep's id */
    const char *status;      /* "ok" | "failed" | "invalid" | "inconclusive" (an import: neither
                                shown nor ruled out), written from the arguments */
    int exit_code;           /* the run's exit code */
    double wall_ms;          /* wall-clock time the run took, milliseconds */
    const char *created_at;  /* ISO-8601 UTC, when it was stored */
    const char *version;     /* the ranksim that stored it: "0.9 (abc1234)" */
    const char *weights;     /* the weights' formats per tensor group (memory_runs) */
    const char *db_path;     /* the database it is stored in (for the report's footer) */
    const char *trace_path;  /* the trace written of it (for the report's footer) */
} StoreRunInfo;

/* Opens the database at `path` for writing runs, creating the file, its folder and the schema
 * if needed (an older ranksim schema is upgraded in place). Before anything is written the
 * file is recognised: a foreign SQLite file, a non-SQLite file or a newer schema fails with
 * STORE_ERROR_FOREIGN / STORE_ERROR_NEWER and is left byte-identical. Returns NULL and sets
 * `error` on failure. */
Store *store_open(const char *path, GError **error);
/* Opens an existing database read-only (SQLITE_OPEN_READONLY, PRAGMA query_only): never
 * writes, never waits for a writer, works on read-only files and media (falling back to an
 * immutable open when the WAL index cannot be created) and on a full disk. Fails with
 * STORE_ERROR_MISSING, _FOREIGN, _NEWER or _FAILED. */
Store *store_open_readonly(const char *path, GError **error);
/* Told `message` (one line, no newline) when a writer of `s` has waited a while for another
 * process's write lock, so the program can say why it pauses; the wait goes on as long as the
 * other writer makes progress. `fn` NULL: nothing is told. */
typedef void (*StoreNoticeFn)(const char *message, void *data);
void store_set_wait_notice(Store *s, StoreNoticeFn fn, void *data);
void store_close(Store *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Store, store_close)
const char *store_path(const Store *s);

/* Starts a run: copies `info` and the program's names (`p` may be NULL: no names) and starts
 * the staging writer thread. Touches no database lock. Returns NULL on failure. */
StoreRun *store_run_begin(Store *s, const StoreRunInfo *info, const SchedProgram *p,
                          GError **error);
/* A SchedRecordFn: queues one record for the writer thread. Blocks only while the bounded
 * queue is full. `run` is the StoreRun. */
void store_run_record(void *run, const SchedRecord *rec);
/* Drains the writer, then in one transaction (BEGIN IMMEDIATE ... COMMIT) inserts the run row,
 * names, the staged op rows, groups, ranks, diagnostics and memory. Returns the run id, or -1
 * with `error` set (nothing of the run is stored then). Frees `r` either way. */
int64_t store_run_finish(StoreRun *r, const SchedOutcome *o, const char *status, int exit_code,
                         double wall_ms, GError **error);
/* After the simulation, before store_run_finish: the size of the time line about to be written
 * (what a progress line states before the store writes it). */
StoreTimelinesSize store_run_size(StoreRun *r);
/* `fn` (may be NULL) is told the rows written during store_run_finish. */
void store_run_set_progress(StoreRun *r, StoreProgressFn fn, void *data);
/* Attaches a memory plan (borrowed until store_run_finish) whose per-rank components and items
 * are written into `memory`, `memory_plans` and `rank_memory_plans` with the run. */
void store_run_set_memory(StoreRun *r, const ModelMemPlan *m);
/* Attaches the `steps` rows the simulation itself timed (borrowed until store_run_finish),
 * when the run began without them (a hand-written single step: runner_simulate). */
void store_run_set_serve(StoreRun *r, const ModelServe *serve);
/* Discards the run (nothing was written to the database) and frees it. */
void store_run_abort(StoreRun *r);

/* Stores a finished run whose `n_recs` records are in memory (`recs`, may be NULL), in one
 * transaction like store_run_finish. `memory` may be NULL. Returns the run id or -1. */
int64_t store_run_insert(Store *s, const StoreRunInfo *info, const SchedProgram *p,
                         const SchedRecord *recs, size_t n_recs, const SchedOutcome *o,
                         const ModelMemPlan *memory, const char *status, int exit_code,
                         double wall_ms, GError **error);

/* A run whose op rows arrive while it is still being read (`ranksim import`): store_stream_begin
 * takes no lock, rows appended with store_stream_ops (in the order given) go to a private,
 * unlinked staging file, and store_stream_commit writes the run row, names, staged rows,
 * outcome and notes in ONE short transaction — or store_stream_abort drops the staging, leaving
 * no row. No lock is held while the input is read or merged, so other writers never wait for
 * it. Commit and abort free `st`. */
typedef struct StoreStream StoreStream;
StoreStream *store_stream_begin(Store *s, GError **error);
bool store_stream_ops(StoreStream *st, const SchedRecord *recs, size_t n, GError **error);
int64_t store_stream_commit(StoreStream *st, const StoreRunInfo *info, const SchedProgram *p,
                            const SchedOutcome *o, const char *status, int exit_code,
                            double wall_ms, GError **error);
void store_stream_abort(StoreStream *st);
/* How many runs the file holds (-1 on an error). */
int64_t store_run_count(Store *s);

/* Records a run whose scenario was rejected: status 'invalid', exit code 2, and one `config`
 * diagnostic holding `message`. Returns the run id or -1 with `error` set. */
int64_t store_insert_invalid(Store *s, const StoreRunInfo *info, const char *message,
                             GError **error);


#endif
