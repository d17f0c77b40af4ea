/* sched/queue.c — time buckets of FIFO events under a 4-ary heap; see queue.h. */
#include "queue.h"

#include <glib.h>
#include <string.h>

#define NIL UINT32_MAX

void sched_queue_init(SchedQueue *q, size_t initial_cap)
{
    memset(q, 0, sizeof *q);
    size_t cap = initial_cap ? initial_cap : 64;
    g_assert(cap < NIL);
    q->cap_nodes = (uint32_t)cap;
    q->nodes = g_new(SchedQueueNode, q->cap_nodes);
    q->cap_buckets = q->heap_cap = 64;
    q->buckets = g_new(SchedQueueBucket, q->cap_buckets);
    q->heap = g_new(SchedQueueKey, q->heap_cap);
    q->free_node = q->free_bucket = NIL;
    for (size_t i = 0; i < SCHED_QUEUE_CACHE; i++)
        q->cache[i].bucket = NIL;
}

void sched_queue_clear(SchedQueue *q)
{
    g_free(q->nodes);
    g_free(q->buckets);
    g_free(q->heap);
    memset(q, 0, sizeof *q);
}

static inline bool key_before(const SchedQueueKey *a, const SchedQueueKey *b)
{
    return a->time_ns < b->time_ns || (a->time_ns == b->time_ns && a->order < b->order);
}

static uint32_t node_alloc(SchedQueue *q)
{
    if (q->free_node != NIL) {
        uint32_t i = q->free_node;
        q->free_node = q->nodes[i].next;
        return i;
    }
    if (q->n_nodes == q->cap_nodes) {
        g_assert(q->cap_nodes < NIL / 2);
        q->cap_nodes *= 2;
        q->nodes = g_renew(SchedQueueNode, q->nodes, q->cap_nodes);
    }
    return q->n_nodes++;
}

static uint32_t bucket_alloc(SchedQueue *q)
{
    if (q->free_bucket != NIL) {
        uint32_t b = q->free_bucket;
        q->free_bucket = q->buckets[b].next_free;
        return b;
    }
    if (q->n_buckets == q->cap_buckets) {
        g_assert(q->cap_buckets < NIL / 2);
        q->cap_buckets *= 2;
        q->buckets = g_renew(SchedQueueBucket, q->buckets, q->cap_buckets);
    }
    q->buckets[q->n_buckets].gen = 0;
    return q->n_buckets++;
}

static void heap_insert(SchedQueue *q, SchedQueueKey key)
{
    if (q->heap_len == q->heap_cap) {
        g_assert(q->heap_cap < NIL / 2);
        q->heap_cap *= 2;
        q->heap = g_renew(SchedQueueKey, q->heap, q->heap_cap);
    }
    uint32_t i = q->heap_len++;
    while (i > 0) {
        uint32_t parent = (i - 1) / 4;
        if (!key_before(&key, &q->heap[parent]))
            break;
        q->heap[i] = q->heap[parent];
        i = parent;
    }
    q->heap[i] = key;
}

static void heap_remove_min(SchedQueue *q)
{
    SchedQueueKey last = q->heap[--q->heap_len];
    uint32_t n = q->heap_len, i = 0;
    for (;;) {
        uint32_t c = 4 * i + 1;
        if (c >= n)
            break;
        uint32_t m = c, end = c + 4 < n ? c + 4 : n;
        for (uint32_t k = c + 1; k < end; k++)
            if (key_before(&q->heap[k], &q->heap[m]))
                m = k;
        if (!key_before(&q->heap[m], &last))
            break;
        q->heap[i] = q->heap[m];
        i = m;
    }
    if (n > 0)
        q->heap[i] = last;
}

static inline SchedQueueCacheSlot *cache_slot(SchedQueue *q, int64_t time_ns)
{
    /* Fibonacci hashing: the multiplier is 2^64 / the golden ratio (Knuth, TAOCP vol. 3, 6.4) */
    uint64_t h = (uint64_t)time_ns * 0x9E3779B97F4A7C15ull;
    return &q->cache[h >> (64 - 8)];
}

uint64_t sched_queue_push(SchedQueue *q, int64_t time_ns, uint32_t type, uint32_t target,
                          uint64_t arg)
{
    G_STATIC_ASSERT(SCHED_QUEUE_CACHE == 1u << 8);
    g_assert(time_ns >= 0);
    uint32_t node = node_alloc(q);
    SchedEvent ev = {
        .time_ns = time_ns, .seq = q->next_seq++, .type = type, .target = target, .arg = arg};
    q->nodes[node].ev = ev;
    q->nodes[node].next = NIL;
    q->len++;
    SchedQueueCacheSlot *slot = cache_slot(q, time_ns);
    if (slot->bucket != NIL && slot->time_ns == time_ns &&
        q->buckets[slot->bucket].gen == slot->gen) {
        /* the newest bucket of this time is still pending: join its tail */
        SchedQueueBucket *b = &q->buckets[slot->bucket];
        q->nodes[b->tail].next = node;
        b->tail = node;
        return ev.seq;
    }
    uint32_t b = bucket_alloc(q);
    q->buckets[b].head = q->buckets[b].tail = node;
    *slot = (SchedQueueCacheSlot){.time_ns = time_ns, .bucket = b, .gen = q->buckets[b].gen};
    heap_insert(q, (SchedQueueKey){.time_ns = time_ns, .order = q->next_order++, .bucket = b});
    return ev.seq;
}

bool sched_queue_pop(SchedQueue *q, SchedEvent *out)
{
    if (q->heap_len == 0)
        return false;
    uint32_t bi = q->heap[0].bucket;
    SchedQueueBucket *b = &q->buckets[bi];
    uint32_t node = b->head;
    *out = q->nodes[node].ev;
    b->head = q->nodes[node].next;
    q->nodes[node].next = q->free_node;
    q->free_node = node;
    q->len--;
    if (b->head == NIL) {
        b->gen++; /* any cache slot naming it is stale now */
        b->next_free = q->free_bucket;
        q->free_bucket = bi;
        heap_remove_min(q);
    }
    return true;
}
