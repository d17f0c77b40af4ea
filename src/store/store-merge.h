/* src/store/store-merge.h — merging results databases (`ranksim merge`, the shards of a sweep):
 * every run of an input database is copied into an open output store with all its rows, under
 * a new run id; the input is opened read-only and never changed.
 *
 * What merging promises (doc/cli.md, "merge"; doc/scale-out.md):
 *  - run ids are remapped: each copied run gets the output's next id, and every row that names
 *    a run (every table of STORE_MERGE_RUN_TABLES: names, op rows, shared time lines,
 *    diagnostics, memory, serving rows ...) names the new id; a table the merge does not know
 *    (a schema grown without this file) refuses the merge rather than losing rows;
 *  - a run already in the output (the same fingerprint: created_at, wall_ms, name, kind,
 *    overrides, path, version, status) is not copied again but counted as present, so merging
 *    the same shard twice, or re-running a merge that was interrupted, adds nothing twice;
 *  - sweeps are kept whole: a sweep's id is the id of its first run (store.h); an input's
 *    sweep joins the output's sweep that already holds one of its runs, else an output sweep
 *    of the same inputs (kind, scenario path, scenario text without its variant comment,
 *    ranksim version, time-line level, and the same varied keys in its labels) none of whose
 *    labels it repeats — the N shards of one sweep, which are disjoint by construction — else
 *    it becomes a sweep of its own, named by the new id of its first run. Two full runs of
 *    the same sweep repeat labels, so they stay two sweeps;
 *  - each input is merged under a savepoint: an input refused half-way (foreign, an older or
 *    newer schema, an op-kind table that differs) leaves nothing of itself; a whole merge is
 *    one transaction (store_merge_begin ... store_merge_commit).
 *
 * Failure modes: STORE_ERROR_FOREIGN / _NEWER / _MISSING / _OLDER (the user's: an input that
 * is not a current ranksim database; nothing of it is merged), STORE_ERROR_FAILED (SQLite or
 * I/O). Costs: one read of each input's rows; the output's run fingerprints and sweep keys
 * are read once per transaction (O(output runs) memory), so merge many inputs in one.
 */
#ifndef SRC_STORE_MERGE_H
#define SRC_STORE_MERGE_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* What merging one input did (added up over the inputs by the caller). */
typedef struct {
    int64_t runs;         /* runs the input holds */
    int64_t added;        /* runs copied into the output */
    int64_t present;      /* runs already in the output, not copied again */
    int64_t first_id;     /* the output ids given to the copied runs (0, 0 when none) */
    int64_t last_id;
    int64_t sweeps;       /* sweeps of the input */
    int64_t sweeps_joined; /* ... that joined a sweep already in the output */
    int64_t rows;         /* rows copied, all tables together */
} StoreMergeStats;

typedef struct StoreMerge StoreMerge;

/* Starts one write transaction (BEGIN IMMEDIATE) on `out`, opened with store_open, and reads
 * its runs' fingerprints and sweeps. Returns NULL with `error` set on failure. */
StoreMerge *store_merge_begin(Store *out, GError **error);
/* Merges every run of the database at `in_path` (opened read-only) into the transaction of
 * `m`, under a savepoint: on failure nothing of this input is kept (earlier inputs are) and
 * false is returned with `error` set. `stats` may be NULL. */
bool store_merge_add(StoreMerge *m, const char *in_path, StoreMergeStats *stats,
                     GError **error);
/* Commits what was merged and frees `m`; false with `error` (nothing is kept then). */
bool store_merge_commit(StoreMerge *m, GError **error);
/* Rolls everything back and frees `m` (NULL: nothing). */
void store_merge_abort(StoreMerge *m);

/* Whether `in_path` could be merged, read-only: a ranksim database of this schema version
 * whose tables merge knows (what store_merge_add checks first, but for the output's op kinds).
 * For callers that check every input before creating the output. */
bool store_merge_check(const char *in_path, GError **error);

/* One input in its own transaction: begin, add, commit. */
bool store_merge_file(Store *out, const char *in_path, StoreMergeStats *stats, GError **error);

/* The tables merge copies per run (each has a run_id column), NULL-ended; with `runs`, the
 * lookup tables (op_kinds, dtypes: checked equal, not copied) these are every table of the
 * schema (tests/src/test_store_merge.c checks it against a new database). */
extern const char *const STORE_MERGE_RUN_TABLES[];
extern const char *const STORE_MERGE_LOOKUP_TABLES[];

#endif
