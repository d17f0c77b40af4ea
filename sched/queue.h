/* sched/queue.h — the event queue: a binary min-heap ordered by (time_ns, seq).
 *
 * The sequence number is assigned by the queue on push from a per-queue counter, so two
 * events with the same time pop in the order they were pushed (libuv orders its timers the
 * same way). That total order is what makes a run deterministic.
 *
 * Costs: push and pop are O(log n); peek is O(1). The backing array doubles when full and never
 * shrinks, so a run allocates only while its pending-event high-water mark grows — never per
 * event in steady state. Events are plain values; the queue owns no pointers.
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

typedef struct {
    SchedEvent *heap; /* heap[0] is the minimum */
    size_t len;
    size_t cap;
    uint64_t next_seq;
} SchedQueue;

/* Initialises an empty queue with room for `initial_cap` events (0 picks a small default). */
void sched_queue_init(SchedQueue *q, size_t initial_cap);
/* Frees the backing array; the queue may be re-initialised afterwards. */
void sched_queue_clear(SchedQueue *q);

/* Pushes a copy of `ev` (its seq field is ignored and overwritten). Returns the seq assigned. */
uint64_t sched_queue_push(SchedQueue *q, int64_t time_ns, uint32_t type, uint32_t target,
                          uint64_t arg);
/* Removes the minimum into *out. Returns false when the queue is empty. */
bool sched_queue_pop(SchedQueue *q, SchedEvent *out);
/* The minimum without removing it, or NULL when empty. Valid until the next push or pop. */
const SchedEvent *sched_queue_peek(const SchedQueue *q);

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
