/* src/store/store-ops.h — how a run's op records become rows (store.c's helper; doc/database.md):
 * per rank in store-ops.c, as shared time lines in store-timelines.c.
 *
 * Two layouts feed the same views (`rank_ops`, `ops`, `collectives`):
 *  - per rank: one `op_rows` row per record, group ids as they are. Imported runs use it (every
 *    rank's calls differ) and so did every run before schema 7.
 *  - shared time lines: most ranks of a simulated run execute exactly what others execute (TP
 *    peers, DP replicas, symmetric EP ranks), so each distinct time line is stored once in
 *    `timeline_ops`, `rank_timelines` maps each rank to one, and `rank_groups` turns a row's
 *    group slot (the group's place among the rank's groups) back into that rank's group id.
 *
 * Two ranks share a time line when their records are equal field by field once each group id
 * is replaced by its slot. Equality is decided by a 128-bit hash of each rank's records
 * (order-independent: the sum of per-record hashes that include the record's index), computed
 * on the engine's thread as each record arrives. doc/decisions.md says why a hash and not a
 * comparison.
 *
 * Only records no rank has made before are staged. Each rank also keeps a hash of its records
 * so far in arrival order (its prefix); a prefix met for the first time becomes a node (the
 * record, staged, and its parent node), a prefix met again only moves the rank to that node.
 * So ranks that run the same ops at the same times stage one copy between them (the 65,536
 * ranks of the TP-8 bench program stage 400 records, not 26 million), and a rank's records are
 * read back at commit along its chain of nodes (store-trie.h). Memory: 4 B per node (its
 * parent), the last 262,144 nodes in full (up to 32 MiB, touched as they are made), and a
 * table of the children of nodes with more than 8; nothing per record shared. A rank lagging
 * more than 262,144 new records behind the rank it would share with stages its own copy (more
 * staging, the same rows).
 *
 * A rank whose first record begins a segment (a model run's steps) is cut into segments as
 * its records arrive instead (store-cut.h): its chain starts again at each part, over records
 * made relative to the part, so a step of a shape seen before stages nothing, and ranks share
 * a line when their parts are equal.
 */
#ifndef SRC_STORE_OPS_H
#define SRC_STORE_OPS_H

#include <glib.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "../../sched/engine.h"
#include "store-size.h"

/* Where a run's records come from at commit: an array, then a staging file of raw records. */
typedef struct {
    const SchedRecord *recs; /* n records, or NULL */
    size_t n;
    int fd; /* staging file holding n_staged records, or -1 */
    uint64_t n_staged;
} StoreRecordSource;

/* ---- per-rank rows (op_rows) ---- */

typedef struct StoreOpInserter StoreOpInserter;
/* `keyed`: op_rows has the (run_id, n) key of schema 4 on (files from before lack it). NULL
 * with `error` set when the statements cannot be prepared. */
StoreOpInserter *store_op_inserter_new(sqlite3 *db, const char *path, int64_t run_id, bool keyed,
                                       GError **error);
bool store_op_inserter_add(StoreOpInserter *ins, const SchedRecord *recs, size_t n, GError **error);
void store_op_inserter_free(StoreOpInserter *ins);
/* All records of `src` as op_rows rows of run `run_id`. */
bool store_ops_insert_per_rank(sqlite3 *db, const char *path, int64_t run_id, bool keyed,
                               const StoreRecordSource *src, GError **error);

/* ---- shared time lines ---- */

typedef struct StoreTimelines StoreTimelines;
/* Starts the per-rank bookkeeping; each rank's groups of `p` (may be NULL) take slots in group
 * id order, groups met later in records (p2p channels) take the next slots. */
StoreTimelines *store_timelines_new(const SchedProgram *p);
void store_timelines_free(StoreTimelines *t);
/* Hashes one record into its rank's time line. True when its prefix is new: `*node` is then the
 * record to stage (its group id replaced by its slot), the next of the node source. Not
 * thread-safe: one caller at a time. */
bool store_timelines_add_one(StoreTimelines *t, const SchedRecord *rec, SchedRecord *node);
/* store_timelines_add_one over `n` records, the node records appended to `nodes`
 * (GArray of SchedRecord). */
void store_timelines_add(StoreTimelines *t, const SchedRecord *recs, size_t n, GArray *nodes);
/* How big the run's time lines are (decides which ranks share: call after the last record). */
StoreTimelinesSize store_timelines_size(StoreTimelines *t);
/* Told every 65,536 rows store_timelines_insert writes. */
void store_timelines_set_progress(StoreTimelines *t, StoreProgressFn fn, void *data);
/* Decides which ranks share a time line and writes timeline_ops (the rows of one rank of each
 * time line, read from `src`: the node records, in the order store_timelines_add_one gave
 * them), rank_timelines and rank_groups for run `run_id`. */
