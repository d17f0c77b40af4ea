/* src/store/store-segments.h — a time line cut into segments that repeat (schema 12;
 * doc/database.md "Time lines").
 *
 * A served run's rank executes one step after another, and steps of the same shape run the same
 * ops for the same durations: only their start times, op indexes and collective sequence numbers
 * move on. The lowering marks where each step begins (SCHED_OP_FLAG_SEGMENT, carried to the
 * record), and a time line with such marks is stored as
 *   - `timeline_segments`: each distinct segment's rows once, relative to the part (idx and
 *     times from its least, each slot's sequence numbers from its least minus one);
 *   - `timeline_parts`: the line's parts in order, each naming its segment with the idx and the
 *     time it starts at;
 *   - `timeline_part_seqs`: per part, each group slot's sequence number before the part.
 * The `rank_ops` view adds them back together, so every row reads as before. A part is cut at
 * every marked record, whatever the order records come in: the sums give the records back
 * exactly in any case, and in idx order (the usual one) equal steps share one segment.
 * Two parts share a segment when their relative records are equal, decided by a 128-bit hash
 * (store-hash.h), as ranks share a time line.
 *
 * Memory: the current part's records and a key per distinct segment. Not thread-safe.
 */
#ifndef SRC_STORE_SEGMENTS_H
#define SRC_STORE_SEGMENTS_H

#include <glib.h>
#include <sqlite3.h>
#include <stdbool.h>

#include "../../sched/engine.h"
#include "store-hash.h"

typedef struct StoreSegments StoreSegments;

/* NULL with `error` set when the statements cannot be prepared. */
StoreSegments *store_segments_new(sqlite3 *db, const char *path, int64_t run_id, GError **error);
void store_segments_free(StoreSegments *s);
/* The next record of a time line (`rank` holds the line, `group` the slot); a marked record
 * begins a new part. */
bool store_segments_add(StoreSegments *s, const SchedRecord *x, GError **error);
/* Ends the current line: its last part is written. */
bool store_segments_end_line(StoreSegments *s, GError **error);
/* Writes the rows still queued. */
bool store_segments_finish(StoreSegments *s, GError **error);

/* ---- parts cut as their records arrived (store-cut.h) ---- */

/* A group slot's sequence number before a part. */
typedef struct {
    uint32_t slot;
    uint64_t before;
} StoreSeqBase;

/* Queues the rows of new segment `segment` (store_segments_row for each, in order). */
typedef bool (*StoreSegmentRowsFn)(void *data, StoreSegments *s, uint32_t segment,
                                   GError **error);
/* The next part of time line `line`, already cut and made relative: its segment's key (the
 * count and the sums of its relative records' hashes, as store_segments_add computes them),
 * where it starts, and its slots' bases (in slot order). A segment met for the first time has
 * its rows queued by `rows`. The same rows as store_segments_add would write for the part's
 * records. */
bool store_segments_put(StoreSegments *s, int64_t line, const StoreRunKey *key, uint64_t idx0,
                        int64_t t0, const StoreSeqBase *bases, uint32_t n_bases,
                        StoreSegmentRowsFn rows, void *data, GError **error);
/* One row of a segment (`x->rank` holds the segment). */
bool store_segments_row(StoreSegments *s, const SchedRecord *x, GError **error);

#endif
