/* src/cli/cmd-sweep-mpi.h — `ranksim sweep --mpi`: the sweep of cmd-sweep.c with its variants
 * computed by MPI processes (src/run/sweep-mpi.h deals them) instead of a thread pool.
 *
 * Every rank parses the same command line; rank 0 opens the database and is its only writer,
 * ranks 1..N-1 compute. A worker loads, simulates and stores its variant exactly as the local
 * sweep does (the same functions, through CliSweepMpiHooks.store) but into a private temporary
 * database, and sends that file's bytes to rank 0, which merges it into the output with
 * store_merge_add (src/store/store-merge.h) in variant order — so run ids, the sweep id and
 * every row (wall-clock columns aside) are those of `ranksim sweep -j 1` of the same variants.
 * With -np 1 rank 0 computes every variant itself, the same way.
 *
 * Rank 0 commits what it merged whenever it has drained the results waiting (at least once a
 * second under a steady stream): a killed job loses at most the runs of the open transaction.
 * SIGINT on rank 0 stops dealing; the variants in flight are awaited and stored, the table is
 * printed and the exit status is 130 as for the local sweep.
 */
#ifndef SRC_CLI_CMD_SWEEP_MPI_H
#define SRC_CLI_CMD_SWEEP_MPI_H

#include "sweep-output.h"

/* What cmd-sweep.c lends the MPI sweep (its static helpers, so the two store and show variants
 * the same way). */
typedef struct {
    /* Stores variant `v` (its sc, res, records, error and work_ms filled as the local worker
     * fills them) into sw->store and fills its summary fields and sw's tallies. */
    void (*store)(CliSweep *sw, CliSweepVariant *v);
    /* The progress line of a variant just stored (v may be NULL: the bar only). */
    void (*progress)(CliSweep *sw, const CliSweepVariant *v);
    /* Removes the progress bar from the terminal before other output. */
    void (*progress_clear)(CliSweep *sw);
    /* The notes and the table; returns the exit status. Frees the variants. */
    int (*finish)(CliSweep *sw, void *data);
    void *data;
} CliSweepMpiHooks;

/* Runs the sweep whose inputs are in `sw` (sw->in, timeline, memory_detail, quiet, db_path,
 * shard set; nothing opened) as this MPI rank. Returns the exit status: the table's on rank 0,
 * 0 on the workers; 2 when this ranksim has no MPI (one line saying what to install) or the
 * database cannot be opened for a user's reason, 1 on an internal error. */
int cli_sweep_mpi(CliSweep *sw, const CliSweepMpiHooks *hooks);

#endif
