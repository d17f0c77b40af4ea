/* src/store/store-prune.h — deleting stored runs (`ranksim prune`): the runs picked by id, by
 * sweep and by age are deleted with all their rows, from every table, in one transaction (all
 * of them or none), then optionally the file is vacuumed (a failure of which is reported apart:
 * the delete stands). doc/database.md has the tables.
 *
 * Costs: one DELETE per table over the selected ids (a temporary table holds them, so every
 * statement reads the same set); VACUUM rewrites the whole file.
 */
#ifndef SRC_STORE_PRUNE_H
#define SRC_STORE_PRUNE_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* What to delete; the selectors add up. */
typedef struct {
    const GArray *ids;      /* int64_t run ids (those not in the file are skipped); may be NULL */
    int64_t sweep_id;       /* the runs of this sweep; 0: none */
    int64_t older_than_s;   /* the runs recorded more than this many seconds ago; -1: none */
    bool dry_run;           /* count only: everything is rolled back */
    bool vacuum;            /* then VACUUM (not with dry_run) */
} StorePruneSpec;

/* What was (or would be) deleted. */
typedef struct {
    int64_t runs;   /* how many runs */
    int64_t lo, hi; /* the smallest and largest id among them (0 when none) */
    bool vacuumed;  /* the file was vacuumed */
} StorePruned;

/* Deletes the runs `spec` selects from `s`, then vacuums the file when asked. A dry run only
 * reads: `s` may be opened read-only (store_open_readonly) for it; otherwise `s` is opened for
 * writing.
 *
 * Delete and vacuum are one promise, kept this way: the delete commits first, in its own
 * transaction (SQLite cannot vacuum inside one), and a failed vacuum does not undo it. So:
 *  - false: the delete failed; nothing was deleted; `error` (STORE_ERROR_FAILED) says why;
 *  - true, out->vacuumed false while spec->vacuum: the runs ARE deleted (out says which), and
 *    `vacuum_error` says why the file was not vacuumed (caller frees); the file keeps its size,
 *    the freed pages are reused by later runs. Callers must say both.
 * `vacuum_error` may be NULL when spec->vacuum is false. */
bool store_prune(Store *s, const StorePruneSpec *spec, StorePruned *out, GError **vacuum_error,
                 GError **error);

#endif
