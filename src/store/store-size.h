/* src/store/store-size.h — how much time line a run has to write, and the progress of writing
 * it: the types store.h (for the program) and store-ops.h (which counts them) share, apart so
 * that neither of the two includes the other. */
#ifndef SRC_STORE_SIZE_H
#define SRC_STORE_SIZE_H

#include <stdint.h>

/* Told while a run's op rows are written: `done` of `total` rows so far (every 65,536). */
typedef void (*StoreProgressFn)(void *data, uint64_t done, uint64_t total);

/* How much time line a run has to write. */
typedef struct {
    uint64_t records;   /* op records the run made */
    uint64_t timelines; /* distinct time lines among its ranks (0: rows per rank) */
    uint64_t rows;      /* op rows to write: the records of one rank per time line */
    uint64_t staged;    /* records staged to the temporary folder (64 B each) */
} StoreTimelinesSize;

#endif
