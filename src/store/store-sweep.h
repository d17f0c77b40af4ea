/* src/store/store-sweep.h — naming the sweep of runs copied in from elsewhere: `sweep --mpi`
 * merges each variant's run (computed and stored by a worker process in a database of its
 * own) into the output with store_merge_add, then puts it in the sweep it is building, so the
 * runs end up in one sweep named by its first run's id exactly as a local sweep stores them,
 * whatever sweep the merge would have picked by itself (store-merge.h).
 *
 * Also the worker's side: a scratch database (store_sweep_scratch) that does not wait for the
 * disk. Costs: one UPDATE over a range of run ids (the primary key).
 *
 * And a local sweep's batches (store_sweep_batch_begin / _commit): several finished runs
 * written in one transaction, each run inside it in a savepoint of its own (store-run.c's
 * store_run_txn_*, store-private.h), so a run that cannot be written leaves no row while the
 * others of the batch are kept, and a killed sweep still leaves only complete runs. One
 * commit per batch instead of one per run: the WAL pages a run shares with the next (the
 * runs table and its indexes, names, diagnostics) are written once per batch. The write lock
 * is held only while the batch's runs are written, never while a variant simulates.
 */
#ifndef SRC_STORE_SWEEP_H
#define SRC_STORE_SWEEP_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* Sets runs.sweep_id to `sweep_id` (> 0) for the runs with ids in [first_id, last_id], in the
 * transaction open on `s` if there is one. Returns false with a STORE_ERROR_FAILED naming the
 * database. */
bool store_sweep_assign(Store *s, int64_t first_id, int64_t last_id, int64_t sweep_id,
                        GError **error);

/* Makes `s` a scratch database: SQLite never waits for the disk (PRAGMA synchronous = OFF),
 * so a power loss may corrupt it. For a worker's temporary database of one run only, which is
 * read back at once and deleted (a lost worker's variant is computed again). */
bool store_sweep_scratch(Store *s, GError **error);

/* Opens the transaction a batch of runs joins (BEGIN IMMEDIATE: waits for another writer's
 * commit like a run does). Every store_run_insert / store_insert_invalid until
 * store_sweep_batch_commit writes its run in a savepoint inside it. False with
 * STORE_ERROR_FAILED (nothing is open then: the runs are stored one transaction each). */
bool store_sweep_batch_begin(Store *s, GError **error);
/* Commits the batch: every run written since store_sweep_batch_begin is then in the file.
 * False with STORE_ERROR_FAILED: the batch is rolled back, none of its runs is stored. */
bool store_sweep_batch_commit(Store *s, GError **error);

#endif
