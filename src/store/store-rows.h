/* src/store/store-rows.h — a stored run's op rows read back one at a time, for the views that
 * draw or compare them (`plot`, `match`): the rows of the rank_ops view (either layout,
 * store-ops.h) and of the collectives view (doc/database.md), each handed to a callback as a
 * plain struct, so memory stays what the caller keeps.
 *
 * Errors: STORE_ERROR_FAILED naming what was read and SQLite's message. Costs: one statement
 * per call, rows in SQLite's order (rank_ops sorted by rank, idx: O(N log N) in its sorter).
 */
#ifndef SRC_STORE_ROWS_H
#define SRC_STORE_ROWS_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* One op row of a run (rank_ops). */
typedef struct {
    int64_t rank;
    int32_t kind;      /* SchedOpKind */
    int64_t start_ns;  /* simulated time, ns */
    int64_t end_ns;    /* ns; -1: never completed */
    int32_t group;     /* group id; -1: none */
    int64_t seq;       /* the instance in its group (0 without a group) */
    uint64_t count;    /* elements */
    uint32_t name_id;  /* into store_rows_names */
} StoreOpRow;

/* Called per row; its strings live until it returns. */
typedef void (*StoreOpRowFn)(void *data, const StoreOpRow *row);

/* The names table of run `run_id`: name id -> char* (holes NULL). NULL with `error` ("names:
 * ...") when it cannot be read. Caller unrefs. */
GPtrArray *store_rows_names(Store *st, int64_t run_id, GError **error);
/* Every op row of run `run_id` in (rank, idx) order. False with `error` ("op rows: ..."). */
bool store_rows_ops(Store *st, int64_t run_id, StoreOpRowFn fn, void *data, GError **error);

/* A run stored with shared time lines (schema 7, doc/database.md): each distinct time line's
 * rows once, and per rank which time line it runs and its groups by slot — what a reader
 * needs to draw 65,536 ranks without reading 65,536 copies of the same rows. */
typedef struct {
    uint32_t n_ranks;
    int32_t *timeline; /* [n_ranks]: the rank's index into `rows`, -1: no rows */
    GPtrArray *rows;   /* GArray<StoreOpRow>* per time line, in idx order; a row's `group` is
                          its slot among the rank's groups (-1: none) and `rank` is -1 */
    GArray **slots;    /* [n_ranks]: int32_t group ids by slot; NULL for a rank without */
} StoreSharedRows;

/* Reads run `run_id`'s shared time lines for its `n_ranks` ranks into `out`. True with
 * out->rows NULL when the run is stored one row per rank (imports, runs before schema 7: read
 * them with store_rows_ops); false with `error` ("time lines: ...") on a read error. */
bool store_rows_shared(Store *st, int64_t run_id, uint32_t n_ranks, StoreSharedRows *out,
                          GError **error);
void store_shared_rows_clear(StoreSharedRows *t);

/* One row of the collectives view. */
typedef struct {
    const char *group; /* group name */
    uint64_t seq;
    int32_t rank;
    const char *kind;  /* "allreduce", ... */
    uint64_t count;    /* elements */
    const char *dtype; /* "bf16", ... */
    const char *name;  /* the op's name */
    bool done;         /* completed (done_us not NULL) */
} StoreCollectiveRow;

typedef void (*StoreCollectiveFn)(void *data, const StoreCollectiveRow *row);

/* Every collectives row of run `run_id`, in the view's order. False with `error`
 * ("DB: message") when the statement cannot be prepared; a read error part-way ends the rows
 * early. */
bool store_rows_collectives(Store *st, int64_t run_id, StoreCollectiveFn fn, void *data,
                            GError **error);

#endif
