/* sched/queue.c — binary min-heap of SchedEvent; see queue.h. */
#include "queue.h"

#include <glib.h>

void sched_queue_init(SchedQueue *q, size_t initial_cap)
{
    q->cap = initial_cap ? initial_cap : 64;
    q->heap = g_new(SchedEvent, q->cap);
    q->len = 0;
    q->next_seq = 0;
}

void sched_queue_clear(SchedQueue *q)
{
    g_free(q->heap);
    q->heap = NULL;
    q->len = q->cap = 0;
}

uint64_t sched_queue_push(SchedQueue *q, int64_t time_ns, uint32_t type, uint32_t target,
                          uint64_t arg)
{
    g_assert(time_ns >= 0);
    if (q->len == q->cap) {
        q->cap = q->cap ? q->cap * 2 : 64;
        q->heap = g_renew(SchedEvent, q->heap, q->cap);
    }
    SchedEvent ev = {
        .time_ns = time_ns, .seq = q->next_seq++, .type = type, .target = target, .arg = arg};
    size_t i = q->len++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!sched_event_before(&ev, &q->heap[parent]))
            break;
        q->heap[i] = q->heap[parent];
        i = parent;
    }
    q->heap[i] = ev;
    return ev.seq;
}

bool sched_queue_pop(SchedQueue *q, SchedEvent *out)
{
    if (q->len == 0)
        return false;
    *out = q->heap[0];
    SchedEvent last = q->heap[--q->len];
    size_t n = q->len, i = 0;
    for (;;) {
        size_t l = 2 * i + 1;
        if (l >= n)
            break;
        size_t m = l;
        if (l + 1 < n && sched_event_before(&q->heap[l + 1], &q->heap[l]))
            m = l + 1;
        if (!sched_event_before(&q->heap[m], &last))
            break;
        q->heap[i] = q->heap[m];
        i = m;
    }
    if (n > 0)
        q->heap[i] = last;
    return true;
}

const SchedEvent *sched_queue_peek(const SchedQueue *q)
{
    return q->len ? &q->heap[0] : NULL;
}
