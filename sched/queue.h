/* sched/queue.h — the event queue: events ordered by (time_ns, seq).
 *
 * The sequence number is assigned by the queue on push from a per-queue counter, so two
 * events with the same time pop in the order they were pushed (libuv orders its timers the
 * same way). That total order is what makes a run deterministic.
 *
 * Layout (issue 29: at 64k ranks a binary heap of one event per rank was half the run): events
 * of equal time are chained in FIFO buckets, and a 4-ary min-heap orders the buckets by (time,
 * creation order). A push appends to the newest bucket of its time when a small direct-mapped
 * cache still knows it, otherwise opens a bucket. Appending only to the newest bucket of a
 * time keeps every event of an older bucket of that time before every event of a newer one,
 * so the pop order is exactly (time, seq) — whatever the cache hits or misses. Ranks running
 * the same ops reach the same times, so the heap holds a handful of buckets where it held one
 * event per rank; with all times distinct it is a 4-ary heap of one-event buckets.
 *
 * Costs: push O(1) into a cached bucket, else O(log4 buckets); pop O(1) unless it empties a
 * bucket, then O(log4 buckets); peek O(1). The arrays double when full and never shrink, and
 * freed events and buckets are reused, so a run allocates only while its pending-event
 * high-water mark grows — never per event in steady state. Events are plain values; the queue
 * owns no pointers.
 */
#ifndef SCHED_QUEUE_H
#define SCHED_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t time_ns; /* simulated time, >= 0 */
    uint64_t seq;    /* assigned by sched_queue_push; ties on time pop in push order */
    uint32_t type;   /* meaning belongs to the caller */
    uint32_t target; /* e.g. a rank or an instance slot */
    uint64_t arg;    /* e.g. a generation counter to detect stale events */
} SchedEvent;

/* Internal: one pending event and the next of its bucket. */
typedef struct {
    SchedEvent ev;
    uint32_t next; /* next event of the bucket, or of the free list; UINT32_MAX ends */
} SchedQueueNode;

/* Internal: events of one time, oldest first. */
typedef struct {
    uint32_t head, tail; /* node indices */
    uint32_t gen;        /* bumped when the bucket empties, so the cache sees it is gone */
    uint32_t next_free;
} SchedQueueBucket;

/* Internal: a heap entry, the bucket's key kept inline so sifting reads no bucket. */
typedef struct {
    int64_t time_ns;
    uint64_t order; /* creation order among buckets */
    uint32_t bucket;
} SchedQueueKey;

/* Internal: the cache slot of a time: its newest bucket while `gen` matches. */
typedef struct {
    int64_t time_ns;
    uint32_t bucket, gen;
} SchedQueueCacheSlot;

#define SCHED_QUEUE_CACHE 256 /* slots; a power of two */

typedef struct {
    SchedQueueNode *nodes;
    uint32_t n_nodes, cap_nodes, free_node;
    SchedQueueBucket *buckets;
    uint32_t n_buckets, cap_buckets, free_bucket;
    SchedQueueKey *heap; /* heap[0]: the bucket that pops first */
    uint32_t heap_len, heap_cap;
    SchedQueueCacheSlot cache[SCHED_QUEUE_CACHE];
    size_t len; /* pending events */
    uint64_t next_seq;
    uint64_t next_order;
} SchedQueue;

/* Initialises an empty queue with room for `initial_cap` events (0 picks a small default). */
void sched_queue_init(SchedQueue *q, size_t initial_cap);
/* Frees the backing arrays; the queue may be re-initialised afterwards. */
void sched_queue_clear(SchedQueue *q);

/* Pushes an event. Returns the seq assigned. */
uint64_t sched_queue_push(SchedQueue *q, int64_t time_ns, uint32_t type, uint32_t target,
                          uint64_t arg);
/* Removes the minimum into *out. Returns false when the queue is empty. */
bool sched_queue_pop(SchedQueue *q, SchedEvent *out);
/* The minimum without removing it, or NULL when empty. Valid until the next push or pop. */
static inline const SchedEvent *sched_queue_peek(const SchedQueue *q)
{
    return q->heap_len ? &q->nodes[q->buckets[q->heap[0].bucket].head].ev : NULL;
}

static inline size_t sched_queue_len(const SchedQueue *q)
{
    return q->len;
}

/* True when a sorts before b. */
static inline bool sched_event_before(const SchedEvent *a, const SchedEvent *b)
{
    return a->time_ns < b->time_ns || (a->time_ns == b->time_ns && a->seq < b->seq);
}

#endif