bool store_timelines_insert(StoreTimelines *t, sqlite3 *db, const char *path, int64_t run_id,
                            const StoreRecordSource *src, GError **error);
/* After store_timelines_insert: how many distinct time lines the run had. */
uint32_t store_timelines_count(const StoreTimelines *t);

static inline void store_bind_opt_int(sqlite3_stmt *st, int col, bool present, int64_t v)
{
    if (present)
        sqlite3_bind_int64(st, col, v);
    else
        sqlite3_bind_null(st, col);
}

/* Rows per INSERT statement of op records: one statement of many rows costs SQLite far less
 * per row than a statement per row (a 2-million-row import stores in about half the time). */
#define STORE_OPS_PER_INSERT 256

/* Shared by store-ops.c and store-timelines.c: sets `error` (STORE_ERROR_FAILED, "PATH: WHAT:
 * SQLite's message" and advice) and returns false; prepares "HEAD VALUES (?..),(?..)" of `rows`
 * rows of `cols` parameters, row i's column c numbered i * stride + c (NULL on failure). */
bool store_ops_sql_error(GError **error, sqlite3 *db, const char *path, const char *what);
sqlite3_stmt *store_ops_prepare_rows(sqlite3 *db, const char *head, int rows, int cols,
                                     int stride);
/* The text store_ops_prepare_rows prepares. Caller frees. */
char *store_ops_rows_sql(const char *head, int rows, int cols, int stride);
/* Op records written as rows of `head` ("INSERT INTO T(run_id, K, idx, layer, name_id, kind,
 * tokens, slot, seq, count, dtype, start_ns, end_ns, bound)": a time line's rows, a segment's),
 * STORE_OPS_PER_INSERT to a statement; a record's `rank` field holds K. */
typedef struct {
    sqlite3 *db;
    const char *path;
    const char *what; /* "insert timeline_ops", ... for errors */
    const char *head; /* borrowed: the caller's, alive while the batch is */
    sqlite3_stmt *many, *one; /* `many` prepared when a first batch fills (its text is long:
                                 preparing it cost a 1,024-rank run ~1 ms a table) */
    int64_t id;
    SchedRecord pend[STORE_OPS_PER_INSERT];
    uint32_t n_pend;
    uint64_t rows; /* written so far */
} StoreRowBatch;

/* False with `error` set when the statements cannot be prepared (close it all the same).
 * `head` must outlive the batch. */
bool store_row_batch_open(StoreRowBatch *b, sqlite3 *db, const char *path, int64_t run_id,
                          const char *head, const char *what, GError **error);
/* Queues one row, writing a full batch. */
bool store_row_batch_add(StoreRowBatch *b, const SchedRecord *x, GError **error);
/* Writes the rows still queued. */
bool store_row_batch_flush(StoreRowBatch *b, GError **error);
void store_row_batch_close(StoreRowBatch *b);

/* Rows of integers (rank_timelines, rank_groups: one or a few a rank), STORE_INT_ROWS to a
 * statement: a statement per row was most of the time line's fixed cost at 1,024 ranks. */
#define STORE_INT_ROWS 64
#define STORE_INT_COLS 4
typedef struct {
    sqlite3 *db;
    const char *path, *what, *head; /* borrowed */
    int cols;                       /* at most STORE_INT_COLS */
    sqlite3_stmt *many, *one;       /* `many` prepared when a first batch fills */
    int64_t pend[STORE_INT_ROWS * STORE_INT_COLS];
    uint32_t n_pend;
} StoreIntBatch;

/* "HEAD" is "INSERT INTO T(c1, ..)" of `cols` columns. False with `error` set when the
 * statement cannot be prepared (close it all the same). */
bool store_int_batch_open(StoreIntBatch *b, sqlite3 *db, const char *path, const char *head,
                          int cols, const char *what, GError **error);
/* Queues one row of `cols` values, writing a full batch. */
bool store_int_batch_add(StoreIntBatch *b, const int64_t *row, GError **error);
bool store_int_batch_flush(StoreIntBatch *b, GError **error);
void store_int_batch_close(StoreIntBatch *b);

/* Binds a record's 14 columns (run id, rank, idx, layer, name, kind, tokens, group, seq, count,
 * dtype, start, end, bound) to parameters b + 1 .. b + 14 of `st`. */
void store_ops_bind_record(sqlite3_stmt *st, int b, int64_t id, const SchedRecord *x);

#endif
