/* src/run/sweep-mpi.h — dealing a sweep's variants to MPI processes (`mpirun -np N ranksim
 * sweep --mpi`): rank 0 is the dealer (and, in the command, the single writer), ranks 1..N-1
 * are workers. What a variant's work is and what its result holds is the caller's: this
 * module moves variant indices out and opaque result bytes back, and notices dead workers.
 *
 * Protocol (point-to-point on MPI_COMM_WORLD, MPI_ERRORS_RETURN): a worker asks (READY), gets
 * one variant index (WORK) or STOP; it computes the variant on a thread of its own while its
 * main thread sends ALIVE every SWEEP_MPI_ALIVE_S seconds, then sends the RESULT (which also
 * asks for the next). Variants are dealt in index order, one at a time, as workers ask: a
 * slow variant holds one worker, not a slice of the sweep.
 *
 * Dead workers: Open MPI 4.1 (Debian's) has no fault-tolerant MPI (ULFM came with 5.0), so a
 * peer's death is not an error any call returns; without `mpirun --enable-recovery` mpirun
 * kills the whole job when a process dies. With it the job goes on, and the dealer declares a
 * worker dead when nothing came from it for SWEEP_MPI_DEAD_S seconds while it held a variant;
 * that variant is dealt again (to another worker, or run by rank 0 itself when no worker is
 * left). A worker declared dead that speaks again is alive again; a variant whose result comes
 * twice is delivered once. Rank 0's own death ends the job (mpirun kills it).
 *
 * Threads: MPI_THREAD_FUNNELED — only the calling (main) thread calls MPI; the work function
 * runs on a second thread on workers, on the main thread on rank 0.
 * Costs: a few small messages per variant plus its result; rank 0 polls every millisecond or
 * two while it waits (it does not spin).
 */
#ifndef SRC_RUN_SWEEP_MPI_H
#define SRC_RUN_SWEEP_MPI_H

#include <glib.h>
#include <stdbool.h>

#define SWEEP_MPI_ERROR (sweep_mpi_error_quark())
GQuark sweep_mpi_error_quark(void);

typedef enum {
    SWEEP_MPI_ERROR_UNAVAILABLE, /* built without MPI, or its library cannot be loaded */
    SWEEP_MPI_ERROR_FAILED,      /* MPI_Init_thread failed */
} SweepMpiErrorCode;

/* A busy worker sends ALIVE this often... */
#define SWEEP_MPI_ALIVE_S 1
/* ... and is declared dead after this long without a message: ten missed heartbeats, so a
 * loaded machine (oversubscribed ranks, a busy file system) is not mistaken for a death. */
#define SWEEP_MPI_DEAD_S 10

typedef struct SweepMpi SweepMpi;

/* What the caller does with the variants; `data` is passed to each. */
typedef struct {
    /* Computes variant `index` and returns its result (never NULL; the caller encodes
     * failures in the bytes). Called on a worker thread (workers) or the main thread (rank 0). */
    GBytes *(*work)(guint index, void *data);
    /* Rank 0: the result of variant `index` arrived (each index once, in arrival order).
     * Takes a reference of `result` if it keeps it. */
    void (*result)(guint index, GBytes *result, void *data);
    /* Rank 0, between messages (about every millisecond, and after each result): returns
     * true to stop dealing (Ctrl-C); the variants in flight are still awaited. */
    bool (*poll)(void *data);
    /* Rank 0: `rank` was declared dead while computing variant `index` (dealt again unless
     * its result is in). May be NULL. */
    void (*dead)(int rank, guint index, void *data);
    void *data;
} SweepMpiHandlers;

/* What happened to the workers (for the summary). */
typedef struct {
    guint workers;      /* ranks 1..N-1 */
    guint died;         /* declared dead at some point */
    guint redealt;      /* variants dealt again after a death */
    guint by_rank0;     /* variants rank 0 computed itself (no worker, or none left) */
} SweepMpiStats;

/* true when this ranksim was built with MPI. */
bool sweep_mpi_available(void);
/* Loads MPI's library (mpi-lib.h: only `sweep --mpi` maps it), then MPI_Init_thread (FUNNELED)
 * with MPI_ERRORS_RETURN on MPI_COMM_WORLD. Returns NULL with SWEEP_MPI_ERROR_UNAVAILABLE (the
 * message says what to install) or _FAILED. */
SweepMpi *sweep_mpi_start(int *argc, char ***argv, GError **error);
int sweep_mpi_rank(const SweepMpi *m);
int sweep_mpi_size(const SweepMpi *m);

/* A worker (rank > 0): asks for variants and computes them with h->work until rank 0 says
 * STOP (the other handlers are not used). */
void sweep_mpi_work(SweepMpi *m, const SweepMpiHandlers *h);

/* Rank 0: deals the variants [lo, hi) to the workers and hands each result to h->result;
 * runs h->work itself when there is no worker (-np 1) or none is left alive. Returns when
 * every variant dealt has its result and h->poll stopped the dealing or all were dealt;
 * every worker that is alive has been told to stop. `stats` may be NULL. */
void sweep_mpi_deal(SweepMpi *m, guint lo, guint hi, const SweepMpiHandlers *h,
                    SweepMpiStats *stats);

/* Rank 0 when it cannot run the sweep (e.g. the database would not open): tells every worker
 * to stop without dealing anything. */
void sweep_mpi_stop_all(SweepMpi *m);

/* MPI_Finalize and frees `m` (NULL: nothing). */
void sweep_mpi_finish(SweepMpi *m);

#endif
