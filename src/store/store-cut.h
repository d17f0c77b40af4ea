/* src/store/store-cut.h — a time line cut into segments as its records arrive (schema 12's
 * layout, store-segments.h), for ranks whose first record begins a segment (a model run's
 * steps).
 *
 * Cutting at commit meant staging every record of every step (a 200-request serving run: 1.6
 * million records, 100 MB, for 210 distinct steps) and reading them all back. Here each part's
 * records are made relative to the part as they arrive (idx and times from its first record,
 * each slot's sequence numbers from the one before its first) and follow a chain of prefix
 * nodes that starts again at every part (store-trie.h): a step of a shape seen before meets
 * nodes that exist and stages nothing. A rank keeps the list of its parts (interned: ranks in
 * step share each part's entry), and ranks share a time line when their parts are the same.
 * The rows are those store_segments_add writes for the same records in idx order.
 *
 * Precondition for that: a rank's records arrive in idx order, each part's first record with
 * its least start time and each slot's least sequence number — what the engine gives (a rank
 * runs its ops in order on one stream, sched/engine.h). A rank whose records break it keeps
 * its later records as they came (memory per record) and its time line is cut again at commit
 * in idx order (in the order they came beyond 2^19 records, as before): the same rows, the
 * slow way. Its key is made again then from its records in idx order (store_cut_rekey), so it
 * shares a line with ranks whose records are the same.
 *
 * Not thread-safe: the engine's thread adds, the commit inserts.
 */
#ifndef SRC_STORE_CUT_H
#define SRC_STORE_CUT_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "../../sched/engine.h"
#include "store-hash.h"
#include "store-segments.h"
#include "store-trie.h"

typedef struct StoreCut StoreCut;

/* Records are chained in `trie` (borrowed; shared with the other time lines' records, so node
 * ids are staged record ids). */
StoreCut *store_cut_new(StoreTrie *trie);
void store_cut_free(StoreCut *c);
/* Rank `x->rank`'s next record, its group in slot `slot` (-1: none). True when a record is to
 * be staged: `*node`, the record made relative to its part (group = slot). */
bool store_cut_add(StoreCut *c, const SchedRecord *x, int32_t slot, SchedRecord *node);
/* After the last record: the key of rank `rank`'s time line (its record count `n` given),
 * equal for ranks whose records are equal. */
StoreRunKey store_cut_key(StoreCut *c, uint32_t rank, uint64_t n);
/* A rank whose order broke (its key so far follows the order its records came in): its key
 * made again from its records in idx order, cut as an in-order rank's are, so it equals the
 * key of a rank with the same records that came in order (`nodes` as for store_cut_insert).
 * `*changed` set when the rank was such a one; call store_cut_key again then. False with
 * `error` when the staged nodes do not hold its parts. */
bool store_cut_rekey(StoreCut *c, uint32_t rank, const SchedRecord *nodes, uint64_t n_nodes,
                     bool *changed, GError **error);
/* Progress: told how many records each part held. */
typedef void (*StoreCutTick)(void *data, uint64_t records);
/* Writes rank `rank`'s time line as line `line` through `segs`: its parts, and each new
 * segment's rows read from `nodes` (the staged records, node id = index). */
bool store_cut_insert(StoreCut *c, uint32_t rank, int64_t line, const SchedRecord *nodes,
                      uint64_t n_nodes, StoreSegments *segs, StoreCutTick tick, void *data,
                      GError **error);

#endif
