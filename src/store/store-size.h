/* src/store/store-size.h — how much time line a run has to write, and the progress of writing
 * it: the types store.h (for the program) and store-ops.h (which counts them) share, apart so
 * that neither of the two includes the other. */
#ifndef SRC_STORE_SIZE_H
#define SRC_STORE_SIZE_H

#include <stdint.h>

/* Told while a run's op records are written: `done` of `total` so far (every 65,536). */
typedef void (*StoreProgressFn)(void *data, uint64_t done, uint64_t total);

/* How much time line a run has to write. */
typedef struct {
    uint64_t records;   /* op records the run made */
    uint64_t timelines; /* distinct time lines among its ranks (0: rows per rank) */
    uint64_t rows;      /* op records to write: those of one rank per time line (fewer rows
                           when the line is stored as segments) */
    uint64_t segmented; /* of the time lines, those stored as segments (each distinct step
                           once, store-segments.h): their rows are not known before */
    uint64_t staged;    /* records staged to the temporary folder (64 B each) */
} StoreTimelinesSize;

#endif
